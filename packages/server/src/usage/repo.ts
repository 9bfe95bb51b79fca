import { sql, type CompiledQuery } from 'kysely';
import { dialectOf, pipelined, type Db } from '../db/database.js';
import { jsonRows, preparedQuery, type Tenant } from '../db/tenant.js';

export interface RecordedEvent {
  meter: string;
  amount: number;
  at: number | null;
  result: string;
}

// The usage route's statements, made on every request: built and compiled once per dialect
// (preparedQuery), each list a JSON parameter, so one text serves any number of ids or rows.

/** A JSON array of one-element arrays, the shape jsonRows reads a list of values from. */
const listOf = (values: readonly unknown[]) => JSON.stringify(values.map((v) => [v]));

const countsInKeys = preparedQuery((t, licenceId: number, keys: string) =>
  t
    .selectFrom('usage_counts')
    .select(['meter', 'period_key', 'used'])
    .where('licence_id', '=', licenceId)
    .where('period_key', 'in', sql<string>`(select k from ${jsonRows(t, keys, [['k', 'text']])} k)`),
);

/** A licence's counts in these period keys. */
export const countsIn = (t: Tenant, licenceId: number, periodKeys: readonly string[]) =>
  periodKeys.length === 0 ? Promise.resolve([]) : countsInKeys(t, licenceId, listOf([...new Set(periodKeys)]));

/** A JSON column as SQLite (text) or PostgreSQL (parsed by the driver) answers it. */
const fromJson = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

/** Pairs of (licence, text) as jsonRows reads them: the events' ids or the period keys of each licence. */
const PAIR = [
  ['l', 'bigint'],
  ['v', 'text'],
] as const;

const usageStateOf = preparedQuery((t, ids: string, keys: string) => {
  const postgres = dialectOf(t.db) === 'postgres';
  const rows = (columns: readonly string[]) => {
    const array = sql.join(columns.map((c) => sql.ref(c)));
    return (postgres ? sql`coalesce(json_agg(json_build_array(${array})), '[]')` : sql`json_group_array(json_array(${array}))`).as('rows');
  };
  /**
   * The rows of `table` of each (licence, value) pair of `json`. On PostgreSQL a lateral lookup
   * per pair by the table's key: as a join, the planner took the list for 100 rows whatever its
   * length and chose a hash join over a scan of usage_counts, whose few hundred rows are updated
   * by every request, so a scan read the dead versions of every count since the last vacuum (3.5
   * ms a request in bench:usage). SQLite reads the materialised list as the join's outer loop.
   */
  const matched = (table: 'usage_events' | 'usage_counts', column: 'event_id' | 'period_key', json: string, columns: readonly string[]) => {
    const pairs = jsonRows(t, json, PAIR).as('r');
    const on = sql<boolean>`${sql.ref(`${table}.licence_id`)} = r.l and ${sql.ref(`${table}.${column}`)} = r.v`;
    if (!postgres)
      return t
        .selectFrom(table)
        .innerJoin(pairs, (join) => join.on(on))
        .select(rows(columns));
    // OFFSET keeps the planner from flattening the lookup back into a join.
    const lookup = t.selectFrom(table).selectAll().where(on).offset(0).as('m');
    return t.db
      .selectFrom(pairs)
      .crossJoinLateral(lookup)
      .select(rows(columns.map((c) => `m.${c}`)));
  };
  return t.db.selectNoFrom([
    matched('usage_events', 'event_id', ids, ['licence_id', 'event_id', 'meter', 'amount', 'at', 'result']).as('recorded'),
    matched('usage_counts', 'period_key', keys, ['licence_id', 'meter', 'period_key', 'used', 'ids']).as('counts'),
  ]);
});

/** What a licence's events are judged against: the events of its ids it remembers, and its counts in its period keys. */
export interface UsageState {
  recorded: Map<string, RecordedEvent>;
  counts: Array<{ meter: string; period_key: string; used: number }>;
  /** The ids remembered in each period key, summed over its meters (DESIGN.md 19's EVENT_LIMIT). */
  remembered: Map<string, number>;
}

/** A usage state statement's one row, read into each licence's state. */
function stateOf(row: { recorded: unknown; counts: unknown }): Map<number, UsageState> {
  const state = new Map<number, UsageState>();
  const of = (licenceId: number) => {
    let found = state.get(licenceId);
    if (!found) state.set(licenceId, (found = { recorded: new Map(), counts: [], remembered: new Map() }));
    return found;
  };
  for (const [licenceId, id, meter, amount, at, result] of fromJson<Array<[number, string, string, number, number | null, string]>>(row.recorded)) {
    of(Number(licenceId)).recorded.set(id, { meter, amount, at, result });
  }
  for (const [licenceId, meter, period_key, used, n] of fromJson<Array<[number, string, string, number, number]>>(row.counts)) {
    const found = of(Number(licenceId));
    found.counts.push({ meter, period_key, used });
    found.remembered.set(period_key, (found.remembered.get(period_key) ?? 0) + Number(n));
  }
  return state;
}

/** Each licence's events of these ids and counts in these period keys: pairs of (licence, value). */
type StateKeys = { ids: ReadonlyArray<[number, string]>; periodKeys: ReadonlyArray<[number, string]> };

const stateQuery = (t: Tenant, keys: StateKeys) => usageStateOf.query(t, JSON.stringify(keys.ids), JSON.stringify(keys.periodKeys));

/**
 * The state of each licence's events, in one statement for all the licences of a batch. Its plan,
 * as the lock's, is one for any length of list (the planner sees none of them), so a batch runs on
 * the plan its connection keeps: planning each batch's was a tenth of PostgreSQL's time in bench:usage.
 */
export async function usageState(t: Tenant, keys: StateKeys): Promise<Map<number, UsageState>> {
  const {
    rows: [row],
  } = await t.db.executeQuery(stateQuery(t, keys));
  return stateOf(row!);
}

export interface EventRow {
  licence_id: number;
  event_id: string | null;
  meter: string;
  amount: number;
  at: number | null;
  received_at: number;
  result: string;
  period_key: string;
  source: 'application' | 'operator';
  machine_id: number | null;
  actor: string;
  reason: string | null;
  expires_at: number;
}

/** An event row's columns but its organisation's, as insertEventRows's JSON rows hold them. */
const EVENT_COLUMNS = [
  ['licence_id', 'bigint'],
  ['event_id', 'text'],
  ['meter', 'text'],
  ['amount', 'bigint'],
  ['at', 'bigint'],
  ['received_at', 'bigint'],
  ['result', 'text'],
  ['period_key', 'text'],
  ['source', 'text'],
  ['machine_id', 'bigint'],
  ['actor', 'text'],
  ['reason', 'text'],
  ['expires_at', 'bigint'],
] as const satisfies ReadonlyArray<readonly [keyof EventRow, 'bigint' | 'text']>;

// Written through a query creator, so PostgreSQL's one statement can hold the events' INSERT as a CTE.
type Writer = Pick<Tenant['db'], 'insertInto'>;

const eventsInsert = (db: Writer, t: Tenant, json: string) =>
  db
    .insertInto('usage_events')
    .columns(['org_id', ...EVENT_COLUMNS.map(([name]) => name)])
    .expression(sql`select cast(${t.orgId} as bigint), r.* from ${jsonRows(t, json, EVENT_COLUMNS)} r`);

/** A count to set, with the ids it newly remembers. */
export interface CountRow {
  licence_id: number;
  meter: string;
  period_key: string;
  used: number;
  ids: number;
}

const COUNT_COLUMNS = [
  ['licence_id', 'bigint'],
  ['meter', 'text'],
  ['period_key', 'text'],
  ['used', 'bigint'],
  ['ids', 'bigint'],
] as const satisfies ReadonlyArray<readonly [keyof CountRow, 'bigint' | 'text']>;

const countsUpsert = (db: Writer, t: Tenant, json: string) =>
  db
    .insertInto('usage_counts')
    .columns(['org_id', ...COUNT_COLUMNS.map(([name]) => name)])
    // `where true`: SQLite reads an upsert's SELECT without a WHERE as a join's ON.
    .expression(sql`select cast(${t.orgId} as bigint), r.* from ${jsonRows(t, json, COUNT_COLUMNS)} r where true`)
    .onConflict((oc) => oc.columns(['licence_id', 'meter', 'period_key']).doUpdateSet({ used: sql`excluded.used`, ids: sql`usage_counts.ids + excluded.ids` }));

const insertEventRows = preparedQuery((t, json: string) => eventsInsert(t.db, t, json));
const upsertCounts = preparedQuery((t, json: string) => countsUpsert(t.db, t, json));
const writeBoth = preparedQuery((t, events: string, counts: string) =>
  countsUpsert(
    t.db.with('recorded', (db) => eventsInsert(db, t, events)),
    t,
    counts,
  ),
);

/**
 * The statements recording event rows and setting counts (adding the ids each newly remembers,
 * creating a row the first time). On PostgreSQL one statement, the events' INSERT a CTE of the
 * counts' upsert: each statement of a usage transaction is a round trip, and on a busy machine the
 * wait for the answer was most of its time (docs/benchmarks.md, bench:usage). SQLite's
 * statements cost no round trip.
 */
export function usageWrites(t: Tenant, rows: readonly EventRow[], counts: readonly CountRow[]): CompiledQuery[] {
  // A batch that records nothing writes nothing.
  if (rows.length === 0 && counts.length === 0) return [];
  const events = JSON.stringify(rows.map((row) => EVENT_COLUMNS.map(([name]) => row[name])));
  const changed = JSON.stringify(counts.map((row) => COUNT_COLUMNS.map(([name]) => row[name])));
  if (dialectOf(t.db) === 'postgres') return [writeBoth.query(t, events, changed)];
  return [...(rows.length > 0 ? [insertEventRows.query(t, events)] : []), ...(counts.length > 0 ? [upsertCounts.query(t, changed)] : [])];
}

export const writeUsage = (t: Tenant, rows: readonly EventRow[], counts: readonly CountRow[]) => pipelined(t.db, usageWrites(t, rows, counts));

/**
 * The licences' meters and their organisation's timezone, as stored now, under the licence-row
 * locks (section 1 Locks; on SQLite the transaction's BEGIN IMMEDIATE already serialises writers):
 * one statement, so a renewal changing the meters or a timezone change is seen whole or waits.
 * Taken in id order, as every batch takes them, so two batches never wait on each other in a circle.
 */
const lockedMetersOf = preparedQuery((t, licenceIds: string) => {
  const read = t
    .selectFrom('licences')
    .innerJoin('organisations', 'organisations.id', 'licences.org_id')
    .select(['licences.id', 'licences.meters', 'organisations.timezone'])
    .where('licences.id', 'in', sql<number>`(select v from ${jsonRows(t, licenceIds, [['v', 'bigint']])} v)`)
    .orderBy('licences.id');
  return dialectOf(t.db) === 'postgres' ? read.forUpdate('licences') : read;
});

/**
 * Locks the licences and reads their state, the two statements sent together: the read, run once
 * the lock statement has finished, sees every request that held a lock before (as a statement of
 * its own it starts afresh, under READ COMMITTED), without a round trip between them. The state's
 * period keys are those the caller expects from the meters and timezone it knows: a caller finding
 * others under the lock reads again (usageState).
 */
export async function lockAndRead(t: Tenant, licenceIds: readonly number[], keys: StateKeys) {
  const [locked, [row]] = (await pipelined(t.db, [lockedMetersOf.query(t, listOf(licenceIds)), stateQuery(t, keys)])) as [
    Array<{ id: number; meters: string; timezone: string }>,
    Array<{ recorded: unknown; counts: unknown }>,
  ];
  return { locked, state: stateOf(row!) };
}

/** Writes a threshold mark unless it exists: true when this call wrote it. */
export async function markThreshold(
  t: Tenant,
  mark: { licence_id: number; meter: string; period_key: string; limit_value: number; threshold: number; marked_at: number },
): Promise<boolean> {
  const written = await t
    .insertInto('usage_marks', mark)
    .onConflict((oc) => oc.columns(['licence_id', 'meter', 'period_key', 'limit_value', 'threshold']).doNothing())
    .returning('threshold')
    .execute();
  return written.length > 0;
}

/** The newest recorded events and adjustments of a licence, newest first (in one request the last first). */
export const recentEvents = (t: Tenant, licenceId: number, limit: number) =>
  t
    .selectFrom('usage_events')
    .select(['id', 'event_id', 'meter', 'amount', 'at', 'received_at', 'result', 'source', 'machine_id', 'actor', 'reason', 'period_key'])
    .where('licence_id', '=', licenceId)
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();

const PRUNE_BATCH = 5_000;

/**
 * Forgets the ids past their horizon, across organisations, a batch per transaction: each batch's
 * rows deleted with RETURNING, so on any number of instances a row is forgotten once and its count
 * row's `ids` lowered once; `used` is never touched. Answers the rows deleted.
 */
export async function pruneEvents(db: Db, now: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const gone = await db.transaction().execute(async (trx) => {
      const rows = await trx
        .deleteFrom('usage_events')
        .where('id', 'in', (eb) => eb.selectFrom('usage_events').select('id').where('expires_at', '<', now).limit(PRUNE_BATCH))
        .returning(['org_id', 'licence_id', 'meter', 'period_key', 'event_id'])
        .execute();
      const forgotten = new Map<string, { org_id: number; licence_id: number; meter: string; period_key: string; n: number }>();
      for (const row of rows) {
        if (row.event_id === null) continue;
        const key = JSON.stringify([row.licence_id, row.meter, row.period_key]);
        const group = forgotten.get(key) ?? { ...row, n: 0 };
        group.n++;
        forgotten.set(key, group);
      }
      if (forgotten.size > 0) {
        const json = JSON.stringify([...forgotten.values()].map((g) => [g.org_id, g.licence_id, g.meter, g.period_key, g.n]));
        const columns = [
          ['org_id', 'bigint'],
          ['licence_id', 'bigint'],
          ['meter', 'text'],
          ['period_key', 'text'],
          ['n', 'bigint'],
        ] as const;
        await trx
          .updateTable('usage_counts')
          .from(jsonRows({ db: trx }, json, columns).as('g'))
          .set({ ids: sql`usage_counts.ids - g.n` })
          .whereRef('usage_counts.org_id', '=', sql.ref('g.org_id'))
          .whereRef('usage_counts.licence_id', '=', sql.ref('g.licence_id'))
          .whereRef('usage_counts.meter', '=', sql.ref('g.meter'))
          .whereRef('usage_counts.period_key', '=', sql.ref('g.period_key'))
          .execute();
      }
      return rows.length;
    });
    deleted += gone;
    if (gone < PRUNE_BATCH) return deleted;
  }
}

/** A licence's meters as stored on it. */
export const licenceMetersRow = (t: Tenant, licenceId: number) =>
  t.selectFrom('licences').select(['meters']).where('id', '=', licenceId).executeTakeFirstOrThrow();

/** The non-archived licences (of one product) with the most use of a meter in a period key, most first, then by lid. */
export const topConsumers = (t: Tenant, productId: number, meter: string, periodKey: string, limit: number) =>
  t
    .selectFrom('usage_counts')
    .innerJoin('licences', (join) => join.onRef('licences.id', '=', 'usage_counts.licence_id').onRef('licences.org_id', '=', 'usage_counts.org_id'))
    .select(['licences.lid', 'licences.licensee', 'licences.meters', 'usage_counts.used'])
    .where('licences.product_id', '=', productId)
    .where('licences.archived', '=', 0)
    // DESIGN.md 18: the dashboard's figures leave trials out.
    .where('licences.trial', '=', 0)
    .where('usage_counts.meter', '=', meter)
    .where('usage_counts.period_key', '=', periodKey)
    .where('usage_counts.used', '>', 0)
    .orderBy('usage_counts.used', 'desc')
    .orderBy('licences.lid')
    .limit(limit)
    .execute();

/** The organisation's products (or one) with their meters. */
export const meteredProducts = (t: Tenant, productId: number | undefined) => {
  let query = t.selectFrom('products').select(['id', 'product_key', 'meters']).orderBy('id');
  if (productId !== undefined) query = query.where('id', '=', productId);
  return query.execute();
};

/** The organisation's timezone as stored now: the check path's cached organisation may predate a change. */
export async function timezoneOf(t: Tenant): Promise<string> {
  const row = await t.db.selectFrom('organisations').select('timezone').where('id', '=', t.orgId).executeTakeFirstOrThrow();
  return row.timezone;
}
