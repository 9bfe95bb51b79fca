import { recordAudit } from '../audit/audit.js';
import type { Database } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import { makeCtx, StaleCache, type Ctx, type Organisation } from '../core/context.js';
import { localDate, startOfDate } from '../core/calendar.js';
import { inTransaction } from '../core/transaction.js';
import { ApiError, badRequest, conflict, notFound } from '../core/errors.js';
import type { Keyring } from '../keys/keyring.js';
import { unseal } from '../keys/sealing.js';
import { findLicenceRow } from '../licences/repo.js';
import { issueLicence, reinstateLicence, renewLicence, revokeLicence, type IssueCaches, type Joined, type LicenceAnswer } from '../licences/service.js';
import { queueLicenceEmail } from '../mail/queue.js';
import { findOrganisationById } from '../orgs/repo.js';
import { findProductRow } from '../products/repo.js';
import { shapeOf } from '../products/shape.js';
import {
  countDelivery,
  findEventRow,
  findIntegrationRow,
  findLine,
  findPaddleCustomer,
  findSubscriptionLink,
  insertEventRow,
  insertLine,
  insertLink,
  insertPayment,
  insertRevocation,
  lockIntegration,
  markReinstated,
  paidLicences,
  revocationsBy,
  revokedByEvent,
  savePaddleCustomer,
  subscriptionLicences,
  stampFailure,
  updateEventRow,
  updateIntegrationRow,
  updateLink,
  waitingBefore,
  waitingEvents,
  type EventRow,
  type IntegrationRow,
} from './repo.js';
import type { MappingInput } from './schemas.js';
import { entryOf } from './entries.js';
import { actorOf, authorizeSave, sealContext, toIntegration } from './service.js';
import { SIGNATURE_HEADER, verifySignature, type Provider } from './signature.js';
import { PADDLE } from './paddle.js';
import type { EventFormat, Json, Order, OrderLine, Reading } from './reading.js';
import { STRIPE } from './stripe.js';

/** Outcomes a repeat applies again rather than answers (DESIGN.md 22). */
const UNSETTLED = new Set(['FAILED', 'WAITING']);
/** The outcomes that name what an event did, in the order its answer prefers them. */
const CHANGES = ['ISSUED', 'RENEWED', 'REVOKED', 'REINSTATED'];
/** An event received this long after it was made is IGNORED, so the ledger's 90 days outlast any replay. */
const TOO_OLD_MS = 30 * 86_400_000;
/** A Paddle transaction whose customer has not come this long after it is FAILED (a retry still applies it). */
const WAIT_MS = 72 * 3_600_000;
const NEVER_CAME = 'no customer.created or customer.updated came within 72 hours';

/** Each provider's envelope and reader. */
const FORMATS: Record<Provider, EventFormat> = { stripe: STRIPE, paddle: PADDLE };

/** An admitted delivery: the event's id and type, as its provider's envelope names them, and its body. */
interface Delivered {
  id: string;
  type: string;
  body: Json;
}

export interface HookAnswer {
  eventId: string;
  outcome: string;
  duplicate: boolean;
  lids: string[];
}

export interface HookDeps {
  database: Database;
  masterKey: Buffer;
  keyring: Keyring;
  caches: IssueCaches;
  /** The service's public URL: the record `integration.failed` carries names its hook URL. */
  publicUrl: string;
  /** `licensor_integration_events_total{provider,outcome}`: each answer the hook gives. */
  counted: (provider: Provider, outcome: string) => void;
}

/** A connection as a hook's delivery finds it. */
export type HookIntegration = IntegrationRow;

/** One delivery: judged (admitDelivery), then applied once (applyEvent). */
export async function receiveDelivery(deps: HookDeps, org: Organisation, row: IntegrationRow, headers: Record<string, unknown>, raw: Buffer) {
  const now = Date.now();
  const answer = await applyEvent(deps, org, row, await admitDelivery(deps, org, row, headers, raw, now), now);
  deps.counted(row.provider, answer.outcome);
  return answer;
}

/** The connection a hook's path names: another provider's path, or another organisation's id, is none (404). */
export async function findHookIntegration(database: Database, org: Organisation, provider: Provider, id: string): Promise<IntegrationRow> {
  const row = /^[1-9][0-9]{0,14}$/.test(id) ? await findIntegrationRow(tenant(database.db, org.id), Number(id)) : undefined;
  if (!row || row.provider !== provider) throw notFound(`no ${provider} integration ${id}`);
  return row;
}

/**
 * Judges a delivery's signature and body (DESIGN.md 22's refusals after 404, 415 and 413, in
 * order): a refused signature stamps the connection at most once a minute and writes nothing
 * else; a disabled connection writes nothing (the provider retries).
 */
async function admitDelivery(
  deps: HookDeps,
  org: Organisation,
  row: IntegrationRow,
  headers: Record<string, unknown>,
  raw: Buffer,
  now: number,
): Promise<Delivered> {
  const header = headers[SIGNATURE_HEADER[row.provider]];
  const secret = unseal(deps.masterKey, row.secret, sealContext(org.id, row.id)).toString('utf8');
  const verdict = verifySignature(row.provider, typeof header === 'string' ? header : undefined, raw, secret, Math.floor(now / 1000));
  if (!verdict.ok) {
    await stampFailure(tenant(deps.database.db, org.id), row.id, verdict.failure, now);
    throw badRequest(verdict.reason);
  }
  if (row.enabled !== 1) throw new ApiError(503, 'this integration is disabled');
  let event: unknown;
  try {
    event = JSON.parse(raw.toString('utf8'));
  } catch {
    throw badRequest('the body is not JSON');
  }
  const { idField, typeField } = FORMATS[row.provider];
  const body = event !== null && typeof event === 'object' && !Array.isArray(event) ? (event as Json) : undefined;
  const id = body?.[idField];
  const type = body?.[typeField];
  if (!body || typeof id !== 'string' || id.length === 0 || id.length > 255 || typeof type !== 'string' || type.length > 255) {
    throw badRequest(`the body is not an event: a JSON object with its ${idField} and ${typeField}`);
  }
  return { id, type, body };
}

/** What applying an event did; `order` kept while FAILED or WAITING, for a retry. */
interface Result {
  outcome: string;
  error: string | null;
  lids: string[];
  order: Order | null;
}

const answerOf = (row: Pick<EventRow, 'event_id' | 'outcome' | 'lids'>, duplicate: boolean): HookAnswer => ({
  eventId: row.event_id,
  outcome: row.outcome,
  duplicate,
  lids: JSON.parse(row.lids) as string[],
});

/** What an event asks, read once: an event received over 30 days after it was made is IGNORED "too old". */
function readingOf(format: EventFormat, event: Json, now: number): Reading {
  const made = format.madeAt(event);
  if (made !== null && now - made > TOO_OLD_MS) return { kind: 'IGNORED', error: 'too old' };
  return format.read(event);
}

/**
 * Applies an event once per (connection, event id) (DESIGN.md 22). A repeat of an applied event
 * answers its stored outcome; a repeat of a FAILED or WAITING one applies it again. Every change
 * is made under the connection row's lock, each order line once, and the ledger entry is written
 * under it too, read again there: of ten deliveries at once, one writes it and the others answer it.
 */
async function applyEvent(deps: HookDeps, org: Organisation, row: IntegrationRow, event: Delivered, now: number): Promise<HookAnswer> {
  const t = tenant(deps.database.db, org.id);
  const stored = await findEventRow(t, row.id, event.id);
  if (stored && !UNSETTLED.has(stored.outcome)) {
    await countDelivery(t, stored.id, now);
    return answerOf(stored, true);
  }
  const settled = await settle(deps, org, row, event, readingOf(FORMATS[row.provider], event.body, now), now, true);
  return answerOf(settled.entry, settled.duplicate);
}

/**
 * `POST /integrations/{id}/events/{eventId}/retry`: a FAILED or WAITING event applied again from
 * what its entry kept, as a repeat would, not counted as a delivery; any other outcome 409.
 */
export async function retryEvent(deps: HookDeps, ctx: Ctx, integrationId: number, eventId: string) {
  authorizeSave(ctx);
  const row = await findIntegrationRow(ctx.tenant, integrationId);
  if (!row) throw notFound(`no integration ${integrationId}`);
  const stored = await findEventRow(ctx.tenant, row.id, eventId);
  if (!stored) throw notFound(`integration ${integrationId} has no event ${eventId}`);
  if (!UNSETTLED.has(stored.outcome)) throw conflict(`event ${eventId} was ${stored.outcome}: only a FAILED or WAITING event is retried`);
  const reading: Reading =
    stored.retry_order === null ? { kind: 'FAILED', error: stored.error ?? 'not applied' } : { kind: 'order', order: JSON.parse(stored.retry_order) as Order };
  return entryOf((await settle(deps, ctx.org, row, { id: stored.event_id, type: stored.type }, reading, ctx.now, false)).entry);
}

/** Thrown inside an event's transaction when an order line is refused: everything the event changed rolls back. */
class NotApplied extends Error {
  constructor(
    readonly error: string,
    readonly order: Order,
  ) {
    super(error);
  }
}

/**
 * Applies what an event asks and writes its ledger entry in one transaction under the connection
 * row's lock (DESIGN.md 22), the entry read again there first: of ten deliveries at once, one
 * applies and the others answer its outcome. Every licence change joins that transaction (the
 * context's `within`), so an order line refused rolls back the lines before it and the event is
 * FAILED with nothing applied. A customer's event applies the WAITING transactions of its
 * customer after it commits, each as an event of its own; under the lock either that finds the
 * entry or the entry finds the customer.
 */
async function settle(
  deps: HookDeps,
  org: Organisation,
  row: IntegrationRow,
  event: { id: string; type: string },
  reading: Reading,
  now: number,
  delivery: boolean,
): Promise<{ entry: EventRow; duplicate: boolean }> {
  const ctx = makeCtx(deps.database, org, { kind: 'system', name: actorOf(row) }, now);
  const write = (work: (joined: Ctx) => Promise<Result>) =>
    inTransaction(ctx, async (t) => {
      await lockIntegration(t, row.id);
      const entry = await findEventRow(t, row.id, event.id);
      if (entry && !UNSETTLED.has(entry.outcome)) {
        if (delivery) await countDelivery(t, entry.id, now);
        return { entry: (await findEventRow(t, row.id, event.id))!, duplicate: delivery };
      }
      const result = await work({ ...ctx, tenant: t, within: t });
      return { entry: await writeEntry(deps, t, ctx, row, event, entry, result, delivery), duplicate: false };
    });
  let settled: { entry: EventRow; duplicate: boolean };
  try {
    settled = await write((joined) => resultOf(deps, joined, row, event.id, reading));
  } catch (err) {
    if (!(err instanceof NotApplied)) throw err;
    settled = await write(async () => ({ outcome: 'FAILED', error: err.error, lids: [], order: err.order }));
  }
  if (reading.kind === 'customer' && !settled.duplicate) await applyWaiting(deps, org, row, reading.customer, now);
  return settled;
}

/** The event's ledger entry, written or rewritten with its outcome; a FAILED one audited (auditFailure). */
async function writeEntry(
  deps: HookDeps,
  t: Tenant,
  ctx: Ctx,
  row: IntegrationRow,
  event: { id: string; type: string },
  entry: EventRow | undefined,
  result: Result,
  delivery: boolean,
): Promise<EventRow> {
  const { now } = ctx;
  const written = {
    outcome: result.outcome,
    error: result.error,
    lids: JSON.stringify(result.lids),
    retry_order: UNSETTLED.has(result.outcome) && result.order ? JSON.stringify(result.order) : null,
  };
  const counted = delivery ? { deliveries: (entry?.deliveries ?? 0) + 1, last_delivery_at: now } : {};
  if (entry) await updateEventRow(t, entry.id, { ...written, ...counted });
  else
    await insertEventRow(t, {
      integration_id: row.id,
      event_id: event.id,
      type: event.type,
      ...written,
      deliveries: 1,
      last_delivery_at: now,
      received_at: now,
    });
  await updateIntegrationRow(t, row.id, { last_event_at: now });
  const settled = (await findEventRow(t, row.id, event.id))!;
  if (result.outcome === 'FAILED') await auditFailure(t, ctx, deps.publicUrl, settled);
  return settled;
}

/**
 * A connection's first FAILED event of a UTC clock hour is audited `integration.failed` and raises
 * that webhook with the connection's record and the ledger entry, both as written (DESIGN.md 22);
 * later ones of that hour only count in `failedEvents`. Read under the connection's lock.
 */
async function auditFailure(t: Tenant, ctx: Ctx, publicUrl: string, entry: EventRow): Promise<void> {
  const hour = Math.floor(ctx.now / 3_600_000);
  const current = await findIntegrationRow(t, entry.integration_id);
  if (!current || Number(current.failed_hour) === hour) return;
  await updateIntegrationRow(t, current.id, { failed_hour: hour });
  await recordAudit(t, ctx, {
    action: 'integration.failed',
    subjectType: 'integration',
    subjectId: current.id,
    summary: `Could not apply ${entry.type} ${entry.event_id}: ${entry.error ?? 'not applied'}`,
    details: { integrationId: current.id, eventId: entry.event_id, type: entry.type, error: entry.error },
    event: async () => ({ integration: await toIntegration(t, publicUrl, ctx.org.slug, current), event: entryOf(entry) }),
  });
}

async function resultOf(deps: HookDeps, ctx: Ctx, row: IntegrationRow, eventId: string, reading: Reading): Promise<Result> {
  if (reading.kind === 'payment') {
    await insertPayment(ctx.tenant, row.id, reading.payment, reading.order);
    return { outcome: 'UNCHANGED', error: null, lids: [], order: null };
  }
  if (reading.kind === 'revoke') return revocation(ctx, row, eventId, reading);
  if (reading.kind === 'reinstate') return reinstatement(ctx, row, eventId, reading.cause);
  if (reading.kind === 'customer') return customerSeen(ctx, row, reading);
  if (reading.kind !== 'order') return { outcome: reading.kind, error: reading.error, lids: [], order: null };
  const mappings = JSON.parse(row.mappings) as MappingInput[];
  const mapped = reading.order.lines.flatMap((line) => {
    const mapping = mappings.find((m) => m.match === line.match);
    return mapping ? [{ line, mapping }] : [];
  });
  if (mapped.length === 0) return { outcome: 'IGNORED', error: 'no line of the order is mapped', lids: [], order: null };
  // What a retry needs is the order as read: a Paddle order's email is looked up again then, never kept in the ledger.
  const kept = reading.order;
  const order = FORMATS[row.provider].customersApart ? await withCustomer(ctx.tenant, row.id, kept) : kept;
  if (!order) return { outcome: 'WAITING', error: 'waiting for the customer: no customer.created or customer.updated yet', lids: [], order: kept };
  const outcomes: Array<{ outcome: string; lid: string | null }> = [];
  for (const { line, mapping } of mapped) {
    try {
      outcomes.push(await applyLine(deps, ctx, row, eventId, order, line, mapping));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      throw new NotApplied(err.message, kept);
    }
  }
  // A subscription's paid event that issued a licence replaces those of the prices it no longer names (a plan change).
  const subscription = order.renews && outcomes.some((o) => o.outcome === 'ISSUED') ? order.lines.find((l) => l.subscription !== null)?.subscription : null;
  if (subscription) {
    const keepPrices = order.lines.map((l) => l.match);
    const replaced = await revocation(ctx, row, eventId, { kind: 'revoke', target: { subscription, keepPrices }, reason: 'plan changed', cause: null });
    outcomes.push(...replaced.lids.map((lid) => ({ outcome: 'REVOKED', lid })));
  }
  return { ...summary(outcomes), error: null, order: null };
}

/**
 * A Paddle order with its customer's email and name, as the connection's latest customer event
 * has them; null while none came (the order waits). An order naming no customer cannot wait for
 * one: issuing it is refused for want of an email.
 */
async function withCustomer(t: Tenant, integrationId: number, order: Order): Promise<Order | null> {
  if (order.customer === null) return order;
  const seen = await findPaddleCustomer(t, integrationId, order.customer);
  return seen ? { ...order, email: seen.email, name: seen.name } : null;
}

/** A Paddle customer event (UNCHANGED): its email and name kept, the latest by `occurred_at`. */
async function customerSeen(ctx: Ctx, row: IntegrationRow, reading: Extract<Reading, { kind: 'customer' }>): Promise<Result> {
  await inTransaction(ctx, (t) => savePaddleCustomer(t, row.id, reading));
  return { outcome: 'UNCHANGED', error: null, lids: [], order: null };
}

/** Each WAITING transaction of a customer just seen, applied again, its ledger entry taking the new outcome. */
async function applyWaiting(deps: HookDeps, org: Organisation, row: IntegrationRow, customer: string, now: number): Promise<void> {
  for (const waiting of await waitingEvents(tenant(deps.database.db, org.id), row.id)) {
    const order = JSON.parse(waiting.retry_order ?? 'null') as Order | null;
    if (order?.customer !== customer) continue;
    await settle(deps, org, row, { id: waiting.event_id, type: waiting.type }, { kind: 'order', order }, now, false);
  }
}

/**
 * The hourly task's part (DESIGN.md 22): a WAITING event received over 72 h ago becomes FAILED,
 * counted and audited as any FAILED one (its order kept, so a retry still applies it).
 */
export async function expireWaiting(database: Database, publicUrl: string, now: number): Promise<void> {
  for (const waiting of await waitingBefore(database.db, now - WAIT_MS)) {
    const org = await findOrganisationById(database.db, waiting.org_id);
    const row = org && (await findIntegrationRow(tenant(database.db, org.id), waiting.integration_id));
    if (!org || !row) continue;
    const ctx = makeCtx(database, org, { kind: 'system', name: actorOf(row) }, now);
    await inTransaction(ctx, async (t) => {
      await lockIntegration(t, row.id);
      // Read again under the lock: a customer event may have applied it meanwhile.
      const entry = await findEventRow(t, row.id, waiting.event_id);
      if (entry?.outcome !== 'WAITING') return;
      await updateEventRow(t, entry.id, { outcome: 'FAILED', error: NEVER_CAME });
      await auditFailure(t, ctx, publicUrl, { ...entry, outcome: 'FAILED', error: NEVER_CAME });
    });
  }
}

/** A licence revoked or reinstated concurrently by a repeat of this event: read again, as it is now. */
async function settledAgain(t: Tenant, lid: string, revoked: boolean, byThisEvent: () => Promise<boolean>) {
  const now = await findLicenceRow(t, lid);
  if ((now.revoked === 1) === revoked && (await byThisEvent())) return { outcome: revoked ? 'REVOKED' : 'REINSTATED', lid };
  return { outcome: 'UNCHANGED', lid: null };
}

/**
 * Revokes what a refund, a dispute, a pause or a cancellation names (DESIGN.md 22): a payment's
 * licences (the lines it paid) or a subscription's; a cancellation taking effect within an hour of
 * the last period end changes nothing (the term runs out). Revoking a revoked licence is UNCHANGED.
 */
async function revocation(ctx: Ctx, row: IntegrationRow, eventId: string, reading: Extract<Reading, { kind: 'revoke' }>): Promise<Result> {
  const { target } = reading;
  const licences =
    'payment' in target
      ? await paidLicences(ctx.tenant, row.id, target.payment)
      : (await subscriptionLicences(ctx.tenant, row.id, target.subscription)).filter((l) => !target.keepPrices?.includes(l.price_ref));
  if (licences.length === 0) return { outcome: 'IGNORED', error: 'payment' in target ? 'payment not linked' : 'nothing linked', lids: [], order: null };
  const outcomes: Array<{ outcome: string; lid: string | null }> = [];
  for (const licence of licences) {
    const byThisEvent = () => revokedByEvent(ctx.tenant, row.id, eventId, licence.id);
    if ('subscription' in target && target.endedAt !== undefined && 'period_end' in licence && licence.period_end !== null) {
      if ((target.endedAt ?? ctx.now) > Number(licence.period_end) - 3_600_000) {
        outcomes.push({ outcome: 'UNCHANGED', lid: null });
        continue;
      }
    }
    if ((await findLicenceRow(ctx.tenant, licence.lid)).revoked === 1) {
      outcomes.push(await settledAgain(ctx.tenant, licence.lid, true, byThisEvent));
      continue;
    }
    const joined: Joined = {
      details: { integrationId: row.id, eventId, customer: null, subscription: 'subscription' in target ? target.subscription : null, order: null },
      write: async (t, changed) => {
        await insertRevocation(t, {
          integration_id: row.id,
          licence_id: changed.id,
          event_id: eventId,
          cause: reading.cause,
          revoked_at: ctx.now,
          reinstated_by: null,
        });
      },
    };
    try {
      await revokeLicence(ctx, licence.lid, reading.reason, joined);
      outcomes.push({ outcome: 'REVOKED', lid: licence.lid });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      outcomes.push(await settledAgain(ctx.tenant, licence.lid, true, byThisEvent));
    }
  }
  return { ...summary(outcomes), error: null, order: null };
}

/** Reinstates what a dispute or a pause revoked, each licence only while no operator touched it since (its revocation as written). */
async function reinstatement(ctx: Ctx, row: IntegrationRow, eventId: string, cause: string): Promise<Result> {
  const outcomes: Array<{ outcome: string; lid: string | null }> = [];
  for (const revoked of await revocationsBy(ctx.tenant, row.id, cause)) {
    const byThisEvent = async () => (await revocationsBy(ctx.tenant, row.id, cause)).some((r) => r.id === revoked.id && r.reinstated_by === eventId);
    const licence = await findLicenceRow(ctx.tenant, revoked.lid);
    if (revoked.reinstated_by !== null || licence.revoked !== 1 || Number(licence.revoked_at) !== Number(revoked.revoked_at)) {
      outcomes.push(revoked.reinstated_by === eventId ? { outcome: 'REINSTATED', lid: revoked.lid } : { outcome: 'UNCHANGED', lid: null });
      continue;
    }
    const joined: Joined = {
      details: { integrationId: row.id, eventId, customer: null, subscription: cause.startsWith('pause:') ? cause.slice(6) : null, order: null },
      write: (t) => markReinstated(t, revoked.id, eventId),
    };
    try {
      await reinstateLicence(ctx, revoked.lid, joined);
      outcomes.push({ outcome: 'REINSTATED', lid: revoked.lid });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      outcomes.push(await settledAgain(ctx.tenant, revoked.lid, false, byThisEvent));
    }
  }
  return { ...summary(outcomes), error: null, order: null };
}

function summary(outcomes: Array<{ outcome: string; lid: string | null }>) {
  const changed = outcomes.filter((o) => o.lid !== null && CHANGES.includes(o.outcome));
  return { outcome: changed[0]?.outcome ?? 'UNCHANGED', lids: changed.map((o) => o.lid!) };
}

/** A line applied before: what it did when this event applied it, else nothing for this event. */
async function appliedBefore(t: Tenant, row: IntegrationRow, eventId: string, line: OrderLine) {
  const applied = await findLine(t, row.id, line.ref);
  if (!applied) return undefined;
  return applied.event_id === eventId ? { outcome: applied.outcome, lid: applied.lid } : { outcome: 'UNCHANGED', lid: null };
}

/** Issues or renews for one mapped line, once; a cached product found changed is read again and the line applied again. */
async function applyLine(deps: HookDeps, ctx: Ctx, row: IntegrationRow, eventId: string, order: Order, line: OrderLine, mapping: MappingInput) {
  for (;;) {
    const before = await appliedBefore(ctx.tenant, row, eventId, line);
    if (before) return before;
    try {
      return await changeFor(deps, ctx, row, eventId, order, line, mapping);
    } catch (err) {
      if (!(err instanceof StaleCache)) throw err;
    }
  }
}

/**
 * The term's end when it follows the subscription: the start of the first local date whose
 * start is at or after the period's end (36 hours after a date's start is always the next date).
 */
function followingEnd(periodEnd: number, timeZone: string): number {
  const date = localDate(periodEnd, timeZone);
  const start = startOfDate(date, timeZone);
  return start >= periodEnd ? start : startOfDate(localDate(start + 36 * 3_600_000, timeZone), timeZone);
}

async function changeFor(deps: HookDeps, ctx: Ctx, row: IntegrationRow, eventId: string, order: Order, line: OrderLine, mapping: MappingInput) {
  const follows = mapping.validityMonths === undefined || mapping.validityMonths === null;
  if (follows && line.periodEnd === null) throw badRequest('no period');
  const expiresAt = follows ? followingEnd(line.periodEnd!, ctx.org.timezone) : undefined;
  const details = { integrationId: row.id, eventId, customer: order.customer, subscription: line.subscription, order: order.order };
  const claimLine = (t: Tenant, licenceId: number, outcome: string) =>
    insertLine(t, {
      integration_id: row.id,
      line_ref: line.ref,
      event_id: eventId,
      licence_id: licenceId,
      outcome,
      order_ref: order.order,
      payment_ref: order.payment,
      applied_at: ctx.now,
    });
  const link = order.renews && line.subscription !== null ? await findSubscriptionLink(ctx.tenant, row.id, line.subscription, line.match) : undefined;
  if (link) {
    if (line.periodEnd !== null && link.period_end !== null && line.periodEnd <= Number(link.period_end)) return { outcome: 'UNCHANGED', lid: null };
    const joined: Joined = {
      expiresAt,
      details,
      write: async (t, licence) => {
        await claimLine(t, licence.id, 'RENEWED');
        await updateLink(t, link.id, { period_end: line.periodEnd, order_ref: order.order, payment_ref: order.payment });
        if (row.send_on_renew === 1) await queueLicenceEmail(t.db, { orgId: t.orgId, lid: licence.lid, trigger: 'renewed', actor: actorOf(row), now: ctx.now });
      },
    };
    const input = { graceDays: mapping.graceDays ?? undefined, validityMonths: mapping.validityMonths ?? undefined };
    const body = (await renewLicence(ctx, deps.keyring, deps.caches, link.lid, input, null, joined)) as LicenceAnswer;
    return { outcome: 'RENEWED', lid: body.lid };
  }
  if (order.email === null) throw badRequest('the order names no customer email');
  const product = await findProductRow(ctx.tenant, mapping.productId);
  if (!product) throw badRequest(`the mapped product ${mapping.productId} no longer exists`);
  const shape = shapeOf(product);
  const licenceType = mapping.licenceType ?? shape.licenceType;
  const joined: Joined = {
    expiresAt,
    details,
    write: async (t, licence) => {
      await claimLine(t, licence.id, 'ISSUED');
      await insertLink(t, {
        integration_id: row.id,
        licence_id: licence.id,
        customer_ref: order.customer,
        subscription_ref: line.subscription,
        price_ref: line.match,
        order_ref: order.order,
        payment_ref: order.payment,
        period_end: line.periodEnd,
        created_at: ctx.now,
      });
      if (row.send_on_issue === 1) await queueLicenceEmail(t.db, { orgId: t.orgId, lid: licence.lid, trigger: 'issued', actor: actorOf(row), now: ctx.now });
    },
  };
  const input = {
    productId: mapping.productId,
    customer: { name: order.name ?? order.email, email: order.email },
    licenceType,
    ...(licenceType === 'HYBRID' ? { activation: 'ONLINE' as const } : {}),
    ...(follows ? {} : { validityMonths: mapping.validityMonths! }),
    graceDays: mapping.graceDays ?? undefined,
    maxMachines: (mapping.maxMachines ?? shape.maxMachines) * line.quantity,
    params: mapping.params,
    meters: mapping.meters ?? undefined,
    ...(mapping.updatesMonths !== undefined ? { updatesMonths: mapping.updatesMonths } : {}),
  };
  const body = (await issueLicence(ctx, deps.keyring, deps.caches, input, null, undefined, joined)) as LicenceAnswer;
  return { outcome: 'ISSUED', lid: body.lid };
}
