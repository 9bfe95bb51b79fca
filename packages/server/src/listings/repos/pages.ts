import { sql, type ExpressionBuilder, type Expression, type SqlBool, type RawBuilder } from 'kysely';
import { substringPattern, type DialectName } from '../../db/database.js';
import { STATUSES, type ListingFilter, type Position, type SortKey, type Window } from '../filter.js';
import type { Schema } from '../../db/schema.js';
import type { Tenant } from '../../db/tenant.js';
import { DAY_MS, type LicenceStatus } from '../status.js';

type Eb = ExpressionBuilder<Schema, 'licences'>;

/*
 * Statuses (DESIGN.md 3) are judged by each licence's stored rank, which tallies.ts keeps true at
 * the clock's instant; every listing reads the tallies first, which moves the clock to the
 * request's instant when any licence crossed a boundary since. So a status is one indexed value.
 *
 * `Columns` decides how the calendar columns are referenced. Counting wants them visible, so a
 * covering index answers; a sorted page wants them hidden (`+column`, a no-op on both dialects),
 * so the planner walks the sort's index and stops after one page instead of sorting every match.
 */
type CalendarColumn = 'revoked' | 'expires_at';
export type Columns = (column: CalendarColumn) => Expression<number | null>;

export const visibleColumns: Columns = (column) => sql.ref<number | null>(`licences.${column}`);
export const hiddenColumns: Columns = (column) => sql<number | null>`+${sql.ref(`licences.${column}`)}`;

/** Licences in one of `statuses`; `hidden` keeps the status index from serving the test. */
export function statusIs(statuses: readonly LicenceStatus[], hidden = false): RawBuilder<SqlBool> {
  const ranks = statuses.map((s) => STATUSES.indexOf(s));
  const rank = hidden ? sql`+licences.status_rank` : sql`licences.status_rank`;
  return ranks.length === 1 ? sql<SqlBool>`${rank} = ${ranks[0]}` : sql<SqlBool>`${rank} in (${sql.join(ranks)})`;
}

/** Window membership (DESIGN.md 4); every window but `archived` leaves archived licences out. */
export function windowIs(eb: Eb, window: Window, now: number, c: Columns = visibleColumns): Expression<SqlBool> {
  if (window === 'archived') return eb('licences.archived', '=', 1);
  const filed = eb('licences.archived', '=', 0);
  switch (window) {
    case 'all':
      return filed;
    case 'grace':
      return eb.and([filed, statusIs(['GRACE'])]);
    case 'expired':
      return eb.and([filed, statusIs(['EXPIRED'])]);
    case 'perpetual':
      return eb.and([filed, eb(c('expires_at'), 'is', null)]);
    default: {
      const days = Number(window.slice(0, -1));
      return eb.and([filed, eb(c('revoked'), '=', 0), eb(c('expires_at'), '>', now), eb(c('expires_at'), '<=', now + days * DAY_MS)]);
    }
  }
}

/** The status at `now` from the calendar columns, as a rank in STATUSES' order (what status_rank stores). */
export function statusRank(now: number): RawBuilder<number> {
  return sql<number>`case
    when licences.revoked = 1 then 4
    when licences.starts_at > ${now} then 0
    when licences.expires_at is null or licences.expires_at > ${now} then 1
    when licences.grace_ends_at > ${now} then 2
    else 3 end`;
}

export function sortExpression(sort: SortKey): RawBuilder<unknown> {
  switch (sort) {
    case 'issuedAt':
      return sql`licences.issued_at`;
    case 'expiresAt':
      return sql`licences.expires_at`;
    case 'licensee':
      // Served by an index on lower(licensee): `apple` sorts beside `Apple`.
      return sql`lower(licences.licensee)`;
    case 'status':
      return sql`licences.status_rank`;
    case 'product':
      return sql`products.name`;
    case 'lastCheckedAt':
      // Kept apart from the licence row (licence_stamps), with its own copy of lid to walk in order.
      return sql`licence_stamps.last_checked_at`;
  }
}

/**
 * The filter as a condition on `licences` alone, so counting needs no join; a product-name
 * match is a subquery over the (small) products table.
 */
export function matches(filter: ListingFilter, now: number, c: Columns = visibleColumns) {
  return (eb: Eb): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [windowIs(eb, filter.window, now, c)];
    if (filter.status) conditions.push(statusIs(filter.status));
    if (filter.productId !== undefined) conditions.push(eb('licences.product_id', '=', filter.productId));
    if (filter.customerId !== undefined) conditions.push(eb('licences.customer_id', '=', filter.customerId));
    if (filter.trial !== undefined) conditions.push(eb('licences.trial', '=', filter.trial ? 1 : 0));
    const { search } = filter;
    if (search) {
      const like = sql<SqlBool>`licences.search_text like ${substringPattern(search.q)} escape '\\'`;
      const text = search.trigrams ? eb.and([trigramsIn(search.dialect, search.trigrams), like]) : like;
      // Product names were matched beforehand: a subquery here would keep PostgreSQL from the text's index.
      conditions.push(search.productIds.length > 0 ? eb.or([text, eb('licences.product_id', 'in', search.productIds)]) : text);
    }
    return eb.and(conditions);
  };
}

/** Licences whose search text holds every one of `trigrams` (a superset of the phrase's matches). */
function trigramsIn(dialect: DialectName, trigrams: string[]): RawBuilder<SqlBool> {
  if (dialect === 'postgres') return sql<SqlBool>`licence_trigrams(licences.search_text) @> ${trigrams}::text[]`;
  const query = trigrams.map((t) => `"${t.replace(/"/g, '""')}"`).join(' AND ');
  return sql<SqlBool>`licences.id in (select rowid from licences_search where licences_search match ${query})`;
}

/** How many licences match a filter. */
export async function countMatching(t: Tenant, filter: ListingFilter, now: number): Promise<number> {
  const row = await t
    .selectFrom('licences')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(matches(filter, now))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/*
 * How to read a page, chosen from the count the request computes anyway. A few matches (a
 * window, a rare status): find them through the calendar index, then sort them. Many matches:
 * walk the sort's index and stop after the page. The planner alone picks badly here, because
 * expiry follows issue date: walking newest-first passes a third of all licences before the
 * first that expires this week.
 */
export type ReadPlan = 'filter-first' | 'walk-sort-index';
const FILTER_FIRST_UP_TO = 100_000;

export function readPlan(filter: ListingFilter, matching: number): ReadPlan {
  const narrowed =
    filter.window !== 'all' ||
    filter.status !== undefined ||
    filter.search !== undefined ||
    filter.productId !== undefined ||
    filter.customerId !== undefined ||
    filter.trial !== undefined;
  return narrowed && matching <= FILTER_FIRST_UP_TO ? 'filter-first' : 'walk-sort-index';
}

const NULLABLE_SORTS: ReadonlySet<SortKey> = new Set(['expiresAt', 'lastCheckedAt']);
const TEXT_SORTS: ReadonlySet<SortKey> = new Set(['licensee', 'product']);

/**
 * The lids of matching licences in the sort's order (nulls last either way, ties broken by lid
 * in the same direction) with each row's sort key, the export's keyset cursor. Only `licences`
 * is read, so nothing is computed for rows the page does not return. `nulls last` is written
 * only for keys that can be null: on a never-null column it would stop PostgreSQL from reading
 * the index backwards. Wrapping an ordering expression keeps an index from serving it, which
 * steers the planner to the chosen plan.
 */
function orderedLids(t: Tenant, filter: ListingFilter, now: number, plan: ReadPlan, after?: Position) {
  const direction = sql.raw(filter.asc ? 'asc' : 'desc');
  const nulls = sql.raw(NULLABLE_SORTS.has(filter.sort) ? ' nulls last' : '');
  const key = sortExpression(filter.sort);
  const stamped = filter.sort === 'lastCheckedAt';
  const lid = stamped ? sql`licence_stamps.lid` : sql`licences.lid`;
  // Numbers are hidden with a unary plus, text by appending '' (PostgreSQL has no unary plus for text).
  const ordered = (expr: RawBuilder<unknown>, text: boolean) => (plan === 'walk-sort-index' ? expr : text ? sql`(${expr} || '')` : sql`+${expr}`);
  return (
    t
      .selectFrom('licences')
      // Only the product sort needs the product's name: a join, not a lookup per row.
      .$if(filter.sort === 'product', (q) => q.innerJoin('products', 'products.id', 'licences.product_id'))
      // Joined on archived too, so a window's archived test narrows the stamps' index as well.
      .$if(stamped, (q) =>
        q.innerJoin('licence_stamps', (join) =>
          join
            .onRef('licence_stamps.licence_id', '=', 'licences.id')
            .onRef('licence_stamps.org_id', '=', 'licences.org_id')
            .onRef('licence_stamps.archived', '=', 'licences.archived'),
        ),
      )
      .select(['licences.lid', key.as('sort_key')])
      .where(matches(filter, now, plan === 'filter-first' ? visibleColumns : hiddenColumns))
      .$if(after !== undefined, (q) => q.where(sql<SqlBool>`${afterPosition(key, lid, filter, after!)}`))
      .orderBy(sql`${ordered(key, TEXT_SORTS.has(filter.sort))} ${direction}${nulls}`)
      .orderBy(sql`${ordered(lid, true)} ${direction}`)
  );
}

/**
 * `limit` lids from `offset` on, as orderedLids orders them. Several statuses walked together
 * would leave the planner one index range per status and no order across them, so each status is
 * walked on its own as far as the page reaches, and the walks merged.
 */
export function pageOfLids(t: Tenant, filter: ListingFilter, now: number, plan: ReadPlan, after: Position | undefined, limit: number, offset: number) {
  const statuses = filter.status ?? [];
  if (plan === 'filter-first' || statuses.length < 2) return orderedLids(t, filter, now, plan, after).limit(limit).offset(offset).execute();
  const walks = statuses.map((status, i) =>
    t.db
      .selectFrom(
        orderedLids(t, { ...filter, status: [status] }, now, plan, after)
          .limit(offset + limit)
          .as(`s${i}`),
      )
      .select(['lid', 'sort_key']),
  );
  const merged = walks.slice(1).reduce((union, walk) => union.unionAll(walk), walks[0]!);
  const direction = sql.raw(filter.asc ? 'asc' : 'desc');
  return t.db
    .selectFrom(merged.as('merged'))
    .select(['merged.lid', 'merged.sort_key'])
    .orderBy(sql`merged.sort_key ${direction}${sql.raw(NULLABLE_SORTS.has(filter.sort) ? ' nulls last' : '')}`)
    .orderBy(sql`merged.lid ${direction}`)
    .limit(limit)
    .offset(offset)
    .execute();
}

/** Every matching lid in the listing's order (the export's). */
export async function matchingLids(t: Tenant, filter: ListingFilter, now: number, plan: ReadPlan): Promise<string[]> {
  return (await orderedLids(t, filter, now, plan).execute()).map((r) => r.lid);
}

/** A filter-first page with the count of every match beside each row (one query: a search the index narrows has few). */
export const countedPage = (t: Tenant, filter: ListingFilter, now: number, after: Position | undefined, limit: number, offset: number) =>
  orderedLids(t, filter, now, 'filter-first', after).select(sql<number>`count(*) over ()`.as('matching')).limit(limit).offset(offset).execute();

/**
 * The rows after `after` in the listing's order (nulls last either way, ties by lid in the
 * sort's direction), as a row-value comparison an index on (key, lid) serves.
 */
function afterPosition(key: RawBuilder<unknown>, lid: RawBuilder<unknown>, filter: ListingFilter, after: Position): RawBuilder<unknown> {
  const beyond = sql.raw(filter.asc ? '>' : '<');
  if (after.key === null) return sql`(${key} is null and ${lid} ${beyond} ${after.lid})`;
  const nullsFollow = NULLABLE_SORTS.has(filter.sort) ? sql` or ${key} is null` : sql``;
  return sql`((${key}, ${lid}) ${beyond} (${after.key}, ${after.lid})${nullsFollow})`;
}
