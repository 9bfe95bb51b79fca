import type { Static } from 'typebox';
import type { Ctx } from '../core/context.js';
import { badRequest } from '../core/errors.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { parseStatuses, WINDOWS, type ListingFilter, type Position, type Window } from './filter.js';
import { readGroups } from './repos/groups.js';
import { countedPage, pageOfLids, readPlan } from './repos/pages.js';
import { planSearch } from './repos/search.js';
import { countExpiring, countListing, talliedFilter, tallies, WINDOW_KEYS } from './repos/tallies.js';
import { toLicenceListItem, viewsInOrder } from './repos/views.js';
import type { ListingQuery } from './schemas.js';

/** A listing's query as the filter the repos read. */
export async function listingFilter(ctx: Ctx, query: Static<typeof ListingQuery>): Promise<ListingFilter> {
  return {
    search: query.q ? await planSearch(ctx.tenant, ctx.database.dialect, query.q) : undefined,
    status: parseStatuses(query.status),
    window: query.window ?? 'all',
    productId: query.productId,
    customerId: query.customerId,
    trial: query.trial,
    sort: query.sort ?? 'issuedAt',
    asc: query.asc ?? false,
  };
}

/**
 * One page and its total, after the tallies (read first: that brings every stored status to the
 * request's instant). A status or product sort the tallies can count is read group by group
 * (repos/groups.ts). A search the index narrows is read in one query: its few matches are found,
 * counted and sorted together. Otherwise the total comes first (kept or counted) and picks how
 * the page is read.
 */
export async function listingPage(ctx: Ctx, query: Static<typeof ListingQuery>) {
  const filter = await listingFilter(ctx, query);
  if (query.cursor !== undefined && query.offset !== undefined) throw badRequest('Query parameter "cursor": not together with "offset"');
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
    const counted = await countedPage(ctx.tenant, filter, ctx.now, after, limit + 1, offset ?? 0);
    // Past the last match, or after a cursor, the rows cannot tell the whole count.
    total = counted.length > 0 && !after ? Number(counted[0]!.matching) : await countListing(ctx, filter, counts);
    rows = counted;
  } else {
    total = await countListing(ctx, filter, counts);
    rows = await pageOfLids(ctx.tenant, filter, ctx.now, readPlan(filter, total), after, limit + 1, offset ?? 0);
  }
  // One row more than the page tells whether a next page exists.
  const last = rows.length > limit ? rows[limit - 1]! : null;
  const views = await viewsInOrder(
    ctx.tenant,
    rows.slice(0, limit).map((r) => r.lid),
    ctx.now,
  );
  return {
    items: views.map((v) => toLicenceListItem(v, ctx.now)),
    total,
    limit,
    offset,
    nextCursor: last && encodeCursor(filter, { key: last.sort_key as Position['key'], lid: last.lid }),
  };
}

/** How many licences each window holds. */
export async function countWindows(ctx: Ctx): Promise<Record<Window, number>> {
  const [counts, expiring] = await Promise.all([tallies(ctx), countExpiring(ctx.tenant, ctx.now)]);
  return Object.fromEntries(WINDOWS.map((w) => [w, WINDOW_KEYS[w] ? counts.sum(WINDOW_KEYS[w]) : expiring[w as keyof typeof expiring]])) as Record<
    Window,
    number
  >;
}
