import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { SCOPES } from '../core/access.js';
import { NoContent, Nullable, NullableTimestamp, responses, Slug, Timestamp } from '../core/schemas.js';
import { createToken, deleteToken, listTokens, revokeToken } from './service.js';

const tags = ['API tokens'];

export const TokenRecord = Type.Object({
  id: Type.String({ description: 'The `<id>` part of `svc_<id>_<secret>`.' }),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  createdAt: Timestamp,
  createdBy: Type.String(),
  expiresAt: NullableTimestamp,
  lastUsedAt: NullableTimestamp,
  revokedAt: NullableTimestamp,
});

const CreatedToken = Type.Intersect([TokenRecord, Type.Object({ token: Type.String({ description: 'The whole token, shown once: nothing stores it.' }) })]);

const TokenParams = Type.Object({ slug: Slug, id: Type.String({ maxLength: 32, pattern: '^[a-z0-9]{12,32}$' }) });

export const tokenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/tokens',
    {
      config: { access: 'admin-session' },
      schema: { summary: "The organisation's API tokens", tags, response: responses({ 200: Type.Array(TokenRecord) }) },
    },
    async (request) => listTokens(request.ctx),
  );

  app.post(
    '/tokens',
    {
      config: { access: 'admin-session' },
      schema: {
        summary: 'Create an API token',
        description: `Scopes: ${SCOPES.map((s) => `\`${s}\``).join(', ')}; \`:write\` implies \`:read\`.`,
        tags,
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' }),
            scopes: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: SCOPES.length, uniqueItems: true }),
            expiresAt: Type.Optional(Nullable(Type.String({ format: 'date-time', maxLength: 40 }))),
          },
          { additionalProperties: false },
        ),
        response: responses({ 201: CreatedToken }, [409]),
      },
    },
    async (request, reply) => reply.code(201).send(await createToken(request.ctx, request.body)),
  );

  app.post(
    '/tokens/:id/revoke',
    {
      config: { access: 'admin-session' },
      schema: {
        summary: 'Revoke an API token',
        description: 'Takes effect on the next request.',
        tags,
        params: TokenParams,
        response: responses({ 200: TokenRecord }),
      },
    },
    async (request) => revokeToken(request.ctx, request.params.id),
  );

  app.delete(
    '/tokens/:id',
    {
      config: { access: 'admin-session' },
      schema: { summary: 'Delete an API token', tags, params: TokenParams, response: responses({ 204: NoContent }) },
    },
    async (request, reply) => {
      await deleteToken(request.ctx, request.params.id);
      return reply.code(204).send();
    },
  );
};
