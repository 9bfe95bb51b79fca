import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Nullable, responses } from '../core/schemas.js';
import { LicenceListItem } from '../listings/schemas.js';
import { dashboard, dashboardMetrics } from './service.js';

const tags = ['Dashboard'];
const counts = (keys: readonly string[]) => Type.Object(Object.fromEntries(keys.map((k) => [k, Type.Integer()])));
const Series = Type.Array(Type.Object({ date: Type.String({ description: 'Local date, YYYY-MM-DD.' }), count: Type.Integer() }));

const metricsFields = {
  totals: Type.Object({
    all: Type.Integer(),
    byStatus: counts(['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED']),
    byType: counts(['OFFLINE', 'ONLINE', 'HYBRID']),
  }),
  seatsUsed: Type.Integer(),
  expiring: counts(['d7', 'd30', 'd90']),
  series: Type.Object({ issued: Series, checks: Series }, { description: "The last 30 local dates in the organisation's timezone, oldest first." }),
  plan: Type.Object(
    {
      limit: Nullable(Type.Integer({ description: 'null: unlimited.' })),
      used: Type.Integer({ description: 'Licences counting against the plan (ACTIVE and GRACE).' }),
    },
    { description: "The organisation's plan capacity and its use." },
  ),
  trials: Type.Object(
    {
      active: Type.Integer({ description: 'Non-archived ACTIVE trials.' }),
      started: Series,
      converted: Series,
    },
    {
      description:
        'DESIGN.md 18: trials, which no other figure but series.checks counts: started by trialStartedAt, converted by trialConvertedAt, as series.issued.',
    },
  ),
};
const Metrics = Type.Object(metricsFields, { description: 'Over licences that are not archived.' });
const Dashboard = Type.Object({ ...metricsFields, expiringSoon: Type.Array(LicenceListItem) });

export const dashboardRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/dashboard',
    {
      config: { access: 'analytics:read' },
      schema: { summary: 'Counts, status breakdown, and the 10 licences expiring next', tags, response: responses({ 200: Dashboard }) },
    },
    async (request) => dashboard(request.ctx),
  );
  app.get(
    '/dashboard/metrics',
    {
      config: { access: 'analytics:read' },
      schema: { summary: 'The dashboard figures alone', tags, response: responses({ 200: Metrics }) },
    },
    async (request) => dashboardMetrics(request.ctx),
  );
};
