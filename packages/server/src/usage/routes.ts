import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Id, Nullable, NullableTimestamp, responses, Timestamp } from '../core/schemas.js';
import { idempotentRequest, Replay } from '../licences/idempotency.js';
import { LidParams } from '../licences/schemas.js';
import { adjustUsage, dashboardUsage, readUsage } from './operator.js';

const Period = Type.Enum(['NONE', 'DAY', 'MONTH', 'YEAR']);
const Count = Nullable(Type.Integer());
const MeterBalance = Type.Object({
  key: Type.String(),
  label: Type.String(),
  period: Period,
  periodKey: Type.String({ description: '`YYYY-MM-DD`, `YYYY-MM`, `YYYY` or `NONE`: the period the counts belong to, in the organisation’s timezone.' }),
  used: Type.Integer(),
  limit: Count,
  overage: Count,
  remaining: Nullable(Type.Integer({ description: '`limit + overage − used`, at least 0; null without a ceiling.' })),
  periodStart: NullableTimestamp,
  resetsAt: NullableTimestamp,
});
const Usage = Type.Object({
  lid: Type.String(),
  meters: Type.Array(MeterBalance),
  events: Type.Array(
    Type.Object({
      id: Nullable(Type.String({ description: "The application's event id; null for an adjustment." })),
      meter: Type.String(),
      amount: Type.Integer(),
      at: NullableTimestamp,
      receivedAt: Timestamp,
      result: Type.String({ description: 'ACCEPTED or LIMIT_REACHED (an adjustment: ACCEPTED).' }),
      source: Type.Enum(['application', 'operator']),
      machineId: Nullable(Type.Integer()),
      actor: Type.String(),
      reason: Nullable(Type.String()),
    }),
    { description: 'The 50 newest recorded events and adjustments, newest first.' },
  ),
});
const AdjustBody = Type.Object(
  {
    meter: Type.String({ maxLength: 64, description: 'One of the licence’s meter keys.' }),
    amount: Type.Integer({
      minimum: -1_000_000_000_000,
      maximum: 1_000_000_000_000,
      description: 'Non-zero: added to the current period’s `used`; negative is a credit.',
    }),
    reason: Type.String({ minLength: 1, maxLength: 500, description: 'Why, for the activity trail; not blank.' }),
  },
  { additionalProperties: false },
);
const IdempotencyHeader = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ maxLength: 255, description: 'Repeats within 24 hours return the first answer and change nothing.' })),
});
const DashboardQuery = Type.Object(
  {
    productId: Type.Optional(Id({ description: 'Only this product’s meters.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: 'Licences per meter; default 10.' })),
  },
  { additionalProperties: false },
);
const TopConsumers = Type.Object({
  meters: Type.Array(
    Type.Object({
      productId: Type.Integer(),
      productKey: Type.String(),
      key: Type.String(),
      label: Type.String(),
      period: Period,
      periodStart: NullableTimestamp,
      resetsAt: NullableTimestamp,
      top: Type.Array(Type.Object({ lid: Type.String(), licensee: Type.String(), used: Type.Integer(), limit: Count, overage: Count, remaining: Count })),
    }),
  ),
});

/** DESIGN.md 19's Management API: a licence's usage, adjustments, and the dashboard's top consumers. */
export const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/licenses/:lid/usage',
    {
      config: { access: 'licenses:read' },
      schema: { summary: 'A licence’s usage: balances and recent events', tags: ['Usage'], params: LidParams, response: responses({ 200: Usage }) },
    },
    async (request) => readUsage(request.ctx, request.params.lid),
  );
  app.post(
    '/licenses/:lid/usage/adjust',
    {
      config: { access: 'licenses:write' },
      schema: {
        summary: 'Credit or debit a meter this period',
        description:
          'DESIGN.md 19: adds `amount` to the current period’s `used` (it may pass the ceiling, never fall below 0), audited as `usage.adjusted`. 400 for an archived licence or a meter the licence lacks. Answers the usage read.',
        tags: ['Usage'],
        params: LidParams,
        headers: IdempotencyHeader,
        body: AdjustBody,
        response: responses({ 200: Usage }, [409]),
      },
    },
    async (request, reply) => {
      const idem = idempotentRequest(request.headers['idempotency-key'], `usage.adjust ${request.params.lid}`, request.body);
      const result = await adjustUsage(request.ctx, request.params.lid, request.body, idem);
      return result instanceof Replay ? reply.code(result.status).send(result.body) : result;
    },
  );
  app.get(
    '/dashboard/usage',
    {
      config: { access: 'analytics:read' },
      schema: {
        summary: 'Top consumers of each meter this period',
        description:
          'Each meter the products declare now, with the non-archived licences that used it most in the current period (used > 0, most first, then by lid).',
        tags: ['Dashboard'],
        querystring: DashboardQuery,
        response: responses({ 200: TopConsumers }),
      },
    },
    async (request) => dashboardUsage(request.ctx, request.query),
  );
};
