import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Schema } from '../../db/schema.js';
import type { Tenant } from '../../db/tenant.js';
import { hiddenColumns, matches, statusIs, visibleColumns } from './pages.js';
import { STATUSES, type ListingFilter, type Position } from '../filter.js';
import type { Counts, TallyKey } from './tallies.js';

/*
 * The status and product sorts, read group by group (issue 15). Neither key is in an index (a
 * status moves with the clock; a product's name is in another table), so a page sorted by either
 * used to sort every match. But each has few values: walking them in order, and within each the
 * licences in lid order through an index, a page reads little more than it returns. The tallies
 * say how many licences each group holds, so an offset skips whole groups unread.
 */

type Eb = ExpressionBuilder<Schema, 'licences'>;

interface Group {
  /** The page's sort key for the group's rows: the status rank, or the product name. */
  key: number | string;
  /** `walk`: the test must leave the lid index to serve the page. */
  holds: (eb: Eb, walk: boolean) => Expression<SqlBool>;
  count: number;
  /** Where the group lies from a cursor: wholly before it, holding it, or after it. */
  place: 'before' | 'at' | 'after';
}

/** A group up to this size is read whole and sorted; a larger one is walked in lid order. */
const READ_WHOLE_UP_TO = 20_000;

function statusGroups(filter: ListingFilter, counts: Counts, holds: (k: TallyKey) => boolean, after?: Position): Group[] {
  const ranks = STATUSES.map((_, rank) => rank);
  if (!filter.asc) ranks.reverse();
  const cursorRank = after && Number(after.key);
  return ranks.map((rank) => ({
    key: rank,
    holds: (_, walk) => statusIs([STATUSES[rank]!], walk),
    count: counts.sum((k) => holds(k) && k.status === STATUSES[rank]),
    place: cursorRank === undefined || (filter.asc ? rank > cursorRank : rank < cursorRank) ? 'after' : rank === cursorRank ? 'at' : 'before',
  }));
}

/** Products in name order, as the database collates; products sharing a name are one group. */
async function productGroups(t: Tenant, filter: ListingFilter, counts: Counts, holds: (k: TallyKey) => boolean, after?: Position): Promise<Group[]> {
  const cursorName = after && String(after.key);
  const products = await t
    .selectFrom('products')
    .select(['products.id', 'products.name'])
    .select(
      cursorName === undefined ? sql<boolean>`true`.as('beyond') : sql<boolean>`products.name ${sql.raw(filter.asc ? '>' : '<')} ${cursorName}`.as('beyond'),
    )
    .orderBy('products.name', filter.asc ? 'asc' : 'desc')
    .execute();
  const groups: Array<Group & { ids: number[] }> = [];
  for (const product of products) {
    const id = Number(product.id);
    const count = counts.sum((k) => holds(k) && k.productId === id);
    const last = groups.at(-1);
    if (last && last.key === product.name) {
      last.ids.push(id);
      last.count += count;
      continue;
    }
    const ids = [id];
    const place = product.name === cursorName ? 'at' : product.beyond ? 'after' : 'before';
    groups.push({ key: product.name, ids, holds: (eb) => eb('licences.product_id', 'in', ids), count, place });
  }
  return groups;
}

/**
 * `need` rows of a status- or product-sorted listing, after skipping `skip` (or after the
 * cursor), with their sort keys.
 */
export async function readGroups(
  t: Tenant,
  filter: ListingFilter,
  now: number,
  tallied: { counts: Counts; holds: (k: TallyKey) => boolean },
  window: { skip: number; need: number; after?: Position | undefined },
): Promise<Array<{ lid: string; sort_key: number | string }>> {
  const { counts, holds } = tallied;
  const { after } = window;
  const groups = filter.sort === 'status' ? statusGroups(filter, counts, holds, after) : await productGroups(t, filter, counts, holds, after);
  // A status group's own test implies the filter's statuses (the tallies counted only those), and
  // asking for them again would tempt the planner from the lid index.
  const within: ListingFilter =
    filter.sort === 'status'
      ? { ...filter, status: undefined, window: filter.window === 'grace' || filter.window === 'expired' ? 'all' : filter.window }
      : filter;
  let { skip, need } = window;
  const rows: Array<{ lid: string; sort_key: number | string }> = [];
  for (const group of groups) {
    if (need === 0) break;
    if (group.place === 'before' || group.count === 0) continue;
    if (skip >= group.count) {
      skip -= group.count;
      continue;
    }
    const walk = group.count > READ_WHOLE_UP_TO;
    const found = await t
      .selectFrom('licences')
      .select('licences.lid')
      .where(matches(within, now, walk ? hiddenColumns : visibleColumns))
      .where((eb) => group.holds(eb, walk))
      .$if(group.place === 'at', (q) => q.where('licences.lid', filter.asc ? '>' : '<', after!.lid))
      // Hiding lid from its index makes the planner read the small group whole.
      .orderBy(walk ? sql`licences.lid` : sql`(licences.lid || '')`, filter.asc ? 'asc' : 'desc')
      .limit(need)
      .offset(skip)
      .execute();
    rows.push(...found.map((r) => ({ lid: r.lid, sort_key: group.key })));
    need -= found.length;
    skip = 0;
  }
  return rows;
}
