import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { NoContent, responses } from '../core/schemas.js';
import { Password } from '../users/schemas.js';
import { clearSessionCookie, setSessionCookie } from './cookies.js';
import { SESSION_COOKIE } from './credentials.js';
import { login } from './login.js';
import { Identity } from './schemas.js';
import { changeOwnPassword, identity, signOut, whoIs } from './service.js';

const tags = ['Auth'];

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
        await signOut(request.ctx);
        clearSessionCookie(reply, request.org);
        return reply.code(204).send();
      },
    );

    app.get(
      '/auth/me',
      {
        config: { access: 'member' },
        schema: { summary: 'Who this credential is', tags, response: responses({ 200: Identity }) },
      },
      async (request) => whoIs(request.ctx, version),
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
        await changeOwnPassword(request.ctx, request.body.currentPassword, request.body.newPassword, config.dataDir);
        return reply.code(204).send();
      },
    );
  };
}
