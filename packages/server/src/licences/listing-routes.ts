import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { Ctx } from '../http/context.js';
import { Paged, responses } from '../http/schemas.js';
import { localDate } from './calendar.js';
import { exportLicences } from './export.js';
import { countMatching, countWindows, orderedLids, parseStatuses, readPlan, SORTS, viewsInOrder, WINDOWS, type ListingFilter } from './listing.js';
import { toLicenceListItem } from './repo.js';
import { LicenceListItem } from './schemas.js';

const tags = ['Licences'];

const filterFields = {
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of licensee, email, lid, product name or notes.' })),
  status: Type.Optional(Type.String({ maxLength: 100, description: 'One status or a comma list: PENDING, ACTIVE, GRACE, EXPIRED, REVOKED.' })),
  window: Type.Optional(Type.Enum([...WINDOWS], { description: 'Default `all` (archived licences excluded).' })),
  sort: Type.Optional(Type.Enum([...SORTS], { description: 'Default `issuedAt`. Nulls last; ties by lid.' })),
  asc: Type.Optional(Type.Boolean({ description: 'Default false.' })),
};
const FilterQuery = Type.Object(filterFields, { additionalProperties: false });
const PageQuery = Type.Object(
  {
    ...filterFields,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  },
  { additionalProperties: false },
);

function listingFilter(ctx: Ctx, query: Static<typeof FilterQuery>): ListingFilter {
  return {
    q: query.q || undefined,
    fts: ctx.database.dialect === 'sqlite',
    status: parseStatuses(query.status),
    window: query.window ?? 'all',
    sort: query.sort ?? 'issuedAt',
    asc: query.asc ?? false,
  };
}

async function page(ctx: Ctx, query: Static<typeof PageQuery>) {
  const filter = listingFilter(ctx, query);
  const limit = query.limit ?? 50;
  const offset = query.offset ?? 0;
  const total = await countMatching(ctx.tenant, filter, ctx.now);
  const rows = await orderedLids(ctx.tenant, filter, ctx.now, readPlan(filter, total)).limit(limit).offset(offset).execute();
  const views = await viewsInOrder(ctx.tenant, rows.map((r) => r.lid));
  return { items: views.map((v) => toLicenceListItem(v, ctx.now)), total, limit, offset };
}

export const listingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/licenses/page',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: 'One page of licences, filtered and sorted in the database, with the matching total',
        tags,
        querystring: PageQuery,
        response: responses({ 200: Paged(LicenceListItem) }),
      },
    },
    async (request) => page(request.ctx, request.query),
  );

  app.get(
    '/licenses/windows',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: 'How many licences fall in each expiry window',
        tags,
        response: responses({ 200: Type.Object(Object.fromEntries(WINDOWS.map((w) => [w, Type.Integer()]))) }),
      },
    },
    async (request) => countWindows(request.ctx.tenant, request.ctx.now),
  );

  app.get(
    '/licenses/export.csv',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: 'The filtered list as CSV',
        description: 'Same filters and sort as the page listing. Refused (400) above 25,000 rows rather than truncated.',
        tags,
        querystring: FilterQuery,
        response: responses({ 200: { content: { 'text/csv': { schema: Type.String() } } } }),
      },
    },
    async (request, reply) => {
      const { ctx } = request;
      const stream = await exportLicences(ctx, listingFilter(ctx, request.query));
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="licences-${ctx.org.slug}-${localDate(ctx.now, ctx.org.timezone)}.csv"`)
        .send(stream);
    },
  );
};
