import { sql } from 'kysely';
import type { Tenant } from '../db/tenant.js';
import { liveBinding } from '../seats/live.js';

/** Every zone offset is a multiple of 15 minutes, so 15-minute buckets map onto local days exactly. */
export const BUCKET_MS = 15 * 60 * 1000;

// Literals, not parameters: PostgreSQL must see the select and GROUP BY expressions as the same.
const issuedBucket = sql<number>`licences.issued_at / ${sql.lit(BUCKET_MS)} * ${sql.lit(BUCKET_MS)}`;

/** Live seats of the licences on the books (not archived), trials' left out. */
export async function liveSeatCount(t: Tenant, now: number): Promise<number> {
  const row = await t
    .selectFrom('machine_bindings')
    .innerJoin('licences', 'licences.id', 'machine_bindings.licence_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(liveBinding('machine_bindings', now))
    .where('licences.archived', '=', 0)
    .where('licences.trial', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Licences on the books issued since `since`, counted per bucket. */
export const issuedPerBucket = (t: Tenant, since: number) =>
  t
    .selectFrom('licences')
    .select([issuedBucket.as('bucket'), (eb) => eb.fn.countAll<number>().as('n')])
    .where('licences.archived', '=', 0)
    .where('licences.trial', '=', 0)
    .where('licences.issued_at', '>=', since)
    .groupBy(issuedBucket)
    .execute();

/** DESIGN.md 18: trials started (or converted) since `since`, counted per bucket of that instant. */
export function trialsPerBucket(t: Tenant, column: 'trial_started_at' | 'trial_converted_at', since: number) {
  const bucket = sql<number>`${sql.ref(`licences.${column}`)} / ${sql.lit(BUCKET_MS)} * ${sql.lit(BUCKET_MS)}`;
  return t
    .selectFrom('licences')
    .select([bucket.as('bucket'), (eb) => eb.fn.countAll<number>().as('n')])
    .where('licences.trial', '=', 1)
    .where(`licences.${column}`, '>=', since)
    .groupBy(bucket)
    .execute();
}

/** Checks answered in the buckets from `since` on (check/counters.ts writes them). */
export const checksPerBucket = (t: Tenant, since: number) =>
  t.selectFrom('check_counts').select(['bucket', 'count as n']).where('bucket', '>=', since).execute();
