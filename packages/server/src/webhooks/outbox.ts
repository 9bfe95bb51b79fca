import { randomBytes } from 'node:crypto';
import type net from 'node:net';
import type { BaseLogger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { recordAudit } from '../audit/audit.js';
import { lockName, transaction, type Database, type Trx } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { iso } from '../core/schemas.js';
import { attempt, type Outcome } from './send.js';
import { signingKeys } from './service.js';
import { scanTerms } from './terms.js';
import {
  anyDue,
  anyUnsequenced,
  claimableDue,
  endpointHealth,
  failDeliveries,
  fanOutEndpoints,
  insertAttempts,
  existingDeliveries,
  insertDeliveries,
  leaseDeliveries,
  markAttempted,
  markDelivered,
  messagesOf,
  numberEvents,
  oldestPending,
  pruneEvents,
  queueDepth,
  releaseDeliveries,
  saveSequence,
  sequenceState,
  setEndpointHealth,
  unsequencedEvents,
} from './repos/queue.js';

/** DESIGN.md 15: the waits after the 1st to 7th failed attempt; the 8th failure is final. */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
const RETRY_AFTER_CAP_MS = 3_600_000;
const DISABLE_AFTER_MS = 5 * 86_400_000;
const KEEP_MS = 30 * 86_400_000;
/** Attempts open at once, per endpoint and in all. */
export const CONCURRENCY = { total: 32, perEndpoint: 8 };
/**
 * Deliveries a process holds (leased by one claim, waiting their turn to be sent) per endpoint
 * and in all: a claim, a write transaction, then serves many attempts rather than a few.
 */
export const HOLD = { total: 256, perEndpoint: 64 };
/**
 * Longer than a held delivery can wait and be attempted (HOLD.perEndpoint / CONCURRENCY.perEndpoint
 * attempts of at most 15 s, one after another): a lease older than this belongs to a process that died.
 */
export const LEASE_MS = 180_000;
const POLL_MS = 500;
/**
 * While attempts finish, the next turn (one transaction: their outcomes, newly committed events,
 * new claims) follows this long after the first of them, gathering the others: on SQLite every
 * transaction holds the one write lock the API's writes wait for.
 */
const TURN_GAP_MS = 100;
const TERM_SCAN_MS = 60_000;
const PRUNE_MS = 3_600_000;
const SEQUENCE_BATCH = 500;

interface Claimed {
  id: number;
  orgId: number;
  endpointId: number;
  lease: string;
  attempts: number;
}

/** What an attempt sends and to whom, read with its claim. */
interface Message {
  eventId: string;
  type: string;
  body: string | null;
  url: string;
  secret: string;
  previousSecret: string | null;
  previousUntil: number | null;
}

/** A delivery leased by this process, with what its attempt sends. */
interface Held {
  delivery: Claimed;
  message: Message;
}

/** An attempt made, waiting for its outcome to be written with others in the next turn. */
interface Made {
  delivery: Claimed;
  type: string;
  outcome: Outcome;
}

/** An endpoint's held deliveries: those waiting their turn, and how many are being attempted. */
interface Queue {
  waiting: Held[];
  sending: number;
}
const holding = (queue: Queue) => queue.waiting.length + queue.sending;

/**
 * The delivery loop every service process runs (DESIGN.md 15), on a thread of its own under
 * `serve` (thread.ts). Each turn is one transaction, written only when there is something to
 * write: the outcomes of attempts made since the last turn, the numbering of events committed
 * since (fanned out to their endpoints), and a claim of due deliveries this process has room for
 * (a lease: `FOR UPDATE SKIP LOCKED` on PostgreSQL, the write lock on SQLite). Held deliveries are
 * attempted within a bound per endpoint and in all, without waiting for the turn. A process that
 * dies leaves leases that run out, and their attempts are made again; one that stops finishes its
 * attempts and hands back what it had not sent. Time is `Date.now()`, so tests move it with fake
 * timers and call `drain()`.
 */
export class Outbox {
  private timer: NodeJS.Timeout | null = null;
  private soonTimer: NodeJS.Timeout | null = null;
  private turn: Promise<void> | null = null;
  private readonly queues = new Map<number, Queue>();
  private held = 0;
  private readonly sends = new Set<Promise<void>>();
  private made: Made[] = [];
  /** Held deliveries given back unattempted (on stop, after a 410): due again at once, for any process. */
  private released: Held[] = [];
  private lastScan = 0;
  private lastPrune = 0;
  private stopped = false;
  private again = false;

  constructor(
    private readonly database: Database,
    private readonly masterKey: Buffer,
    private readonly allowed: net.BlockList,
    private readonly log: Pick<BaseLogger, 'error'>,
    /** Told each attempt's outcome once written, for `/metrics` (`webhookMetrics`), wherever the loop runs. */
    private readonly counted: (outcome: Status) => void,
  ) {}

  start(): void {
    const loop = () => {
      this.timer = setTimeout(async () => {
        await this.tick().catch((err: unknown) => this.log.error({ err }, 'webhook delivery turn failed'));
        if (!this.stopped) loop();
      }, POLL_MS);
    };
    loop();
  }

  /** Stops claiming, finishes the attempts under way, and writes their outcomes and hands back the rest in a last turn. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.soonTimer) clearTimeout(this.soonTimer);
    await this.turn?.catch(() => {});
    for (const queue of this.queues.values()) this.release(queue.waiting.splice(0));
    await Promise.all(this.sends);
    await this.tick();
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
      } while (this.again);
    })().finally(() => (this.turn = null));
    return this.turn;
  }

  /** Turns until nothing is due, held or unwritten (tests, the benchmark). */
  async drain(): Promise<void> {
    this.lastScan = 0;
    for (;;) {
      await this.tick();
      if (this.held === 0 && !this.made.length && !this.released.length && !(await this.due())) return;
      await Promise.race([...this.sends, new Promise((resolve) => setTimeout(resolve, 10))]);
    }
  }

  private async work(): Promise<void> {
    const now = Date.now();
    if (!this.stopped && now - this.lastScan >= TERM_SCAN_MS) {
      this.lastScan = now;
      await scanTerms(this.database, now);
    }
    const made = this.made.splice(0);
    const released = this.released.splice(0);
    const room = this.stopped ? null : this.room();
    const db = this.database.db;
    const unsequenced = !this.stopped && (await anyUnsequenced(db));
    const due = room !== null && (unsequenced || (await anyDue(db, room.full, now)));
    if (!made.length && !released.length && !unsequenced && !due) return;
    const written = await transaction(this.database, async (trx) => {
      const statuses = made.length ? await recordOutcomes(trx, made) : [];
      await releaseHeld(trx, released, now);
      const sequenced = unsequenced ? await this.sequence(trx, now) : 0;
      return { statuses, sequenced, claimed: due ? await this.claim(trx, room!, now) : [] };
    }).catch((err: unknown) => {
      // Written with the next turn; a lease that runs out meanwhile lets the delivery be attempted again.
      this.made.unshift(...made);
      this.released.unshift(...released);
      throw err;
    });
    for (const status of written.statuses) this.counted(status);
    if (written.sequenced === SEQUENCE_BATCH) this.again = true;
    this.hold(written.claimed);
    if (!this.stopped && now - this.lastPrune >= PRUNE_MS) {
      this.lastPrune = now;
      await pruneEvents(db, now - KEEP_MS);
    }
  }

  private async due(): Promise<boolean> {
    const [event, delivery] = await Promise.all([anyUnsequenced(this.database.db), anyDue(this.database.db, [], Date.now())]);
    return event || delivery;
  }

  /** What a claim may take: how many in all, and which endpoints already hold all they may. */
  private room(): { total: number; full: number[] } | null {
    const total = HOLD.total - this.held;
    if (total <= 0) return null;
    return { total, full: [...this.queues].filter(([, q]) => holding(q) >= HOLD.perEndpoint).map(([id]) => id) };
  }

  /**
   * Numbers committed events per organisation in the order read, stores each body once (the same
   * bytes for every attempt) and writes a delivery per subscribed endpoint: pending, or failed
   * with no attempt for a disabled endpoint, so `recover` can send it later.
   */
  private async sequence(trx: Trx, now: number): Promise<number> {
    await lockName(this.database, trx, 'webhook-sequence');
    const events = await unsequencedEvents(trx, SEQUENCE_BATCH);
    const byOrg = new Map<number, typeof events>();
    for (const event of events) byOrg.set(event.org_id, [...(byOrg.get(event.org_id) ?? []), event]);
    for (const [orgId, orgEvents] of byOrg) {
      const t = tenant(trx, orgId);
      const state = await sequenceState(t);
      let sequence = state?.last_sequence ?? 0;
      const endpoints = await fanOutEndpoints(t);
      const deliveries = [];
      const numbered: Array<{ id: number; sequence: number; body: string }> = [];
      for (const event of orgEvents) {
        sequence += 1;
        const body = `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(iso(event.created_at))},"sequence":${sequence},"data":${event.data}}`;
        numbered.push({ id: event.id, sequence, body });
        for (const endpoint of endpoints) {
          if (endpoint.created_at > event.created_at || !endpoint.events.has(event.type)) continue;
          const enabled = endpoint.enabled === 1;
          deliveries.push({
            org_id: orgId,
            endpoint_id: endpoint.id,
            event_id: event.id,
            status: enabled ? ('pending' as const) : ('failed' as const),
            attempts: 0,
            next_at: enabled ? now : null,
            lease: null,
            created_at: now,
            updated_at: now,
          });
        }
      }
      await numberEvents(trx, numbered);
      await insertDeliveries(trx, deliveries);
      await saveSequence(t, state !== undefined, sequence, now);
    }
    return events.length;
  }

  /**
   * Leases the due deliveries this process has room for and reads what their attempts send.
   * Those of a disabled endpoint fail here, unattempted, as if the endpoint had been disabled
   * before they were raised (`recover` sends them later).
   */
  private async claim(trx: Trx, room: { total: number; full: number[] }, now: number): Promise<Held[]> {
    const rows = await claimableDue(trx, this.database.dialect, room.full, now, room.total);
    const lease = randomBytes(12).toString('hex');
    const taken: Claimed[] = [];
    const counts = new Map([...this.queues].map(([id, q]) => [id, holding(q)]));
    for (const row of rows) {
      if ((counts.get(row.endpoint_id) ?? 0) >= HOLD.perEndpoint) continue;
      counts.set(row.endpoint_id, (counts.get(row.endpoint_id) ?? 0) + 1);
      taken.push({ id: row.id, orgId: row.org_id, endpointId: row.endpoint_id, lease, attempts: row.attempts });
    }
    if (!taken.length) return [];
    const ids = taken.map((c) => c.id);
    const messages = new Map((await messagesOf(trx, ids)).map(({ id, ...message }) => [id, message]));
    const held = taken.filter((d) => messages.get(d.id)!.enabled === 1);
    const disabled = taken.filter((d) => messages.get(d.id)!.enabled !== 1).map((d) => d.id);
    if (held.length)
      await leaseDeliveries(
        trx,
        held.map((d) => d.id),
        lease,
        now + LEASE_MS,
      );
    if (disabled.length) await failDeliveries(trx, disabled, now);
    return held.map((delivery) => {
      const { enabled: _, ...message } = messages.get(delivery.id)!;
      return { delivery, message };
    });
  }

  private hold(claimed: Held[]): void {
    for (const held of claimed) {
      let queue = this.queues.get(held.delivery.endpointId);
      if (!queue) this.queues.set(held.delivery.endpointId, (queue = { waiting: [], sending: 0 }));
      queue.waiting.push(held);
      this.held++;
    }
    this.pump();
  }

  private release(held: Held[]): void {
    this.held -= held.length;
    this.released.push(...held);
  }

  /** Starts the attempts of waiting deliveries while there is room, per endpoint and in all. */
  private pump(): void {
    for (const queue of this.queues.values()) {
      while (queue.sending < CONCURRENCY.perEndpoint && this.sends.size < CONCURRENCY.total && queue.waiting.length) {
        const held = queue.waiting.shift()!;
        queue.sending++;
        const sending = this.send(queue, held).finally(() => this.sends.delete(sending));
        this.sends.add(sending);
      }
    }
  }

  private async send(queue: Queue, { delivery, message }: Held): Promise<void> {
    const now = Date.now();
    const endpoint = {
      id: delivery.endpointId,
      org_id: delivery.orgId,
      secret: message.secret,
      previous_secret: message.previousSecret,
      previous_until: message.previousUntil,
    };
    try {
      const outcome = await attempt(
        message.url,
        this.allowed,
        { id: message.eventId, body: message.body!, secrets: signingKeys(this.masterKey, endpoint, now) },
        now,
      );
      this.made.push({ delivery, type: message.type, outcome });
      // A 410 disables the endpoint (recordOutcomes): what waits for it is handed back, to fail unattempted.
      if (outcome.httpStatus === 410) this.release(queue.waiting.splice(0));
    } catch (err) {
      // Left leased: attempted again when the lease runs out.
      this.log.error({ err, delivery: delivery.id }, 'webhook attempt failed');
    } finally {
      queue.sending--;
      this.held--;
      if (!queue.sending && !queue.waiting.length) this.queues.delete(delivery.endpointId);
    }
    this.pump();
    if (!this.stopped && !this.soonTimer) {
      this.soonTimer = setTimeout(() => {
        this.soonTimer = null;
        this.tick().catch((err: unknown) => this.log.error({ err }, 'webhook delivery turn failed'));
      }, TURN_GAP_MS);
    }
  }
}

/** Makes held deliveries due again at once, unattempted, where their lease still holds them. */
async function releaseHeld(trx: Trx, held: Held[], now: number): Promise<void> {
  const byLease = new Map<string, number[]>();
  for (const { delivery } of held) byLease.set(delivery.lease, [...(byLease.get(delivery.lease) ?? []), delivery.id]);
  for (const [lease, ids] of byLease) await releaseDeliveries(trx, lease, ids, now);
}

/**
 * The webhook series of `/metrics`: attempts by outcome (counted by `Outbox` through the function
 * returned), and the queue's depth and oldest pending age, read from the database when scraped.
 */
export function webhookMetrics(registry: Registry, database: Database): (outcome: Status) => void {
  const outcomes = new Counter({
    name: 'webhook_attempts_total',
    help: 'Webhook attempts by outcome (delivered, retrying, failed)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const db = database.db;
  new Gauge({
    name: 'webhook_queue_depth',
    help: 'Webhook deliveries waiting for an attempt, and events not yet fanned out',
    registers: [registry],
    async collect() {
      this.set(await queueDepth(db));
    },
  });
  new Gauge({
    name: 'webhook_oldest_pending_seconds',
    help: 'Age of the oldest webhook delivery not yet delivered or failed',
    registers: [registry],
    async collect() {
      const at = await oldestPending(db);
      this.set(at === null ? 0 : Math.max(0, (Date.now() - at) / 1000));
    },
  });
  return (outcome) => outcomes.inc({ outcome });
}

const delivered = (outcome: Outcome) => outcome.httpStatus !== null && outcome.httpStatus >= 200 && outcome.httpStatus < 300;

/** When a failed delivery is tried next: the schedule, or a longer Retry-After up to an hour; null when it has failed for good. */
export function nextAttemptAt(attempts: number, outcome: Outcome, type: string): number | null {
  if (type === 'webhook.test' || outcome.httpStatus === 410 || attempts > RETRY_DELAYS_MS.length) return null;
  const scheduled = RETRY_DELAYS_MS[attempts - 1]!;
  const asked = outcome.retryAfter === null ? 0 : Math.min(outcome.retryAfter * 1000, RETRY_AFTER_CAP_MS);
  return outcome.at + Math.max(scheduled, asked);
}

export type Status = 'delivered' | 'retrying' | 'failed';

/**
 * Writes attempts and what follows from them, in the caller's transaction: each delivery's status, each
 * endpoint's last status, and disabling an endpoint on a 410 or after five days of failures,
 * judged in the order the attempts were made. A delivery changes only while the lease its
 * attempt was made under still holds it; one deleted meanwhile (with its endpoint) is passed over.
 * Answers the status of each attempt written, in order.
 */
export async function recordOutcomes(trx: Trx, made: Made[]): Promise<Status[]> {
  const existing = await existingDeliveries(
    trx,
    made.map((m) => m.delivery.id),
  );
  const judged = made
    .filter((m) => existing.has(m.delivery.id))
    .map(({ delivery, type, outcome }) => {
      const ok = delivered(outcome);
      const attempts = delivery.attempts + 1;
      const next = ok ? null : nextAttemptAt(attempts, outcome, type);
      return { delivery, outcome, ok, attempts, next, status: ok ? ('delivered' as const) : next === null ? ('failed' as const) : ('pending' as const) };
    });
  const rows = judged.map(({ delivery, outcome: o }) => ({
    org_id: delivery.orgId,
    delivery_id: delivery.id,
    at: o.at,
    http_status: o.httpStatus,
    duration_ms: o.durationMs,
    response: o.response,
    error: o.error,
  }));
  await insertAttempts(trx, rows);
  // Delivered ones, the common case, in a statement per claim (its lease) rather than one each.
  const deliveredByLease = new Map<string, typeof judged>();
  for (const j of judged) if (j.ok) deliveredByLease.set(j.delivery.lease, [...(deliveredByLease.get(j.delivery.lease) ?? []), j]);
  for (const [lease, group] of deliveredByLease)
    await markDelivered(
      trx,
      lease,
      group.map((j) => j.delivery.id),
      Math.max(...group.map((j) => j.outcome.at)),
    );
  for (const j of judged) {
    if (!j.ok)
      await markAttempted(trx, j.delivery.id, j.delivery.lease, {
        status: j.status as 'pending' | 'failed',
        attempts: j.attempts,
        next_at: j.next,
        updated_at: j.outcome.at,
      });
  }
  const byEndpoint = new Map<number, typeof judged>();
  for (const j of [...judged].sort((a, b) => a.outcome.at - b.outcome.at))
    byEndpoint.set(j.delivery.endpointId, [...(byEndpoint.get(j.delivery.endpointId) ?? []), j]);
  for (const [endpointId, attempts] of byEndpoint) {
    const t = tenant(trx, attempts[0]!.delivery.orgId);
    const last = attempts.at(-1)!;
    if (attempts.every((j) => j.ok)) {
      await setEndpointHealth(t, endpointId, { last_delivery_at: last.outcome.at, last_status: last.outcome.httpStatus, failing_since: null });
      continue;
    }
    const endpoint = await endpointHealth(t, endpointId);
    if (!endpoint) continue;
    let failingSince = endpoint.failing_since;
    let reason: string | null = null;
    for (const { ok, outcome } of attempts) {
      failingSince = ok ? null : (failingSince ?? outcome.at);
      if (ok || reason || endpoint.enabled !== 1) continue;
      if (outcome.httpStatus === 410) reason = 'the endpoint answered 410 Gone';
      else if (outcome.at - failingSince! >= DISABLE_AFTER_MS) reason = 'every attempt failed for 5 days';
    }
    await setEndpointHealth(t, endpointId, {
      last_delivery_at: last.outcome.at,
      last_status: last.outcome.httpStatus,
      failing_since: failingSince,
      ...(reason ? { enabled: 0, disabled_reason: reason } : {}),
    });
    if (reason) {
      await recordAudit(
        t,
        { actor: { name: 'webhooks' }, now: last.outcome.at },
        {
          action: 'webhook.disabled',
          subjectType: 'webhook',
          subjectId: endpointId,
          summary: `Disabled webhook endpoint ${endpoint.url}: ${reason}`,
          details: { reason },
        },
      );
    }
  }
  return judged.map((j) => (j.status === 'pending' ? 'retrying' : j.status));
}
