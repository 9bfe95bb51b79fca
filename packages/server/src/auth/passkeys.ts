import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { recordAudit } from '../audit/audit.js';
import type { Config } from '../config.js';
import { forbidden } from '../core/errors.js';
import { Id, Slug } from '../core/schemas.js';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import type { PasskeyOwner } from '../passkeys/service.js';
import { findUser, type UserRow } from '../users/repo.js';
import { NO_USERNAME, openSession, shutOut, signInGate } from './login.js';
import { setSessionCookie } from './cookies.js';
import { Identity } from './schemas.js';
import { identity } from './service.js';

const description = 'A signed-in person only: tokens, and platform sessions inside an organisation, get 403 (DESIGN.md 9).';

/** Who may manage passkeys here: a signed-in member, never a token or a platform session. */
function member(request: FastifyRequest) {
  const { actor } = request.ctx;
  if (actor.kind !== 'user') throw forbidden('only a signed-in member manages passkeys here');
  return actor;
}

/** DESIGN.md 9 for an organisation's members, under `/o/{slug}/api/auth/`. */
export function memberPasskeys(database: Database, config: Config, version: string): PasskeyOwner<UserRow> {
  return {
    routes: {
      manage: { access: 'session' },
      signIn: { access: 'public' },
      passkeyParams: Type.Object({ slug: Slug, id: Id() }),
      identity: Identity,
      docs: {
        startAdding: { summary: 'Start adding a passkey', description: `${description} With a password, the current one is required (400 when wrong).` },
        add: { summary: 'Add a passkey', description },
        list: { summary: 'Your passkeys', description },
        delete: { summary: 'Delete one of your passkeys', description },
        startSignIn: {
          summary: 'Start a passkey sign-in',
          description: 'The challenge is single-use, lasts five minutes and belongs to this organisation. 60 a minute per address.',
        },
        signIn: {
          summary: 'Sign in with a passkey',
          description: 'Sets the session cookie as a password sign-in does. Every failure is the same 401, counted in the sign-in limits.',
        },
      },
    },
    book: (request) => ({ realm: `org:${request.org.id}`, orgId: request.org.id }),
    accountId: (request) => member(request).userId,
    account: async (request) => {
      const user = (await findUser(request.ctx.tenant, member(request).userId))!;
      return { id: user.id, username: user.username, displayName: user.display_name, passwordHash: user.password_hash };
    },
    now: (request) => request.ctx.now,
    audit: async (db, request, action, name) => {
      const actor = member(request);
      const summary = action === 'passkey.registered' ? `${actor.name} added passkey “${name}”` : `${actor.name} deleted passkey “${name}”`;
      await recordAudit(tenant(db, request.org.id), request.ctx, { action, subjectType: 'user', subjectId: actor.userId, summary });
    },
    refuseSignIn: (request) => {
      if (request.org.suspended) throw forbidden('organisation suspended');
    },
    signInGate: (request, now) => signInGate(database, config, request.org, NO_USERNAME, request.ip, now),
    signingIn: async (request, userId) => {
      const user = await findUser(tenant(database.db, request.org.id), userId);
      return user?.active === 1 && !(await shutOut(database, request.org, user)) ? user : undefined;
    },
    openSession: async (request, reply, user, now) => {
      const { cookieValue } = await openSession(database, request.org, user, NO_USERNAME, request.ip, now, 'passkey');
      setSessionCookie(reply, config, request.org, cookieValue);
      return identity(request.org, { username: user.username, displayName: user.display_name, role: user.role }, version);
    },
  };
}
