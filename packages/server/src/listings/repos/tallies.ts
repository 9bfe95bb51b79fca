import { sql, type OnConflictBuilder } from 'kysely';
import { lockName, transaction, type Database } from '../../db/database.js';
import type { Schema } from '../../db/schema.js';
import { preparedQuery, tenant, type Tenant } from '../../db/tenant.js';
import type { Ctx } from '../../core/context.js';
import { countMatching, statusRank, windowIs } from './pages.js';
import { STATUSES, type ListingFilter, type Window } from '../filter.js';
import { statusOf, type LicenceRow } from './views.js';
import type { LicenceStatus } from '../status.js';

/*
 * Exact licence totals without counting a million rows per request (issue 15).
 *
 * `licence_tallies` holds, per organisation, how many licences had each key (archived, product,
 * type, perpetual, status) at one instant, the clock's `as_of`, and each licence stores its status
 * at that instant (`status_rank`). Every write that changes a licence's key moves the tallies in
 * its own transaction, judging the status at `as_of`, not now. A read adds what the calendar did
 * since: only licences with a start, an expiry or a grace end between `as_of` and now can have
 * changed status, and three index ranges find them. So a total is never recounted and never
 * stale, and the status rules stay those of listings/status.ts.
 *
 * A read that finds any such licence moves the clock to its own instant, re-ranking them, so
 * after a read every stored rank is the status now and listings can filter and sort by it. The
 * clock moves under its lock; writers hold that lock shared (PostgreSQL; SQLite has one writer),
 * so no write judges its key at an instant the tallies have left.
 */

export interface TallyKey {
  archived: number;
  productId: number;
  licenceType: string;
  perpetual: number;
  status: LicenceStatus;
}

type Source = Pick<LicenceRow, 'archived' | 'product_id' | 'licence_type' | 'revoked' | 'starts_at' | 'expires_at' | 'grace_days'>;

const keyAt = (row: Source, at: number): TallyKey => ({
  archived: Number(row.archived),
  productId: Number(row.product_id),
  licenceType: row.licence_type,
  perpetual: row.expires_at === null ? 1 : 0,
  status: statusOf(row, at),
});
const keyId = (k: TallyKey) => `${k.archived}|${k.productId}|${k.licenceType}|${k.perpetual}|${k.status}`;

/** Counts per key, with the changes to make or the totals read. */
export class Counts {
  readonly byId = new Map<string, { key: TallyKey; n: number }>();
  add(key: TallyKey, n: number) {
    const id = keyId(key);
    const entry = this.byId.get(id) ?? { key, n: 0 };
    entry.n += n;
    this.byId.set(id, entry);
  }
  sum(where: (key: TallyKey) => boolean): number {
    let total = 0;
    for (const { key, n } of this.byId.values()) if (where(key)) total += n;
    return total;
  }
}

/**
 * The organisation's licences whose status may differ between the instants `a` and `b` (either
 * order): a start, an expiry or a grace end in between. A revoked licence stays REVOKED.
 */
function crossings(t: Tenant, low: number | Operand, high: number | Operand) {
  const part = (column: 'starts_at' | 'expires_at' | 'grace_ends_at') =>
    t
      .selectFrom('licences')
      .select([
        'licences.id',
        'licences.archived',
        'licences.product_id',
        'licences.licence_type',
        'licences.revoked',
        'licences.starts_at',
        'licences.expires_at',
        'licences.grace_days',
        sql<number | null>`null`.as('as_of'),
        sql<number | null>`null`.as('perpetual'),
        sql<string | null>`null`.as('status'),
        sql<number | null>`null`.as('n'),
      ])
      // Both values named, so the indexes that lead with `archived` serve the range.
      .where('licences.archived', 'in', [0, 1])
      .where('licences.revoked', '=', 0)
      .where(`licences.${column}`, '>', low as number)
      .where(`licences.${column}`, '<=', high as number);
  return part('starts_at').unionAll(part('expires_at')).unionAll(part('grace_ends_at'));
}
type Operand = ReturnType<typeof clockBound>;

/** The earlier or the later of the clock and `now`, as a scalar subquery. */
function clockBound(t: Tenant, now: number, bound: 'low' | 'high') {
  const earlier = sql<number>`case when licence_tally_clocks.as_of < ${now} then licence_tally_clocks.as_of else ${now} end`;
  const later = sql<number>`case when licence_tally_clocks.as_of < ${now} then ${now} else licence_tally_clocks.as_of end`;
  return t.selectFrom('licence_tally_clocks').select((bound === 'low' ? earlier : later).as('bound'));
}

interface Reading {
  counts: Counts;
  crossed: number;
}

/**
 * The totals at `now`, in one statement (one snapshot): the tallies with their clock, and the
 * licences that crossed a boundary since. Null when the organisation has no clock yet.
 */
async function read(t: Tenant, now: number): Promise<Reading | null> {
  const tallied = t
    .selectFrom('licence_tally_clocks')
    .leftJoin('licence_tallies', 'licence_tallies.org_id', 'licence_tally_clocks.org_id')
    .select([
      sql<number | null>`null`.as('id'),
      sql<number | null>`licence_tallies.archived`.as('archived'),
      sql<number | null>`licence_tallies.product_id`.as('product_id'),
      sql<string | null>`licence_tallies.licence_type`.as('licence_type'),
      sql<number | null>`null`.as('revoked'),
      sql<number | null>`null`.as('starts_at'),
      sql<number | null>`null`.as('expires_at'),
      sql<number | null>`null`.as('grace_days'),
      sql<number | null>`licence_tally_clocks.as_of`.as('as_of'),
      'licence_tallies.perpetual',
      'licence_tallies.status',
      'licence_tallies.n',
    ]);
  const rows = await tallied.unionAll(crossings(t, clockBound(t, now, 'low'), clockBound(t, now, 'high'))).execute();
  const clock = rows.find((r) => r.as_of !== null);
  if (!clock) return null;
  const asOf = Number(clock.as_of);
  const counts = new Counts();
  for (const r of rows) {
    if (r.as_of !== null && r.status !== null) {
      counts.add(
        {
          archived: Number(r.archived),
          productId: Number(r.product_id),
          licenceType: r.licence_type!,
          perpetual: Number(r.perpetual),
          status: r.status as LicenceStatus,
        },
        Number(r.n),
      );
    }
  }
  const moved = new Map(rows.filter((r) => r.as_of === null).map((r) => [r.id, r as unknown as Source]));
  for (const row of moved.values()) {
    counts.add(keyAt(row, asOf), -1);
    counts.add(keyAt(row, now), 1);
  }
  return { counts, crossed: moved.size };
}

/**
 * Adds `changes` to the tallies, in key order so concurrent writers never wait on each other in a
 * cycle. With `guard`, only if the clock still reads `guard` when the first change is written:
 * false (and nothing written) when it has moved on.
 */
async function apply(t: Tenant, changes: Counts, guard?: number): Promise<boolean> {
  const rows = [...changes.byId.entries()].filter(([, c]) => c.n !== 0).sort(([a], [b]) => (a < b ? -1 : 1));
  // Nothing moves at `guard`; at a clock moved on, something may.
  if (rows.length === 0 && guard !== undefined) return (await clockNow(t)) === guard;
  for (const [, { key, n }] of rows) {
    const args = [key.archived, key.productId, key.licenceType, key.perpetual, key.status, n] as const;
    if (guard === undefined) {
      await addTally(t, ...args);
    } else {
      if ((await addTallyAt(t, ...args, guard)).length === 0) return false;
      guard = undefined;
    }
  }
  return true;
}

const clockNow = async (t: Tenant) => Number((await t.selectFrom('licence_tally_clocks').select('as_of').executeTakeFirstOrThrow()).as_of);

type TallyArgs = [archived: number, productId: number, licenceType: string, perpetual: number, status: string, n: number];
const KEY_COLUMNS = ['org_id', 'archived', 'product_id', 'licence_type', 'perpetual', 'status'] as const;
const adding = (oc: OnConflictBuilder<Schema, 'licence_tallies'>) => oc.columns([...KEY_COLUMNS]).doUpdateSet({ n: sql`licence_tallies.n + excluded.n` });

// Every licence write makes these: built and compiled once (preparedQuery).
/** Adds `n` to one tally row. */
const addTally = preparedQuery((t, ...[archived, productId, licenceType, perpetual, status, n]: TallyArgs) =>
  t.insertInto('licence_tallies', { archived, product_id: productId, licence_type: licenceType, perpetual, status, n }).onConflict(adding),
);

/** The same, only while the organisation's clock reads `asOf`: no row when it does not. */
const addTallyAt = preparedQuery((t, ...[archived, productId, licenceType, perpetual, status, n, asOf]: [...TallyArgs, asOf: number]) =>
  t.db
    .insertInto('licence_tallies')
    .columns([...KEY_COLUMNS, 'n'])
    .expression(
      t
        .selectFrom('licence_tally_clocks')
        // Typed: PostgreSQL takes a bare parameter in a select list as text.
        .select([
          'licence_tally_clocks.org_id',
          sql<number>`cast(${archived} as integer)`.as('archived'),
          sql<number>`cast(${productId} as bigint)`.as('product_id'),
          sql<string>`cast(${licenceType} as text)`.as('licence_type'),
          sql<number>`cast(${perpetual} as integer)`.as('perpetual'),
          sql<string>`cast(${status} as text)`.as('status'),
          sql<number>`cast(${n} as bigint)`.as('n'),
        ])
        .where('licence_tally_clocks.as_of', '=', asOf),
    )
    .onConflict(adding)
    .returning('n'),
);

/** Judges every licence of the organisation at `now`, into its stored rank and fresh tallies. */
async function recount(t: Tenant, now: number) {
  // Only the ranks that are wrong: rewriting a million rows and their indexes takes minutes.
  await t
    .updateTable('licences')
    .set({ status_rank: statusRank(now) })
    .where((eb) => eb.or([eb('licences.status_rank', 'is', null), eb('licences.status_rank', '<>', statusRank(now))]))
    .execute();
  const rows = await t
    .selectFrom('licences')
    .select([
      'licences.archived',
      'licences.product_id',
      'licences.licence_type',
      sql<number>`case when licences.expires_at is null then 1 else 0 end`.as('perpetual'),
      statusRank(now).as('rank'),
      (eb) => eb.fn.countAll<number>().as('n'),
    ])
    .groupBy([sql`1`, sql`2`, sql`3`, sql`4`, sql`5`])
    .execute();
  const counts = new Counts();
  for (const r of rows) {
    counts.add(
      {
        archived: Number(r.archived),
        productId: Number(r.product_id),
        licenceType: r.licence_type,
        perpetual: Number(r.perpetual),
        status: STATUSES[Number(r.rank)]!,
      },
      Number(r.n),
    );
  }
  await t.deleteFrom('licence_tallies').execute();
  await apply(t, counts);
}

/** The clock's lock (PostgreSQL advisory: a row lock held shared by many writers is costly). */
export const clockLock = (orgId: number) => `licence tally clock ${orgId}`;

/**
 * The clock as a writing transaction holds it. `confirmed`: read after its lock was granted.
 * Otherwise read in the statement that took the lock (licences/opening.ts), whose snapshot may
 * predate the grant: an advance that committed while that statement waited is not seen, and
 * the first tally written (record) finds it.
 */
export interface HeldClock {
  asOf: number;
  confirmed: boolean;
}

/**
 * Inside a writing transaction: the clock, held shared until the transaction ends. An
 * organisation without one is counted now. A transaction that writes a licence takes it before
 * the licence's row: moving the clock on takes the clock, then rows.
 */
export async function holdClock(database: Pick<Database, 'dialect'>, t: Tenant, now: number): Promise<HeldClock> {
  await lockName(database, t.db, clockLock(t.orgId), 'shared');
  const held = async () => (await t.selectFrom('licence_tally_clocks').select('as_of').executeTakeFirst())?.as_of;
  const asOf = await held();
  if (asOf !== undefined) return { asOf: Number(asOf), confirmed: true };
  const created = await t
    .insertInto('licence_tally_clocks', { as_of: now })
    .onConflict((oc) => oc.column('org_id').doNothing())
    .returning('as_of')
    .executeTakeFirst();
  if (!created) return { asOf: Number(await held()), confirmed: true };
  await recount(t, now);
  return { asOf: now, confirmed: true };
}

const TALLIED_COLUMNS = ['archived', 'product_id', 'licence_type', 'revoked', 'starts_at', 'expires_at', 'grace_days'] as const;

export interface TallyChange {
  /** What the licence's write must carry: its stored rank. */
  columns: { status_rank?: number };
  /**
   * Moves the tallies. Last in the transaction: concurrent writes of one kind of licence update
   * the same tally row, which each holds until it commits.
   */
  record: () => Promise<void>;
}

/**
 * Inside the transaction that writes a licence, before the write, with the clock it holds:
 * how the licence's old row (null for a new licence) and its new one change the tallies.
 */
export function tallyChange(clock: HeldClock, t: Tenant, before: Source | null, after: Source & { lid: string }): TallyChange {
  if (before && TALLIED_COLUMNS.every((c) => before[c] === after[c])) return { columns: {}, record: async () => {} };
  const judged = (asOf: number) => {
    const changes = new Counts();
    if (before) changes.add(keyAt(before, asOf), -1);
    const key = keyAt(after, asOf);
    changes.add(key, 1);
    return { changes, rank: STATUSES.indexOf(key.status) };
  };
  const first = judged(clock.asOf);
  return {
    columns: { status_rank: first.rank },
    record: async () => {
      if (await apply(t, first.changes, clock.confirmed ? undefined : clock.asOf)) return;
      // The clock moved on before this transaction held its lock: it holds it now, so the clock
      // read now stays until the commit. Judged again at it, as if read under the lock.
      const again = judged(await clockNow(t));
      if (again.rank !== first.rank) await t.updateTable('licences').set({ status_rank: again.rank }).where('licences.lid', '=', after.lid).execute();
      await apply(t, again.changes);
    },
  };
}

/** Moves the clock to `now`, folding in what the calendar changed since. */
async function advance(database: Database, orgId: number, now: number) {
  await transaction(database, async (trx) => {
    const t = tenant(trx, orgId);
    await lockName(database, trx, clockLock(orgId));
    const clock = await t.selectFrom('licence_tally_clocks').select('as_of').executeTakeFirst();
    if (!clock) return;
    const asOf = Number(clock.as_of);
    const moved = new Map((await crossings(t, Math.min(asOf, now), Math.max(asOf, now)).execute()).map((r) => [r.id, r]));
    const changes = new Counts();
    const reranked = new Map<number, number[]>();
    for (const row of moved.values()) {
      const [from, to] = [keyAt(row, asOf), keyAt(row, now)];
      changes.add(from, -1);
      changes.add(to, 1);
      if (from.status !== to.status) {
        const rank = STATUSES.indexOf(to.status);
        reranked.set(rank, [...(reranked.get(rank) ?? []), Number(row.id)]);
      }
    }
    await apply(t, changes);
    for (const [rank, ids] of [...reranked].sort(([a], [b]) => a - b)) {
      await t.updateTable('licences').set({ status_rank: rank }).where('licences.id', 'in', ids).execute();
    }
    await t.updateTable('licence_tally_clocks').set({ as_of: now }).execute();
  });
}

/** The organisation's totals at the request's instant. */
export async function tallies(ctx: Pick<Ctx, 'database' | 'org' | 'tenant' | 'now'>): Promise<Counts> {
  let reading = await read(ctx.tenant, ctx.now);
  if (!reading) {
    await transaction(ctx.database, (trx) => holdClock(ctx.database, tenant(trx, ctx.org.id), ctx.now));
    reading = (await read(ctx.tenant, ctx.now))!;
  }
  // Listings judge status by the stored rank, so it must hold at the request's instant.
  if (reading.crossed > 0) await advance(ctx.database, ctx.org.id, ctx.now);
  return reading.counts;
}

/** Inside a writing transaction: the totals at `now`, this transaction's writes included. */
export async function talliesWithin(database: Pick<Database, 'dialect'>, t: Tenant, now: number): Promise<Counts> {
  await holdClock(database, t, now);
  return (await read(t, now))!.counts;
}

/** Licences that use plan capacity (ACTIVE or GRACE), archived or not. */
export const countingLicences = (counts: Counts) => counts.sum((k) => k.status === 'ACTIVE' || k.status === 'GRACE');

/** Which keys each window holds; the expiry windows are not kept (they slide with every instant). */
export const WINDOW_KEYS: Partial<Record<Window, (k: TallyKey) => boolean>> = {
  all: (k) => k.archived === 0,
  archived: (k) => k.archived === 1,
  grace: (k) => k.archived === 0 && k.status === 'GRACE',
  expired: (k) => k.archived === 0 && k.status === 'EXPIRED',
  perpetual: (k) => k.archived === 0 && k.perpetual === 1,
};

/** Which keys a listing filter holds; null when the filter asks what the tallies do not keep. */
export function talliedFilter(filter: ListingFilter): ((key: TallyKey) => boolean) | null {
  const inWindow = WINDOW_KEYS[filter.window];
  if (!inWindow || filter.search !== undefined || filter.customerId !== undefined || filter.trial !== undefined) return null;
  const statuses = filter.status && new Set(filter.status);
  return (k) => inWindow(k) && (!statuses || statuses.has(k.status)) && (filter.productId === undefined || k.productId === filter.productId);
}

/**
 * `counts.trials` (DESIGN.md 18): the non-archived ACTIVE trials (a trial has no start date and no
 * grace). The plan's count leaves them out: trials never count against `planLimit`.
 */
export async function activeTrials(t: Tenant, now: number): Promise<number> {
  const row = await t
    .selectFrom('licences')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('trial', '=', 1)
    .where('archived', '=', 0)
    .where('revoked', '=', 0)
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The non-archived trials as the tallies count them (ONLINE, no start date, no grace: ACTIVE,
 * EXPIRED or REVOKED), so that a figure can leave them out (DESIGN.md 18: the dashboard's).
 */
export async function trialTallies(t: Tenant, now: number): Promise<Counts> {
  // A literal, not a parameter: PostgreSQL must see the select and GROUP BY expressions as the same.
  const live = sql<number>`case when ${sql.ref('expires_at')} > ${sql.lit(now)} then 1 else 0 end`;
  const rows = await t
    .selectFrom('licences')
    .select(['product_id', 'revoked', live.as('live'), (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('trial', '=', 1)
    .where('archived', '=', 0)
    .groupBy(['product_id', 'revoked', live])
    .execute();
  const counts = new Counts();
  for (const row of rows) {
    const status: LicenceStatus = Number(row.revoked) === 1 ? 'REVOKED' : Number(row.live) === 1 ? 'ACTIVE' : 'EXPIRED';
    counts.add({ archived: 0, productId: Number(row.product_id), licenceType: 'ONLINE', perpetual: 0, status }, Number(row.n));
  }
  return counts;
}

/** The licences the plan limit counts: ACTIVE and GRACE ones, trials left out. */
export const planCount = async (t: Tenant, counts: Counts, now: number) => countingLicences(counts) - (await activeTrials(t, now));

/** How many licences match a listing filter: from the tallies (just read) where they can say, else counted. */
export async function countListing(ctx: Ctx, filter: ListingFilter, counts: Counts): Promise<number> {
  const holds = talliedFilter(filter);
  return holds ? counts.sum(holds) : countMatching(ctx.tenant, filter, ctx.now);
}

const EXPIRING = ['7d', '30d', '90d'] as const;

/** The three expiry windows, counted in one walk of the 90-day range of the expiry index. */
export async function countExpiring(t: Tenant, now: number, { trials = true } = {}): Promise<Record<(typeof EXPIRING)[number], number>> {
  let query = t.selectFrom('licences');
  // The dashboard leaves trials out of its figures (DESIGN.md 18); the list's windows count them.
  if (!trials) query = query.where('trial', '=', 0);
  const row = await query
    .select((eb) =>
      EXPIRING.map((w) =>
        eb.fn
          .sum<number>(
            eb
              .case()
              .when(windowIs(eb, w, now))
              .then(1)
              .else(0)
              .end(),
          )
          .as(`w_${w}`),
      ),
    )
    .where((eb) => windowIs(eb, '90d', now))
    .executeTakeFirstOrThrow();
  const counts = row as unknown as Record<string, number | null>;
  return Object.fromEntries(EXPIRING.map((w) => [w, Number(counts[`w_${w}`] ?? 0)])) as Record<(typeof EXPIRING)[number], number>;
}

/** Counts each organisation that has no clock yet (it existed before the tallies), before any request must. */
export async function countUncounted(database: Database): Promise<void> {
  const uncounted = await database.db
    .selectFrom('organisations')
    .leftJoin('licence_tally_clocks', 'licence_tally_clocks.org_id', 'organisations.id')
    .where('licence_tally_clocks.org_id', 'is', null)
    .select('organisations.id')
    .execute();
  for (const { id } of uncounted) await transaction(database, (trx) => holdClock(database, tenant(trx, Number(id)), Date.now()));
}
