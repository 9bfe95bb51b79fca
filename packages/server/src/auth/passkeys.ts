import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { recordAudit } from '../audit/audit.js';
import type { Config } from '../config.js';
import { forbidden, refused } from '../core/errors.js';
import { Id, Slug } from '../core/schemas.js';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import type { PasskeyOwner } from '../passkeys/service.js';
import { findUser, type UserRow } from '../users/repo.js';
import { NO_USERNAME, openSession, shutOut, signInGate } from './login.js';
import { sessionSignIn, ssoEnforcement } from './repo.js';
import { setSessionCookie } from './cookies.js';
import { Identity } from './schemas.js';
import { identity } from './service.js';

/** DESIGN.md 21: a member without a password adds a passkey only this soon after the single sign-on that opened its session. */
export const REAUTH_WINDOW_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

const description = 'A signed-in person only: tokens, and platform sessions inside an organisation, get 403 (DESIGN.md 9).';
const reauth =
  'without one, only within 5 minutes of the single sign-on that opened this session, else 403 with `reason` `REAUTH_REQUIRED` (start a sign-in with `prompt=login`).';

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
        startAdding: {
          summary: 'Start adding a passkey',
          description: `${description} With a password, the current one is required (400 when wrong); ${reauth}`,
        },
        add: { summary: 'Add a passkey', description: `${description} ${reauth.replace(/^w/, 'W')}` },
        list: { summary: 'Your passkeys', description },
        delete: { summary: 'Delete one of your passkeys', description },
        startSignIn: {
          summary: 'Start a passkey sign-in',
          description: 'The challenge is single-use, lasts five minutes and belongs to this organisation. 60 a minute per address.',
        },
        signIn: {
          summary: 'Sign in with a passkey',
          description:
            'Sets the session cookie as a password sign-in does. Every failure is the same 401, counted in the sign-in limits. While single sign-on is enabled, a member linked to it whose last single sign-on is older than `LICENSOR_SSO_PASSKEY_DAYS` (default 30) gets that 401 too.',
        },
      },
    },
    book: (request) => ({ realm: `org:${request.org.id}`, orgId: request.org.id }),
    accountId: (request) => member(request).userId,
    account: async (request) => {
      const user = (await findUser(request.ctx.tenant, member(request).userId))!;
      return { id: user.id, username: user.username, displayName: user.display_name, passwordHash: user.password_hash };
    },
    refuseAdding: async (request, account) => {
      if (account.passwordHash !== null) return;
      const session = await sessionSignIn(request.ctx.tenant, member(request).sessionId);
      const now = request.ctx.now;
      if (session?.method !== 'sso' || session.sso_at === null || now - session.sso_at > REAUTH_WINDOW_MS)
        throw refused('sign in again with single sign-on to add a passkey (within 5 minutes of signing in)', 'REAUTH_REQUIRED');
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
      const t = tenant(database.db, request.org.id);
      const user = await findUser(t, userId);
      if (user?.active !== 1 || (await shutOut(database, request.org, user))) return undefined;
      // DESIGN.md 21: while single sign-on is on, a linked member's passkey works only so long after its last SSO sign-in.
      if (user.sso_sub !== null && (await ssoEnforcement(t))?.enabled === 1) {
        if ((user.sso_signed_in_at ?? 0) < Date.now() - config.ssoPasskeyDays * DAY_MS) return undefined;
      }
      return user;
    },
    openSession: async (request, reply, user, now) => {
      const { cookieValue } = await openSession(database, request.org, user, NO_USERNAME, request.ip, now, 'passkey');
      setSessionCookie(reply, config, request.org, cookieValue);
      return identity(request.org, { username: user.username, displayName: user.display_name, role: user.role }, version);
    },
  };
}
