import { sql, type RawBuilder } from 'kysely';
import { dialectOf } from '../db/database.js';
import { jsonRows, preparedQuery, type Tenant } from '../db/tenant.js';
import { liveBinding } from '../seats/live.js';

// The check path's statements: those a check makes every time are built and compiled once per dialect (preparedQuery).

// Joined to its organisation by id and filtered by slug: this confirms the check path's cached
// organisation (orgs/repo.ts OrganisationCache) in the query it makes anyway.
export const readProduct = preparedQuery((t, checkId: string, slug: string) =>
  t
    .selectFrom('products')
    .innerJoin('organisations as o', 'o.id', 'products.org_id')
    .select([
      'products.id',
      'products.version',
      'products.product_key',
      'products.active',
      'products.licence_fetch_enabled',
      'products.fingerprint_need',
      'products.self_release_limit',
      'products.max_borrowed_seats',
      'products.check_token_hash',
    ])
    .where('products.check_id', '=', checkId)
    .where('o.slug', '=', slug),
);

const LICENCE_COLUMNS = ['id', 'licence_string', 'revoked', 'revoked_at', 'revoked_reason', 'max_machines', 'seat_model', 'trial_converted_to'] as const;
// What the licence's JSON array holds before its seats: its columns, then its stamp (licence_stamps).
export const READ_COLUMNS = [...LICENCE_COLUMNS, 'last_checked_at'] as const;
export const SEAT_COLUMNS = ['id', 'parts', 'bound_at', 'label', 'last_seen_at', 'released_at', 'lease_ends_at', 'borrowed_until', 'fp_digest'] as const;

/** A licence as the check path reads it (licenceArray), and its product's version (to confirm the cached product): one row while the product exists. */
export const readLicenceRows = preparedQuery((t, productId: number, lid: string, now: number, digest: string) =>
  t
    .selectFrom('products')
    .select(['products.version as product_version', licenceArray(t, lid, now, digest).as('licence')])
    .where('products.id', '=', productId),
);

/**
 * PostgreSQL: the reads of several checks in one statement (check/licence-reads.ts), each
 * element of `json` `[i, productId, lid, now, digest]`, each answered as readLicenceRows answers
 * it with its `i`: one round trip in place of one per check.
 */
export const readLicenceRowsBatch = preparedQuery((t, json: string) =>
  t
    .selectFrom('products')
    .innerJoin(
      sql`(select (x ->> 0)::int as i, (x ->> 1)::bigint as product_id, x ->> 2 as lid, (x ->> 3)::bigint as now, x ->> 4 as digest from json_array_elements(${json}::json) x)`.as(
        'e',
      ),
      (join) => join.onRef(sql.ref('e.product_id') as never, '=', 'products.id'),
    )
    .select([
      sql<number>`e.i`.as('i'),
      'products.version as product_version',
      licenceArray(t, sql.ref('e.lid'), sql.ref('e.now'), sql.ref('e.digest')).as('licence'),
    ]),
);

/**
 * The licence as the check path reads it, with its live seats, oldest first: one JSON array, its
 * seats an array of arrays, the last element; null when the organisation has none by this lid. A
 * floating licence's row of this machine (found by its fingerprint's digest) comes too, live or
 * not (DESIGN.md 13). A correlated subquery of the product's row: on SQLite a join of the three
 * tables cost five times as much for the same rows (docs/benchmarks.md).
 */
function licenceArray(t: Tenant, lid: unknown, now: unknown, digest: unknown) {
  const postgres = dialectOf(t.db) === 'postgres';
  const array = (columns: readonly RawBuilder<unknown>[]) => sql`${sql.raw(postgres ? 'json_build_array' : 'json_array')}(${sql.join(columns)})`;
  const refs = (columns: readonly string[], table: string) => columns.map((c) => sql.ref(`${table}.${c}`));
  const seat = array(refs(SEAT_COLUMNS, 'b'));
  const seats = postgres ? sql`coalesce(json_agg(${seat} order by b.bound_at, b.id), '[]')` : sql`json_group_array(${seat} order by b.bound_at, b.id)`;
  const stamp = sql`(select s.last_checked_at from licence_stamps s where s.org_id = l.org_id and s.licence_id = l.id)`;
  const live = sql`(select ${seats} from machine_bindings b where b.org_id = l.org_id and b.licence_id = l.id and (${liveBinding('b', now)} or b.fp_digest = ${digest}))`;
  return sql<
    string | unknown[] | null
  >`(select ${array([...refs(LICENCE_COLUMNS, 'l'), stamp, live])} from licences l where l.org_id = products.org_id and l.lid = ${lid})`;
}

/** The licence strings of a licence's superseded terms. */
export const supersededStrings = (t: Tenant, licenceId: number) =>
  t.selectFrom('licence_versions').select('licence_string').where('licence_id', '=', licenceId).execute();

// A chunk's stamps, one statement for the chunk (on PostgreSQL a statement per stamp was a round
// trip each, two per check when stamps fall due). Built once per dialect; conditional, so instances checking the same licence at once stamp it once.
export const stampLicences = preparedQuery((t, json: string, intervalMs: number) =>
  t
    .updateTable('licence_stamps')
    .from(
      jsonRows(t, json, [
        ['id', 'bigint'],
        ['at', 'bigint'],
      ]).as('s'),
    )
    .set({ last_checked_at: sql`s.at` })
    .whereRef('licence_stamps.licence_id', '=', sql.ref('s.id'))
    .where(sql<boolean>`(licence_stamps.last_checked_at is null or licence_stamps.last_checked_at <= s.at - ${intervalMs})`),
);
// A null leaves the column as it is: a stamp carries a sighting, a new label, or both.
export const stampSeats = preparedQuery((t, json: string) =>
  t
    .updateTable('machine_bindings')
    .from(
      jsonRows(t, json, [
        ['id', 'bigint'],
        ['seen', 'bigint'],
        ['label', 'text'],
      ]).as('s'),
    )
    .set({ last_seen_at: sql`coalesce(s.seen, machine_bindings.last_seen_at)`, label: sql`coalesce(s.label, machine_bindings.label)` })
    .whereRef('machine_bindings.id', '=', sql.ref('s.id')),
);

/** Adds checks answered to an organisation's bucket (the dashboard's series). */
export async function addCheckCount(t: Tenant, bucket: number, count: number): Promise<void> {
  await t
    .insertInto('check_counts', { bucket, count })
    .onConflict((oc) => oc.columns(['org_id', 'bucket']).doUpdateSet({ count: sql`check_counts.count + excluded.count` }))
    .execute();
}
