import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { badRequest, forbidden } from '../http/errors.js';
import { inTransaction } from '../http/context.js';
import type { Organisation } from '../orgs/repo.js';
import { NoContent, responses } from '../http/schemas.js';
import { endSessions, findUser } from '../users/repo.js';
import { Password } from '../users/schemas.js';
import { recordAudit } from '../audit/audit.js';
import { SESSION_COOKIE, SESSION_LIFETIME_MS } from './credentials.js';
import { login } from './login.js';
import { hashPassword, verifyPassword } from './secrets.js';
import { retireInitialPassword } from '../orgs/initial-password.js';

const tags = ['Auth'];

export const Identity = Type.Object({
  username: Type.String({ description: 'A token appears as `token/<name>`.' }),
  displayName: Type.String(),
  role: Type.String({ description: '`VIEWER`, `ISSUER`, `ORG_ADMIN`, or `TOKEN` for an API token.' }),
  platform: Type.Boolean(),
  platformRole: Type.Optional(Type.String()),
  version: Type.String(),
  organization: Type.Object({ slug: Type.String(), name: Type.String() }),
  tenant: Type.Union([Type.String(), Type.Null()]),
});

export function identity(org: Organisation, who: { username: string; displayName: string; role: string; platformRole?: string }, version: string) {
  return {
    ...who,
    platform: who.platformRole !== undefined,
    version,
    organization: { slug: org.slug, name: org.name },
    tenant: org.slug,
  };
}

// One browser may be signed in to several organisations side by side (DESIGN.md 4).
const cookiePath = (org: Organisation) => `/o/${org.slug}/`;

/** Sets a new session's cookie, the same for a password and a passkey sign-in. */
export function setSessionCookie(reply: FastifyReply, config: Pick<Config, 'publicUrl'>, org: Organisation, value: string) {
  reply.setCookie(SESSION_COOKIE, value, {
    path: cookiePath(org),
    httpOnly: true,
    sameSite: 'strict',
    secure: config.publicUrl.startsWith('https:'),
    maxAge: SESSION_LIFETIME_MS / 1000,
  });
}

export function authRoutes(database: Database, config: Config, version: string): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/auth/login',
      {
        config: { access: 'public' },
        schema: {
          summary: 'Sign in',
          description: `Sets the \`${SESSION_COOKIE}\` session cookie. A missing user, a wrong password and a disabled account all give the same 401; a suspended organisation 403.`,
          tags,
          body: Type.Object(
            { username: Type.String({ minLength: 1, maxLength: 200 }), password: Type.String({ minLength: 1, maxLength: 1024 }) },
            { additionalProperties: false },
          ),
          response: responses({ 200: Identity }, [403, 429]),
        },
      },
      async (request, reply) => {
        const { cookieValue, user } = await login(database, config, request.org, request.body, request.ip);
        setSessionCookie(reply, config, request.org, cookieValue);
        return identity(request.org, { username: user.username, displayName: user.display_name, role: user.role }, version);
      },
    );

    app.post(
      '/auth/logout',
      {
        config: { access: 'session' },
        schema: { summary: 'Sign out: ends this session', tags, response: responses({ 204: NoContent }) },
      },
      async (request, reply) => {
        const { ctx } = request;
        if (ctx.actor.kind === 'user') await ctx.tenant.deleteFrom('sessions').where('id', '=', ctx.actor.sessionId).execute();
        reply.clearCookie(SESSION_COOKIE, { path: cookiePath(request.org) });
        return reply.code(204).send();
      },
    );

    app.get(
      '/auth/me',
      {
        config: { access: 'member' },
        schema: { summary: 'Who this credential is', tags, response: responses({ 200: Identity }) },
      },
      async (request) => {
        const { actor, org } = request.ctx;
        const who =
          actor.kind === 'user'
            ? { username: actor.name, displayName: actor.displayName, role: actor.role }
            : actor.kind === 'platform'
              ? { username: actor.name, displayName: actor.displayName, role: actor.role, platformRole: actor.platformRole }
              : { username: actor.name, displayName: actor.kind === 'token' ? actor.tokenName : actor.name, role: 'TOKEN' };
        return identity(org, who, version);
      },
    );

    app.put(
      '/auth/password',
      {
        config: { access: 'session' },
        schema: {
          summary: 'Change your own password',
          description: 'Ends your other sessions; this one stays signed in.',
          tags,
          body: Type.Object({ currentPassword: Type.String({ minLength: 1, maxLength: 1024 }), newPassword: Password }, { additionalProperties: false }),
          response: responses({ 204: NoContent }),
        },
      },
      async (request, reply) => {
        const { ctx } = request;
        if (ctx.actor.kind === 'platform') throw forbidden('a platform account changes its password with the CLI, not inside an organisation');
        if (ctx.actor.kind !== 'user') throw badRequest('only a signed-in person has a password');
        const { userId, sessionId } = ctx.actor;
        const user = (await findUser(ctx.tenant, userId))!;
        if (!(await verifyPassword(request.body.currentPassword, user.password_hash))) {
          throw badRequest('currentPassword is wrong');
        }
        const hash = await hashPassword(request.body.newPassword);
        await inTransaction(ctx, async (t) => {
          await t.updateTable('users').set({ password_hash: hash }).where('id', '=', userId).execute();
          await endSessions(t, userId, sessionId);
          await recordAudit(t, ctx.actor.name, ctx.now, {
            action: 'user.password_changed',
            subjectType: 'user',
            subjectId: userId,
            summary: `${user.username} changed their password`,
          });
        });
        await retireInitialPassword(config.dataDir, user.password_hash);
        return reply.code(204).send();
      },
    );
  };
}
