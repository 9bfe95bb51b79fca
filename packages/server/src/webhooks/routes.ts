import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { forbidden } from '../core/errors.js';
import { IdParams, Id, NoContent, Nullable, NullableTimestamp, responses, Slug, Timestamp } from '../core/schemas.js';
import { DELIVERY_STATUSES, listDeliveries, recover, redeliver, sendTest, TESTS_PER_MINUTE } from './deliveries.js';
import { EVENT_TYPES } from '../audit/events.js';
import { createEndpoint, deleteEndpoint, getEndpoint, listEndpoints, rotateSecret, updateEndpoint } from './service.js';

const tags = ['Webhooks'];

const Events = Type.Array(Type.String({ maxLength: 64 }), {
  minItems: 1,
  maxItems: EVENT_TYPES.length,
  uniqueItems: true,
  description: `\`["*"]\` or some of: ${EVENT_TYPES.map((e) => `\`${e}\``).join(', ')}. Each needs the read scope of its resource; \`*\` needs licenses:read, products:read and customers:read and stands for every event whose read scope the saving credential holds, as of that save.`,
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: '`https://`, to a public address (`http://` only to `LICENSOR_WEBHOOK_ALLOW_NETWORKS`).',
});
const Description = Nullable(Type.String({ maxLength: 500 }));

const Endpoint = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  description: Nullable(Type.String()),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Nullable(Type.String()),
  createdAt: Timestamp,
  createdBy: Type.String(),
  updatedAt: Timestamp,
  lastDeliveryAt: NullableTimestamp,
  lastStatus: Nullable(Type.Integer({ description: 'The HTTP status of the last attempt; null when it got none.' })),
  failingSince: NullableTimestamp,
});
const Secret = Type.String({ description: '`whsec_` and base64: shown once, never again.' });
const Attempt = Type.Object({
  at: Timestamp,
  httpStatus: Nullable(Type.Integer()),
  durationMs: Type.Integer(),
  response: Type.String({ description: 'The first 2 KB of the answer.' }),
  error: Nullable(Type.String()),
});
const Queued = Type.Object({ queued: Type.Integer() });
const DeliveryParams = Type.Object({ slug: Slug, id: Id(), eventId: Type.String({ maxLength: 40, pattern: '^msg_[A-Za-z0-9_-]{1,36}$' }) });

export function webhookRoutes(database: Database, config: Config, masterKey: Buffer): FastifyPluginAsyncTypebox {
  const allowed = config.webhookAllowNetworks;
  return async (app) => {
    // DESIGN.md 15: no platform account changes an organisation's webhooks.
    app.addHook('preHandler', async (request) => {
      if (request.method !== 'GET' && request.ctx.actor.kind === 'platform')
        throw forbidden('a platform account may not change webhooks inside an organisation');
    });
    app.get(
      '/webhooks',
      {
        config: { access: 'webhooks:read' },
        schema: { summary: "The organisation's webhook endpoints", tags, response: responses({ 200: Type.Array(Endpoint) }) },
      },
      async (request) => listEndpoints(request.ctx),
    );

    app.post(
      '/webhooks',
      {
        config: { access: 'webhooks:write' },
        schema: {
          summary: 'Add a webhook endpoint',
          description: 'Deliveries follow Standard Webhooks 1.0. The secret is in this answer only.',
          tags,
          body: Type.Object({ url: Url, events: Events, description: Type.Optional(Description) }, { additionalProperties: false }),
          response: responses({ 201: Type.Intersect([Endpoint, Type.Object({ secret: Secret })]) }),
        },
      },
      async (request, reply) => reply.code(201).send(await createEndpoint(request.ctx, masterKey, allowed, request.body)),
    );

    app.get(
      '/webhooks/:id',
      { config: { access: 'webhooks:read' }, schema: { summary: 'One webhook endpoint', tags, params: IdParams, response: responses({ 200: Endpoint }) } },
      async (request) => getEndpoint(request.ctx, request.params.id),
    );

    app.put(
      '/webhooks/:id',
      {
        config: { access: 'webhooks:write' },
        schema: {
          summary: 'Change a webhook endpoint',
          description: 'Changes only the fields the body carries. Enabling clears `disabledReason`.',
          tags,
          params: IdParams,
          body: Type.Object(
            { url: Type.Optional(Url), events: Type.Optional(Events), description: Type.Optional(Description), enabled: Type.Optional(Type.Boolean()) },
            { additionalProperties: false },
          ),
          response: responses({ 200: Endpoint }),
        },
      },
      async (request) => updateEndpoint(request.ctx, allowed, request.params.id, request.body),
    );

    app.delete(
      '/webhooks/:id',
      {
        config: { access: 'webhooks:write' },
        schema: { summary: 'Delete a webhook endpoint', tags, params: IdParams, response: responses({ 204: NoContent }) },
      },
      async (request, reply) => {
        await deleteEndpoint(request.ctx, request.params.id);
        return reply.code(204).send();
      },
    );

    app.post(
      '/webhooks/:id/rotate-secret',
      {
        config: { access: 'webhooks:write' },
        schema: {
          summary: "Rotate a webhook endpoint's secret",
          description: 'The new secret is in this answer only; the previous one also signs for `overlapHours` (a new rotation ends an earlier overlap).',
          tags,
          params: IdParams,
          body: Type.Object({ overlapHours: Type.Optional(Type.Integer({ minimum: 0, maximum: 168, default: 24 })) }, { additionalProperties: false }),
          response: responses({ 200: Type.Object({ secret: Secret, previousValidUntil: NullableTimestamp }) }),
        },
      },
      async (request) => rotateSecret(request.ctx, masterKey, request.params.id, request.body.overlapHours ?? 24),
    );

    app.post(
      '/webhooks/:id/test',
      {
        config: { access: 'webhooks:write' },
        schema: {
          summary: 'Send a test event',
          description: `Sends \`webhook.test\` once (never retried) and answers with the attempt. At most ${TESTS_PER_MINUTE} a minute per endpoint.`,
          tags,
          params: IdParams,
          response: responses({ 200: Type.Object({ eventId: Type.String(), status: Type.String(), attempt: Attempt }) }, [429]),
        },
      },
      async (request) => sendTest(request.ctx, database, masterKey, allowed, app.rateLimits, request.params.id),
    );

    app.get(
      '/webhooks/:id/deliveries',
      {
        config: { access: 'webhooks:read' },
        schema: {
          summary: "A webhook endpoint's deliveries",
          description: 'Newest first, 50 a page, with every attempt. Kept 30 days.',
          tags,
          params: IdParams,
          querystring: Type.Object(
            { status: Type.Optional(Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s)))), cursor: Type.Optional(Type.String({ maxLength: 20 })) },
            { additionalProperties: false },
          ),
          response: responses({
            200: Type.Object({
              items: Type.Array(
                Type.Object({
                  eventId: Type.String(),
                  type: Type.String(),
                  sequence: Nullable(Type.Integer()),
                  createdAt: Timestamp,
                  status: Type.String(),
                  nextAttemptAt: NullableTimestamp,
                  attempts: Type.Array(Attempt),
                }),
              ),
              nextCursor: Nullable(Type.String()),
            }),
          }),
        },
      },
      async (request) => listDeliveries(request.ctx, request.params.id, request.query),
    );

    app.post(
      '/webhooks/:id/deliveries/:eventId/redeliver',
      {
        config: { access: 'webhooks:write' },
        schema: { summary: 'Deliver one event again', tags, params: DeliveryParams, response: responses({ 202: Queued }) },
      },
      async (request, reply) => reply.code(202).send(await redeliver(request.ctx, request.params.id, request.params.eventId)),
    );

    app.post(
      '/webhooks/:id/recover',
      {
        config: { access: 'webhooks:write' },
        schema: {
          summary: 'Deliver again every failed event since a time',
          tags,
          params: IdParams,
          body: Type.Object({ since: Type.String({ format: 'date-time', maxLength: 40 }) }, { additionalProperties: false }),
          response: responses({ 202: Queued }),
        },
      },
      async (request, reply) => reply.code(202).send(await recover(request.ctx, request.params.id, Date.parse(request.body.since))),
    );
  };
}
