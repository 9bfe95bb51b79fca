import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Nullable, PageQuery, Paged, responses, Timestamp } from '../core/schemas.js';
import { listAudit } from './service.js';

export const AuditEntry = Type.Object({
  id: Type.Integer(),
  at: Timestamp,
  actor: Type.String({ description: 'A username, `token/<name>`, or `check`.' }),
  action: Type.String({ description: 'Dotted name, e.g. `licence.issued`.' }),
  subjectType: Type.String(),
  subjectId: Nullable(Type.String()),
  lid: Nullable(Type.String()),
  summary: Type.String(),
  details: Nullable(Type.Object({}, { additionalProperties: true })),
});

/** The two activity listings' query: a page, narrowed by exact action and actor. */
export const ActivityQuery = Type.Object(
  {
    ...PageQuery.properties,
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Exact action, e.g. `licence.revoked`.' })),
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Exact actor, e.g. `admin` or `token/ci`.' })),
  },
  { additionalProperties: false },
);

export const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/dashboard/activity',
    {
      config: { access: 'activity:read' },
      schema: {
        summary: "The organisation's audit trail, newest first",
        tags: ['Dashboard'],
        querystring: ActivityQuery,
        response: responses({ 200: Paged(AuditEntry) }),
      },
    },
    async (request) => listAudit(request.ctx.tenant, request.query),
  );
};
