import { sql, type ExpressionBuilder, type Expression, type SqlBool, type RawBuilder } from 'kysely';
import type { Schema } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { badRequest } from '../http/errors.js';
import { DAY_MS, type LicenceStatus } from './status.js';
import { licenceViews } from './repo.js';

export const WINDOWS = ['all', '7d', '30d', '90d', 'grace', 'expired', 'perpetual', 'archived'] as const;
export const SORTS = ['issuedAt', 'expiresAt', 'licensee', 'status', 'product', 'lastCheckedAt'] as const;
export const STATUSES = ['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'] as const;
export type Window = (typeof WINDOWS)[number];
export type SortKey = (typeof SORTS)[number];

export interface ListingFilter {
  q?: string | undefined;
  status?: LicenceStatus[] | undefined;
  window: Window;
  sort: SortKey;
  asc: boolean;
}

type Eb = ExpressionBuilder<Schema, 'licences'>;

/** `status=ACTIVE,GRACE`: one value or a comma list. */
export function parseStatuses(text: string | undefined): LicenceStatus[] | undefined {
  if (text === undefined) return undefined;
  const values = text.split(',').map((s) => s.trim());
  const unknown = values.find((v) => !(STATUSES as readonly string[]).includes(v));
  if (unknown !== undefined) throw badRequest(`status: "${unknown}" is not one of ${STATUSES.join(', ')}`);
  return values as LicenceStatus[];
}

/*
 * Calendar statuses computed in SQL from the stored term (DESIGN.md 3), so they are never
 * stale: REVOKED by flag; else PENDING before startsAt; ACTIVE before expiresAt; GRACE before
 * the grace end; else EXPIRED.
 */
function started(eb: Eb, now: number) {
  return eb.or([eb('licences.starts_at', 'is', null), eb('licences.starts_at', '<=', now)]);
}

export function statusIs(eb: Eb, status: LicenceStatus, now: number): Expression<SqlBool> {
  const live = eb('licences.revoked', '=', 0);
  switch (status) {
    case 'REVOKED':
      return eb('licences.revoked', '=', 1);
    case 'PENDING':
      return eb.and([live, eb('licences.starts_at', '>', now)]);
    case 'ACTIVE':
      return eb.and([live, started(eb, now), eb.or([eb('licences.expires_at', 'is', null), eb('licences.expires_at', '>', now)])]);
    case 'GRACE':
      return eb.and([live, started(eb, now), eb('licences.expires_at', '<=', now), eb('licences.grace_ends_at', '>', now)]);
    case 'EXPIRED':
      return eb.and([live, started(eb, now), eb('licences.grace_ends_at', '<=', now)]);
  }
}

/** Window membership (DESIGN.md 4); every window but `archived` leaves archived licences out. */
export function windowIs(eb: Eb, window: Window, now: number): Expression<SqlBool> {
  if (window === 'archived') return eb('licences.archived', '=', 1);
  const filed = eb('licences.archived', '=', 0);
  switch (window) {
    case 'all':
      return filed;
    case 'grace':
      return eb.and([filed, statusIs(eb, 'GRACE', now)]);
    case 'expired':
      return eb.and([filed, statusIs(eb, 'EXPIRED', now)]);
    case 'perpetual':
      return eb.and([filed, eb('licences.expires_at', 'is', null)]);
    default: {
      const days = Number(window.slice(0, -1));
      return eb.and([
        filed,
        eb('licences.revoked', '=', 0),
        eb('licences.expires_at', '>', now),
        eb('licences.expires_at', '<=', now + days * DAY_MS),
      ]);
    }
  }
}

/** The status as a rank in the order PENDING, ACTIVE, GRACE, EXPIRED, REVOKED. */
function statusRank(now: number): RawBuilder<number> {
  return sql<number>`case
    when licences.revoked = 1 then 4
    when licences.starts_at > ${now} then 0
    when licences.expires_at is null or licences.expires_at > ${now} then 1
    when licences.grace_ends_at > ${now} then 2
    else 3 end`;
}

export function sortExpression(sort: SortKey, now: number): RawBuilder<unknown> {
  switch (sort) {
    case 'issuedAt':
      return sql`licences.issued_at`;
    case 'expiresAt':
      return sql`licences.expires_at`;
    case 'licensee':
      return sql`licences.licensee`;
    case 'status':
      return statusRank(now);
    case 'product':
      return sql`products.name`;
    case 'lastCheckedAt':
      return sql`licences.last_checked_at`;
  }
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The filter as a condition on `licences` alone, so counting needs no join; a product-name
 * match is a subquery over the (small) products table.
 */
export function matches(filter: ListingFilter, now: number) {
  return (eb: Eb): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [windowIs(eb, filter.window, now)];
    if (filter.status) conditions.push(eb.or(filter.status.map((s) => statusIs(eb, s, now))));
    if (filter.q) {
      const pattern = `%${escapeLike(filter.q.toLowerCase())}%`;
      conditions.push(
        eb.or([
          sql<SqlBool>`licences.search_text like ${pattern} escape '\\'`,
          eb(
            'licences.product_id',
            'in',
            eb
              .selectFrom('products')
              .select('products.id')
              .whereRef('products.org_id', '=', 'licences.org_id')
              .where(sql<SqlBool>`lower(products.name) like ${pattern} escape '\\'`),
          ),
        ]),
      );
    }
    return eb.and(conditions);
  };
}

/** The licences matching a filter, with their views, before sorting and paging. */
export function filteredLicences(t: Tenant, filter: ListingFilter, now: number) {
  return licenceViews(t).where((eb) => matches(filter, now)(eb as unknown as Eb));
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

const NULLABLE_SORTS: ReadonlySet<SortKey> = new Set(['expiresAt', 'lastCheckedAt']);

/**
 * Sorts by the key, nulls last either way, ties broken by lid in the same direction. `nulls
 * last` is written only for keys that can be null: on a never-null column it would only stop
 * PostgreSQL from reading the matching index backwards.
 */
export function sorted<Q extends { orderBy: (expr: RawBuilder<unknown>) => Q }>(query: Q, filter: ListingFilter, now: number): Q {
  const direction = sql.raw(filter.asc ? 'asc' : 'desc');
  const nulls = sql.raw(NULLABLE_SORTS.has(filter.sort) ? ' nulls last' : '');
  return query.orderBy(sql`${sortExpression(filter.sort, now)} ${direction}${nulls}`).orderBy(sql`licences.lid ${direction}`);
}

/** Counts every window at once: one pass over the organisation's licences. */
export async function countWindows(t: Tenant, now: number): Promise<Record<Window, number>> {
  const row = await t
    .selectFrom('licences')
    .select((eb) =>
      WINDOWS.map((window) =>
        eb.fn.sum<number>(eb.case().when(windowIs(eb, window, now)).then(1).else(0).end()).as(`w_${window}`),
      ),
    )
    .executeTakeFirstOrThrow();
  const counts = row as unknown as Record<string, number | null>;
  return Object.fromEntries(WINDOWS.map((w) => [w, Number(counts[`w_${w}`] ?? 0)])) as Record<Window, number>;
}
