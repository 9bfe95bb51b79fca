import { randomBytes } from 'node:crypto';
import type net from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import { recordAudit } from '../audit/audit.js';
import { lockName, transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { iso } from '../http/schemas.js';
import { attempt, type Outcome } from './send.js';
import { signingKeys } from './service.js';
import { scanTerms } from './terms.js';

/** DESIGN.md 15: the waits after the 1st to 7th failed attempt; the 8th failure is final. */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
const RETRY_AFTER_CAP_MS = 3_600_000;
const DISABLE_AFTER_MS = 5 * 86_400_000;
const KEEP_MS = 30 * 86_400_000;
/** Longer than an attempt can take: a claim older than this belongs to a process that died. */
const LEASE_MS = 60_000;
const POLL_MS = 500;
const TERM_SCAN_MS = 60_000;
const PRUNE_MS = 3_600_000;
const SEQUENCE_BATCH = 500;
export const CONCURRENCY = { total: 32, perEndpoint: 8 };
/** Database work of attempts (reading one, recording its outcome) at once: the API keeps the rest of the pool. */
const DATABASE_SLOTS = 2;

interface Claimed {
  id: number;
  orgId: number;
  endpointId: number;
  lease: string;
  attempts: number;
}

/**
 * The delivery loop every service process runs (DESIGN.md 15). Each turn it numbers the events
 * committed since the last turn and fans them out to their endpoints, claims due deliveries (a
 * lease written in a transaction: `FOR UPDATE SKIP LOCKED` on PostgreSQL, the write lock on
 * SQLite) and makes their attempts without waiting for them, within a bound per endpoint and in
 * all. A process that dies mid-attempt leaves a lease that runs out, and the attempt is made again.
 * Time is `Date.now()`, so tests move it with fake timers and call `drain()`.
 */
export class Outbox {
  private timer: NodeJS.Timeout | null = null;
  private turn: Promise<void> | null = null;
  private readonly inFlight = new Map<number, Promise<void>>();
  private readonly perEndpoint = new Map<number, number>();
  private lastScan = 0;
  private lastPrune = 0;
  private stopped = false;
  private again = false;
  private readonly outcomes: Counter<'outcome'>;
  private slotsFree = DATABASE_SLOTS;
  private readonly slotWaiters: Array<() => void> = [];

  constructor(
    private readonly database: Database,
    private readonly masterKey: Buffer,
    private readonly allowed: net.BlockList,
    private readonly log: FastifyBaseLogger,
    registry: Registry,
  ) {
    this.outcomes = new Counter({ name: 'webhook_attempts_total', help: 'Webhook attempts by outcome (delivered, retrying, failed)', labelNames: ['outcome'], registers: [registry] });
    const db = database.db;
    new Gauge({
      name: 'webhook_queue_depth',
      help: 'Webhook deliveries waiting for an attempt, and events not yet fanned out',
      registers: [registry],
      async collect() {
        const [pending, unsequenced] = await Promise.all([
          db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow(),
          db.selectFrom('webhook_events').select((eb) => eb.fn.countAll<number>().as('n')).where('body', 'is', null).executeTakeFirstOrThrow(),
        ]);
        this.set(Number(pending.n) + Number(unsequenced.n));
      },
    });
    new Gauge({
      name: 'webhook_oldest_pending_seconds',
      help: 'Age of the oldest webhook delivery not yet delivered or failed',
      registers: [registry],
      async collect() {
        const row = await db.selectFrom('webhook_deliveries').select((eb) => eb.fn.min<number>('created_at').as('at')).where('status', '=', 'pending').executeTakeFirst();
        this.set(row?.at == null ? 0 : Math.max(0, (Date.now() - Number(row.at)) / 1000));
      },
    });
  }

  start(): void {
    const loop = () => {
      this.timer = setTimeout(async () => {
        await this.tick().catch((err: unknown) => this.log.error({ err }, 'webhook delivery turn failed'));
        if (!this.stopped) loop();
      }, POLL_MS);
    };
    loop();
  }

  /** Stops claiming; attempts already made finish (their leases would otherwise make them again later). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.turn;
    await Promise.all(this.inFlight.values());
  }

  /** One turn, never two at once in this process; asked for during one, another follows it. */
  tick(): Promise<void> {
    if (this.turn) {
      this.again = true;
      return this.turn;
    }
    this.turn = (async () => {
      do {
        this.again = false;
        await this.work();
      } while (this.again && !this.stopped);
    })().finally(() => (this.turn = null));
    return this.turn;
  }

  /** Turns until nothing is due and nothing is in flight (tests, the benchmark). */
  async drain(): Promise<void> {
    this.lastScan = 0;
    for (;;) {
      await this.tick();
      if (this.inFlight.size === 0 && !(await this.due())) return;
      await Promise.race([...this.inFlight.values(), new Promise((resolve) => setTimeout(resolve, 10))]);
    }
  }

  private async work(): Promise<void> {
    if (this.stopped) return;
    const now = Date.now();
    if (now - this.lastScan >= TERM_SCAN_MS) {
      this.lastScan = now;
      await scanTerms(this.database, now);
    }
    while ((await this.sequence(now)) === SEQUENCE_BATCH);
    await this.claim(now);
    if (now - this.lastPrune >= PRUNE_MS) {
      this.lastPrune = now;
      await this.database.db.deleteFrom('webhook_events').where('created_at', '<', now - KEEP_MS).execute();
    }
  }

  private async due(): Promise<boolean> {
    const db = this.database.db;
    const [event, delivery] = await Promise.all([
      db.selectFrom('webhook_events').select('id').where('body', 'is', null).limit(1).executeTakeFirst(),
      db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'pending').where('next_at', '<=', Date.now()).limit(1).executeTakeFirst(),
    ]);
    return event !== undefined || delivery !== undefined;
  }

  /**
   * Numbers committed events per organisation in the order read, stores each body once (the same
   * bytes for every attempt) and writes a delivery per subscribed endpoint: pending, or failed
   * with no attempt for a disabled endpoint, so `recover` can send it later.
   */
  private async sequence(now: number): Promise<number> {
    const db = this.database.db;
    if (!(await db.selectFrom('webhook_events').select('id').where('body', 'is', null).limit(1).executeTakeFirst())) return 0;
    return transaction(this.database, async (trx) => {
      await lockName(this.database, trx, 'webhook-sequence');
      const events = await trx.selectFrom('webhook_events').select(['id', 'org_id', 'type', 'data', 'created_at']).where('body', 'is', null).orderBy('id').limit(SEQUENCE_BATCH).execute();
      const byOrg = new Map<number, typeof events>();
      for (const event of events) byOrg.set(event.org_id, [...(byOrg.get(event.org_id) ?? []), event]);
      for (const [orgId, orgEvents] of byOrg) {
        const t = tenant(trx, orgId);
        const state = await t.selectFrom('webhook_state').select('last_sequence').executeTakeFirst();
        let sequence = state?.last_sequence ?? 0;
        const endpoints = (await t.selectFrom('webhook_endpoints').select(['id', 'events', 'enabled', 'created_at']).execute()).map((e) => ({ ...e, events: new Set(JSON.parse(e.events) as string[]) }));
        const deliveries = [];
        for (const event of orgEvents) {
          sequence += 1;
          const body = `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(iso(event.created_at))},"sequence":${sequence},"data":${event.data}}`;
          await trx.updateTable('webhook_events').set({ sequence, body }).where('id', '=', event.id).execute();
          for (const endpoint of endpoints) {
            if (endpoint.created_at > event.created_at || !(endpoint.events.has('*') || endpoint.events.has(event.type))) continue;
            const enabled = endpoint.enabled === 1;
            deliveries.push({ org_id: orgId, endpoint_id: endpoint.id, event_id: event.id, status: enabled ? ('pending' as const) : ('failed' as const), attempts: 0, next_at: enabled ? now : null, lease: null, created_at: now, updated_at: now });
          }
        }
        for (let i = 0; i < deliveries.length; i += 200) await trx.insertInto('webhook_deliveries').values(deliveries.slice(i, i + 200)).execute();
        if (state) await t.updateTable('webhook_state').set({ last_sequence: sequence }).execute();
        else await t.insertInto('webhook_state', { last_sequence: sequence, since: now }).execute();
      }
      return events.length;
    });
  }

  /** Leases due deliveries this process has room for, and starts their attempts. */
  private async claim(now: number): Promise<void> {
    const room = CONCURRENCY.total - this.inFlight.size;
    if (room <= 0) return;
    const full = [...this.perEndpoint].filter(([, n]) => n >= CONCURRENCY.perEndpoint).map(([id]) => id);
    const db = this.database.db;
    let query = db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'pending').where('next_at', '<=', now);
    if (full.length) query = query.where('endpoint_id', 'not in', full);
    if (!(await query.limit(1).executeTakeFirst())) return;
    const lease = randomBytes(12).toString('hex');
    const claimed = await transaction(this.database, async (trx) => {
      let due = trx.selectFrom('webhook_deliveries').select(['id', 'org_id', 'endpoint_id', 'attempts']).where('status', '=', 'pending').where('next_at', '<=', now);
      if (full.length) due = due.where('endpoint_id', 'not in', full);
      due = due.orderBy('next_at').limit(room * 4);
      const rows = await (this.database.dialect === 'postgres' ? due.forUpdate().skipLocked() : due).execute();
      const taken: Claimed[] = [];
      const counts = new Map(this.perEndpoint);
      for (const row of rows) {
        if (taken.length >= room || (counts.get(row.endpoint_id) ?? 0) >= CONCURRENCY.perEndpoint) continue;
        counts.set(row.endpoint_id, (counts.get(row.endpoint_id) ?? 0) + 1);
        taken.push({ id: row.id, orgId: row.org_id, endpointId: row.endpoint_id, lease, attempts: row.attempts });
      }
      if (taken.length) await trx.updateTable('webhook_deliveries').set({ lease, next_at: now + LEASE_MS }).where('id', 'in', taken.map((c) => c.id)).execute();
      return taken;
    });
    for (const delivery of claimed) {
      this.perEndpoint.set(delivery.endpointId, (this.perEndpoint.get(delivery.endpointId) ?? 0) + 1);
      const running = this.deliver(delivery)
        .catch((err: unknown) => this.log.error({ err, delivery: delivery.id }, 'webhook attempt failed to record'))
        .finally(() => {
          this.inFlight.delete(delivery.id);
          const left = (this.perEndpoint.get(delivery.endpointId) ?? 1) - 1;
          if (left > 0) this.perEndpoint.set(delivery.endpointId, left);
          else this.perEndpoint.delete(delivery.endpointId);
          // Its room goes to the next due delivery now, not at the next poll.
          if (!this.stopped) this.tick().catch((err: unknown) => this.log.error({ err }, 'webhook delivery turn failed'));
        });
      this.inFlight.set(delivery.id, running);
    }
  }

  /** Runs `work` when one of the loop's database slots is free. */
  private async withSlot<T>(work: () => Promise<T>): Promise<T> {
    if (this.slotsFree === 0) await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    else this.slotsFree--;
    try {
      return await work();
    } finally {
      const next = this.slotWaiters.shift();
      if (next) next();
      else this.slotsFree++;
    }
  }

  private async deliver(delivery: Claimed): Promise<void> {
    const t = tenant(this.database.db, delivery.orgId);
    const row = await this.withSlot(() => t
      .selectFrom('webhook_deliveries')
      .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
      .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_deliveries.endpoint_id')
      .select(['webhook_events.event_id as eventId', 'webhook_events.type', 'webhook_events.body', 'webhook_endpoints.url', 'webhook_endpoints.enabled', 'webhook_endpoints.secret', 'webhook_endpoints.previous_secret', 'webhook_endpoints.previous_until', 'webhook_endpoints.id as endpointId'])
      .where('webhook_deliveries.id', '=', delivery.id)
      .where('webhook_deliveries.lease', '=', delivery.lease)
      .executeTakeFirst());
    if (!row) return;
    if (row.enabled !== 1) {
      await t.updateTable('webhook_deliveries').set({ status: 'failed', next_at: null, lease: null, updated_at: Date.now() }).where('id', '=', delivery.id).where('lease', '=', delivery.lease).execute();
      return;
    }
    const now = Date.now();
    const secrets = signingKeys(this.masterKey, { id: row.endpointId, org_id: delivery.orgId, secret: row.secret, previous_secret: row.previous_secret, previous_until: row.previous_until }, now);
    const outcome = await attempt(row.url, this.allowed, { id: row.eventId, body: row.body!, secrets }, now);
    this.outcomes.inc({ outcome: await this.withSlot(() => recordOutcome(this.database, delivery, row.type, outcome)) });
  }
}

const delivered = (outcome: Outcome) => outcome.httpStatus !== null && outcome.httpStatus >= 200 && outcome.httpStatus < 300;

/** When a failed delivery is tried next: the schedule, or a longer Retry-After up to an hour; null when it has failed for good. */
export function nextAttemptAt(attempts: number, outcome: Outcome, type: string): number | null {
  if (type === 'webhook.test' || outcome.httpStatus === 410 || attempts > RETRY_DELAYS_MS.length) return null;
  const scheduled = RETRY_DELAYS_MS[attempts - 1]!;
  const asked = outcome.retryAfter === null ? 0 : Math.min(outcome.retryAfter * 1000, RETRY_AFTER_CAP_MS);
  return outcome.at + Math.max(scheduled, asked);
}

/**
 * Writes an attempt and what follows from it, in one transaction: the delivery's status, the
 * endpoint's last status, and disabling the endpoint on a 410 or after five days of failures.
 * The delivery changes only while this attempt's lease still holds it.
 */
export async function recordOutcome(
  database: Database,
  delivery: Pick<Claimed, 'id' | 'orgId' | 'endpointId' | 'lease' | 'attempts'>,
  type: string,
  outcome: Outcome,
): Promise<'delivered' | 'retrying' | 'failed'> {
  const now = outcome.at;
  const ok = delivered(outcome);
  const attempts = delivery.attempts + 1;
  const next = ok ? null : nextAttemptAt(attempts, outcome, type);
  const status = ok ? 'delivered' : next === null ? 'failed' : 'pending';
  await transaction(database, async (trx) => {
    const t = tenant(trx, delivery.orgId);
    await t.insertInto('webhook_attempts', { delivery_id: delivery.id, at: now, http_status: outcome.httpStatus, duration_ms: outcome.durationMs, response: outcome.response, error: outcome.error }).execute();
    await t
      .updateTable('webhook_deliveries')
      .set({ status, attempts, next_at: next, lease: null, updated_at: now })
      .where('id', '=', delivery.id)
      .where('lease', '=', delivery.lease)
      .execute();
    if (ok) {
      await t.updateTable('webhook_endpoints').set({ last_delivery_at: now, last_status: outcome.httpStatus, failing_since: null }).where('id', '=', delivery.endpointId).execute();
      return;
    }
    const endpoint = await t.selectFrom('webhook_endpoints').select(['url', 'enabled', 'failing_since']).where('id', '=', delivery.endpointId).executeTakeFirst();
    if (!endpoint) return;
    const failingSince = endpoint.failing_since ?? now;
    const reason =
      endpoint.enabled !== 1 ? null
      : outcome.httpStatus === 410 ? 'the endpoint answered 410 Gone'
      : now - failingSince >= DISABLE_AFTER_MS ? 'every attempt failed for 5 days'
      : null;
    await t
      .updateTable('webhook_endpoints')
      .set({ last_delivery_at: now, last_status: outcome.httpStatus, failing_since: failingSince, ...(reason ? { enabled: 0, disabled_reason: reason } : {}) })
      .where('id', '=', delivery.endpointId)
      .execute();
    if (reason) {
      await recordAudit(t, 'webhooks', now, { action: 'webhook.disabled', subjectType: 'webhook', subjectId: delivery.endpointId, summary: `Disabled webhook endpoint ${endpoint.url}: ${reason}`, details: { reason } });
    }
  });
  return status === 'pending' ? 'retrying' : status;
}
