import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import { Type, type Static } from 'typebox';
import type { Ctx } from '../core/context.js';
import { badRequest } from '../core/errors.js';
import { Id, MAX_ID, Nullable, responses } from '../core/schemas.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { localDate } from '../core/calendar.js';
import { exportLicences } from './export.js';
import { readGroups } from './groups.js';
import { countListing, countWindows, talliedFilter, tallies } from './tallies.js';
import {
  orderedLids,
  pageOfLids,
  parseStatuses,
  readPlan,
  SORTS,
  viewsInOrder,
  WINDOWS,
  type ListingFilter,
  type Position,
} from './listing.js';
import { planSearch } from './search.js';
import { toLicenceListItem } from './repo.js';
import { LicenceListItem } from './schemas.js';

const tags = ['Licences'];

const filterFields = {
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of licensee, email, lid, product name or notes.' })),
  status: Type.Optional(
    Type.Array(Type.String({ maxLength: 100 }), {
      maxItems: 5,
      description: 'One status, a comma list, or the parameter repeated: PENDING, ACTIVE, GRACE, EXPIRED, REVOKED.',
    }),
  ),
  window: Type.Optional(Type.Enum([...WINDOWS], { description: 'Default `all` (archived licences excluded).' })),
  productId: Type.Optional(Id({ description: "Only this product's licences." })),
  customerId: Type.Optional(Id({ description: "Only this customer's licences." })),
  sort: Type.Optional(Type.Enum([...SORTS], { description: 'Default `issuedAt`. Nulls last; ties by lid.' })),
  asc: Type.Optional(Type.Boolean({ description: 'Default false.' })),
};
const PageQuery = Type.Object(
  {
    ...filterFields,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_ID, description: 'Default 0; not with `cursor`.' })),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: "A page's `nextCursor`: the page after it, with the same filters and sort." }),
    ),
  },
  { additionalProperties: false },
);

const LicencePage = Type.Object({
  items: Type.Array(LicenceListItem),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Nullable(Type.Integer({ description: 'null when the page was asked for by `cursor`.' })),
  nextCursor: Nullable(Type.String({ description: 'Opaque: asks for the next page; null on the last page.' })),
});

async function listingFilter(ctx: Ctx, query: Static<typeof PageQuery>): Promise<ListingFilter> {
  return {
    search: query.q ? await planSearch(ctx.tenant, ctx.database.dialect, query.q) : undefined,
    status: parseStatuses(query.status),
    window: query.window ?? 'all',
    productId: query.productId,
    customerId: query.customerId,
    sort: query.sort ?? 'issuedAt',
    asc: query.asc ?? false,
  };
}

/**
 * One page and its total, after the tallies (read first: that brings every stored status to the
 * request's instant). A status or product sort the tallies can count is read group by group
 * (groups.ts). A search the index narrows is read in one query: its few matches are found,
 * counted and sorted together. Otherwise the total comes first (kept or counted) and picks how
 * the page is read.
 */
async function page(ctx: Ctx, query: Static<typeof PageQuery>) {
  const filter = await listingFilter(ctx, query);
  if (query.cursor !== undefined && query.offset !== undefined) throw badRequest('cursor: not together with offset');
  const after = query.cursor === undefined ? undefined : decodeCursor(filter, query.cursor);
  const limit = query.limit ?? 50;
  const offset = after ? null : (query.offset ?? 0);
  let total: number;
  let rows: Array<{ lid: string; sort_key: unknown }>;
  const counts = await tallies(ctx);
  const holds = talliedFilter(filter);
  if (holds && (filter.sort === 'status' || filter.sort === 'product')) {
    total = counts.sum(holds);
    rows = await readGroups(ctx.tenant, filter, ctx.now, { counts, holds }, { skip: offset ?? 0, need: limit + 1, after });
  } else if (filter.search?.trigrams) {
    const counted = await orderedLids(ctx.tenant, filter, ctx.now, 'filter-first', after)
      .select(sql<number>`count(*) over ()`.as('matching'))
      .limit(limit + 1)
      .offset(offset ?? 0)
      .execute();
    // Past the last match, or after a cursor, the rows cannot tell the whole count.
    total = counted.length > 0 && !after ? Number(counted[0]!.matching) : await countListing(ctx, filter, counts);
    rows = counted;
  } else {
    total = await countListing(ctx, filter, counts);
    rows = await pageOfLids(ctx.tenant, filter, ctx.now, readPlan(filter, total), after, limit + 1, offset ?? 0).execute();
  }
  // One row more than the page tells whether a next page exists.
  const last = rows.length > limit ? rows[limit - 1]! : null;
  const views = await viewsInOrder(ctx.tenant, rows.slice(0, limit).map((r) => r.lid), ctx.now);
  return {
    items: views.map((v) => toLicenceListItem(v, ctx.now)),
    total,
    limit,
    offset,
    nextCursor: last && encodeCursor(filter, { key: last.sort_key as Position['key'], lid: last.lid }),
  };
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
        response: responses({ 200: LicencePage }),
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
    async (request) => countWindows(request.ctx),
  );

  app.get(
    '/licenses/export.csv',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: 'The filtered list as CSV',
        description:
          'Same query as the page listing (`limit`, `offset` and `cursor` are accepted and ignored: every matching row is exported). Refused (400) above 25,000 rows rather than truncated.',
        tags,
        querystring: PageQuery,
        response: responses({ 200: { content: { 'text/csv': { schema: Type.String() } } } }),
      },
    },
    async (request, reply) => {
      const { ctx } = request;
      const stream = await exportLicences(ctx, await listingFilter(ctx, request.query));
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="licences-${ctx.org.slug}-${localDate(ctx.now, ctx.org.timezone)}.csv"`)
        .send(stream);
    },
  );
};
