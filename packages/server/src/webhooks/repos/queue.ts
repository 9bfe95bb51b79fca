import { sql, type Insertable } from 'kysely';
import { type Database, type DialectName, dialectOf, type Trx } from '../../db/database.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from '../../db/schema.js';
import type { Tenant } from '../../db/tenant.js';

// The delivery loop's statements (outbox.ts), across organisations: each delivery and event row carries its org_id.

type Db = Database['db'] | Trx;

/** Written into the SQL, not bound: only then can SQLite use the partial index of pending deliveries. */
const PENDING = sql.lit('pending' as const);

function dueQuery(db: Db, full: number[], now: number) {
  let query = db.selectFrom('webhook_deliveries').where('status', '=', PENDING).where('next_at', '<=', now);
  if (full.length) query = query.where('endpoint_id', 'not in', full);
  return query.select(['id', 'org_id', 'endpoint_id', 'attempts']);
}

/** Whether a delivery is due, other than to the endpoints in `full`. */
export const anyDue = async (db: Db, full: number[], now: number) => (await dueQuery(db, full, now).limit(1).executeTakeFirst()) !== undefined;

/** The due deliveries, soonest first, other than to the endpoints in `full`; on PostgreSQL locked, skipping those another process holds. */
export function claimableDue(trx: Trx, dialect: DialectName, full: number[], now: number, limit: number) {
  const due = dueQuery(trx, full, now).orderBy('next_at').limit(limit);
  return (dialect === 'postgres' ? due.forUpdate().skipLocked() : due).execute();
}

/** Whether an event is committed and not yet numbered. */
export const anyUnsequenced = async (db: Db) =>
  (await db.selectFrom('webhook_events').select('id').where('body', 'is', null).limit(1).executeTakeFirst()) !== undefined;

export async function pruneEvents(db: Db, before: number): Promise<void> {
  await db.deleteFrom('webhook_events').where('created_at', '<', before).execute();
}

/** Committed events not yet numbered, in the order they were written. */
export const unsequencedEvents = (trx: Trx, limit: number) =>
  trx.selectFrom('webhook_events').select(['id', 'org_id', 'type', 'data', 'created_at']).where('body', 'is', null).orderBy('id').limit(limit).execute();

/** The organisation's last event number, if it has numbered any. */
export const sequenceState = (t: Tenant) => t.selectFrom('webhook_state').select('last_sequence').executeTakeFirst();

export async function saveSequence(t: Tenant, exists: boolean, sequence: number, now: number): Promise<void> {
  if (exists) await t.updateTable('webhook_state').set({ last_sequence: sequence }).execute();
  else await t.insertInto('webhook_state', { last_sequence: sequence, since: now }).execute();
}

/** The organisation's endpoints, enabled or not, with the events each takes (for `*`, those it stood for when saved). */
export async function fanOutEndpoints(t: Tenant) {
  return (await t.selectFrom('webhook_endpoints').select(['id', 'events', 'covers', 'enabled', 'created_at']).execute()).map(({ covers, ...e }) => ({
    ...e,
    events: new Set(JSON.parse(covers ?? e.events) as string[]),
  }));
}

/** Stores each event's number and body; a statement per hundred events, not per event: on PostgreSQL each is a round trip. */
export async function numberEvents(trx: Trx, numbered: Array<{ id: number; sequence: number; body: string }>): Promise<void> {
  for (let i = 0; i < numbered.length; i += 100) {
    const chunk = numbered.slice(i, i + 100);
    const byId = (value: (e: (typeof chunk)[number]) => unknown, type: 'bigint' | 'text') =>
      sql<never>`case id ${sql.join(
        chunk.map((e) => sql`when ${e.id} then cast(${value(e)} as ${sql.raw(type)})`),
        sql` `,
      )} end`;
    await trx
      .updateTable('webhook_events')
      .set({ sequence: byId((e) => e.sequence, 'bigint'), body: byId((e) => e.body, 'text') })
      .where(
        'id',
        'in',
        chunk.map((e) => e.id),
      )
      .execute();
  }
}

export async function insertDeliveries(trx: Trx, rows: Insertable<WebhookDeliveriesTable>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 200)
    await trx
      .insertInto('webhook_deliveries')
      .values(rows.slice(i, i + 200))
      .execute();
}

/** What the attempts of these deliveries send, and whether their endpoint is enabled. */
export async function messagesOf(trx: Trx, ids: number[]) {
  return trx
    .selectFrom('webhook_deliveries')
    .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
    .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_deliveries.endpoint_id')
    .select([
      'webhook_deliveries.id',
      'webhook_events.event_id as eventId',
      'webhook_events.type',
      'webhook_events.body',
      'webhook_endpoints.url',
      'webhook_endpoints.enabled',
      'webhook_endpoints.secret',
      'webhook_endpoints.previous_secret as previousSecret',
      'webhook_endpoints.previous_until as previousUntil',
    ])
    .where('webhook_deliveries.id', 'in', ids)
    .execute();
}

export async function leaseDeliveries(trx: Trx, ids: number[], lease: string, until: number): Promise<void> {
  await trx.updateTable('webhook_deliveries').set({ lease, next_at: until }).where('id', 'in', ids).execute();
}

/** Fails deliveries unattempted (their endpoint is disabled): `recover` sends them later. */
export async function failDeliveries(trx: Trx, ids: number[], now: number): Promise<void> {
  await trx.updateTable('webhook_deliveries').set({ status: 'failed', next_at: null, lease: null, updated_at: now }).where('id', 'in', ids).execute();
}

/** Makes deliveries due again at once, where the lease still holds them. */
export async function releaseDeliveries(trx: Trx, lease: string, ids: number[], now: number): Promise<void> {
  await trx.updateTable('webhook_deliveries').set({ lease: null, next_at: now }).where('id', 'in', ids).where('lease', '=', lease).execute();
}

/**
 * Which of these deliveries still exist, held until the transaction ends (FOR KEY SHARE on
 * PostgreSQL, the write lock on SQLite): an endpoint deleted while an attempt was under way took
 * its deliveries with it, and an attempt written for one would break the foreign key.
 */
export async function existingDeliveries(trx: Trx, ids: number[]): Promise<Set<number>> {
  if (!ids.length) return new Set();
  const query = trx.selectFrom('webhook_deliveries').select('id').where('id', 'in', ids);
  const rows = await (dialectOf(trx) === 'postgres' ? query.forKeyShare() : query).execute();
  return new Set(rows.map((r) => Number(r.id)));
}

export async function insertAttempts(trx: Trx, rows: Insertable<WebhookAttemptsTable>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 200)
    await trx
      .insertInto('webhook_attempts')
      .values(rows.slice(i, i + 200))
      .execute();
}

/** Deliveries delivered under one lease, in one statement. */
export async function markDelivered(trx: Trx, lease: string, ids: number[], at: number): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set((eb) => ({ status: 'delivered', attempts: eb('attempts', '+', 1), next_at: null, lease: null, updated_at: at }))
    .where('id', 'in', ids)
    .where('lease', '=', lease)
    .execute();
}

/** A failed attempt's delivery: pending again at `next`, or failed; while its lease still holds it. */
export async function markAttempted(
  trx: Trx,
  id: number,
  lease: string,
  set: { status: 'pending' | 'failed'; attempts: number; next_at: number | null; updated_at: number },
): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({ ...set, lease: null })
    .where('id', '=', id)
    .where('lease', '=', lease)
    .execute();
}

export const endpointHealth = (t: Tenant, endpointId: number) =>
  t.selectFrom('webhook_endpoints').select(['url', 'enabled', 'failing_since']).where('id', '=', endpointId).executeTakeFirst();

export async function setEndpointHealth(
  t: Tenant,
  endpointId: number,
  set: { last_delivery_at: number; last_status: number | null; failing_since: number | null; enabled?: number; disabled_reason?: string },
): Promise<void> {
  await t.updateTable('webhook_endpoints').set(set).where('id', '=', endpointId).execute();
}

/** Deliveries waiting for an attempt, and events not yet fanned out: the queue's depth. */
export async function queueDepth(db: Db): Promise<number> {
  const [pending, unsequenced] = await Promise.all([
    db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', PENDING)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('webhook_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('body', 'is', null)
      .executeTakeFirstOrThrow(),
  ]);
  return Number(pending.n) + Number(unsequenced.n);
}

/** When the oldest delivery not yet delivered or failed was written, if there is one. */
export async function oldestPending(db: Db): Promise<number | null> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min<number>('created_at').as('at'))
    .where('status', '=', PENDING)
    .executeTakeFirst();
  return row?.at == null ? null : Number(row.at);
}

/** Whether any organisation has an endpoint (thread.ts starts the delivery thread only then). */
export const anyEndpoint = async (db: Db) => (await db.selectFrom('webhook_endpoints').select('id').limit(1).executeTakeFirst()) !== undefined;
