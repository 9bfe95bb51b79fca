import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { createProduct } from '../licence-helpers.js';
import { parseMime, startSmtp } from '../mail-helpers.js';

const SECRET = 'pdl_ntfset_01paddletestsecret0123456789';
const STRIPE_SECRET = 'whsec_paddle_file_stripe_secret_0123456789';
const DAY = 86_400_000;

let h: Harness;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let product: { id: number };
let seq = 0;

const nowS = () => Math.floor(Date.now() / 1000);
const rfc3339 = (ms: number) => new Date(ms).toISOString();

/** Paddle's `Paddle-Signature`: HMAC-SHA256 of `ts:body`, one `h1` per secret given (two while a secret is rolled). */
const paddleSignature = (payload: string, secrets = [SECRET], ts = nowS()) =>
  [`ts=${ts}`, ...secrets.map((secret) => `h1=${createHmac('sha256', secret).update(`${ts}:${payload}`).digest('hex')}`)].join(';');

function deliver(id: number, payload: string, headers: Record<string, string> = {}, provider = 'paddle') {
  return h.request('POST', `/o/acme/api/hooks/${provider}/${id}`, {
    body: payload,
    headers: { 'content-type': 'application/json', 'paddle-signature': paddleSignature(payload), ...headers },
  });
}

const mapping = (match: string, extra: Record<string, unknown> = {}) => ({ match, productId: product.id, ...extra });
const create = (body: Record<string, unknown>) =>
  h.admin('POST', '/integrations', { provider: 'paddle', name: `paddle-${++seq}`, signingSecret: SECRET, mappings: [mapping('pri_basic')], ...body });

/** A notification as Paddle sends it: the envelope around the entity. */
const notification = (type: string, data: Record<string, unknown>, occurredAt = Date.now()) =>
  JSON.stringify({ event_id: `evt_${++seq}`, event_type: type, occurred_at: rfc3339(occurredAt), notification_id: `ntf_${seq}`, data });

const customerEvent = (type: string, customer: string, email: string, name: string | null, occurredAt?: number) =>
  notification(type, { id: customer, email, name, status: 'active', locale: 'en', marketing_consent: false }, occurredAt);

/** A completed transaction: one item per price, the subscription's billing period ending at `endsAt` (Unix s). */
function transaction(opts: {
  id?: string;
  customer: string;
  subscription?: string | null;
  endsAt: number;
  prices: Array<{ price: string; quantity?: number; oneTime?: boolean }>;
}) {
  const id = opts.id ?? `txn_${++seq}`;
  return notification('transaction.completed', {
    id,
    status: 'completed',
    origin: 'subscription_recurring',
    customer_id: opts.customer,
    subscription_id: opts.subscription === undefined ? `sub_${seq}` : opts.subscription,
    billing_period: { starts_at: rfc3339((opts.endsAt - 30 * 86_400) * 1000), ends_at: rfc3339(opts.endsAt * 1000) },
    items: opts.prices.map((p) => ({
      price: { id: p.price, product_id: 'pro_1', billing_cycle: p.oneTime ? null : { interval: 'month', frequency: 1 } },
      quantity: p.quantity ?? 1,
      proration: null,
    })),
    details: { totals: { total: '1000', currency_code: 'USD' } },
  });
}

const adjustment = (type: string, transactionId: string, fields: Record<string, unknown>) =>
  notification(type, { id: `adj_${++seq}`, transaction_id: transactionId, customer_id: 'ctm_any', items: [], ...fields });

/** The start of the first UTC date at or after the period's end (Unix s), as an ISO string. */
const followingEnd = (end: number) => {
  const ms = end * 1000;
  const start = Date.parse(`${new Date(ms).toISOString().slice(0, 10)}T00:00:00.000Z`);
  return new Date(start >= ms ? start : start + DAY).toISOString();
};

const licence = async (lid: string) => (await h.admin('GET', `/licenses/${lid}`)).data;
const entry = async (integrationId: number, eventId: string) =>
  (await h.admin('GET', `/integrations/${integrationId}/events?limit=200`)).data.items.find((e: { eventId: string }) => e.eventId === eventId);

beforeAll(async () => {
  smtp = await startSmtp();
  h = await startHarness(smtp.env);
  product = await createProduct(h.admin, { licenceType: 'ONLINE', allowedLicenceTypes: ['ONLINE', 'OFFLINE'] });
});
afterAll(async () => {
  await h?.close();
  await smtp?.close();
});

describe('the Paddle hook: refusals in order (DESIGN 22)', () => {
  let id: number;
  beforeAll(async () => {
    id = (await create({ sendOnIssue: false })).data.id;
  });
  const body = () => notification('address.created', { id: 'add_1' });

  it("404 for the Paddle path of a Stripe connection, the Stripe path of a Paddle one, and an unknown id; the hook URL names Paddle's path", async () => {
    const stripe = await h.admin('POST', '/integrations', {
      provider: 'stripe',
      name: `stripe-${++seq}`,
      signingSecret: STRIPE_SECRET,
      mappings: [{ match: 'price_x', productId: product.id }],
    });
    expect((await deliver(stripe.data.id, body())).statusCode).toBe(404);
    expect((await deliver(id, body(), {}, 'stripe')).statusCode).toBe(404);
    expect((await deliver(999_999, body())).statusCode).toBe(404);
    expect((await deliver(id, body())).statusCode).toBe(200);
    expect((await h.admin('GET', `/integrations/${id}`)).data.hookUrl).toBe(`${h.config.publicUrl}/o/acme/api/hooks/paddle/${id}`);
  });

  it('accepts two h1 while a secret is rolled; refuses a bad one (400, lastFailure SIGNATURE), an old timestamp and a missing header', async () => {
    const { id: rolled } = (await create({ sendOnIssue: false })).data;
    const next = 'pdl_ntfset_01paddlenextsecret987654321';
    expect((await h.admin('PUT', `/integrations/${rolled}`, { signingSecret: next })).statusCode).toBe(200);
    // While Paddle rolls the secret it signs with the old and the new one.
    const payload = body();
    const both = await deliver(rolled, payload, { 'paddle-signature': paddleSignature(payload, [SECRET, next]) });
    expect(both.statusCode).toBe(200);
    expect(both.data).toMatchObject({ outcome: 'IGNORED', duplicate: false });
    const onlyOld = await deliver(rolled, body());
    expect(onlyOld.statusCode).toBe(400);
    expect(onlyOld.data.error).toContain('signature');
    expect((await h.admin('GET', `/integrations/${rolled}`)).data.lastFailure).toBe('SIGNATURE');
    const forged = body();
    expect((await deliver(rolled, forged, { 'paddle-signature': `ts=${nowS()};h1=${'0'.repeat(64)}` })).statusCode).toBe(400);
    const stale = body();
    expect((await deliver(rolled, stale, { 'paddle-signature': paddleSignature(stale, [next], nowS() - 301) })).statusCode).toBe(400);
    expect((await deliver(rolled, body(), { 'paddle-signature': '' })).statusCode).toBe(400);
  });

  it("400 for a body without Paddle's event_id and event_type, writing nothing; an unknown type and an event over 30 days old IGNORED", async () => {
    const { id: fresh } = (await create({ sendOnIssue: false })).data;
    for (const bad of ['{"id":"evt_x","type":"transaction.completed"}', '{"event_type":"transaction.completed"}', '{"event_id":"evt_y"}', '[1]']) {
      const refused = await deliver(fresh, bad);
      expect(refused.statusCode, bad).toBe(400);
      expect(refused.data.error).toContain('event_id and event_type');
    }
    expect(await h.database.db.selectFrom('integration_events').select('id').where('integration_id', '=', fresh).execute()).toEqual([]);
    const unknown = body();
    expect((await deliver(fresh, unknown)).data).toMatchObject({ outcome: 'IGNORED', duplicate: false, lids: [] });
    expect((await deliver(fresh, unknown)).data).toMatchObject({ outcome: 'IGNORED', duplicate: true });
    const old = notification('transaction.completed', { id: 'txn_old' }, Date.now() - 31 * DAY);
    const ignored = await deliver(fresh, old);
    expect(ignored.data.outcome).toBe('IGNORED');
    expect((await entry(fresh, ignored.data.eventId)).error).toBe('too old');
  });
});

describe('Paddle customers and WAITING transactions (DESIGN 22)', () => {
  it('a transaction before its customer WAITS, keeping no email; customer.created applies it, issuing to that email', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('pri_early')] })).data;
    const endsAt = nowS() + 20 * 86_400;
    const payload = transaction({ customer: 'ctm_early', subscription: 'sub_early', endsAt, prices: [{ price: 'pri_early', quantity: 3 }] });
    const early = await deliver(id, payload);
    expect(early.statusCode).toBe(200);
    expect(early.data).toMatchObject({ outcome: 'WAITING', duplicate: false, lids: [] });
    expect((await h.admin('GET', `/integrations/${id}`)).data.waitingEvents).toBe(1);
    expect((await h.admin('GET', `/integrations/${id}/events?outcome=WAITING`)).data.total).toBe(1);

    const seen = await deliver(id, customerEvent('customer.created', 'ctm_early', 'early@customer.example', 'Early Buyer'));
    expect(seen.data).toMatchObject({ outcome: 'UNCHANGED', lids: [] });
    const applied = await entry(id, early.data.eventId);
    expect(applied).toMatchObject({ outcome: 'ISSUED', error: null, deliveries: 1 });
    const [lid] = applied.lids;
    expect(await licence(lid)).toMatchObject({
      licensee: 'Early Buyer',
      licenseeEmail: 'early@customer.example',
      maxMachines: 3,
      expiresAt: followingEnd(endsAt),
      issuedBy: `integration/${(await h.admin('GET', `/integrations/${id}`)).data.name}`,
    });
    expect((await h.admin('GET', `/integrations/${id}`)).data.waitingEvents).toBe(0);
    const row = await h.database.db.selectFrom('integration_events').select('retry_order').where('event_id', '=', early.data.eventId).executeTakeFirstOrThrow();
    expect(row.retry_order).toBeNull();
    // Paddle's delivery of it again is answered as applied, and counted.
    expect((await deliver(id, payload)).data).toMatchObject({ outcome: 'ISSUED', duplicate: true, lids: [lid] });
    expect((await entry(id, early.data.eventId)).deliveries).toBe(2);
  });

  it('a customer and its transaction delivered at once issue one licence, whichever is applied first', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('pri_atOnce')] })).data;
    const endsAt = nowS() + 20 * 86_400;
    const pairs = Array.from({ length: 6 }, (_, i) => ({
      sale: transaction({ customer: `ctm_atonce${i}`, endsAt, prices: [{ price: 'pri_atOnce' }] }),
      customer: customerEvent('customer.created', `ctm_atonce${i}`, `at-once-${i}@customer.example`, null),
    }));
    const answers = await Promise.all(pairs.flatMap((p) => [deliver(id, p.sale), deliver(id, p.customer)]));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(12).fill(200));
    const entries = (await h.admin('GET', `/integrations/${id}/events?limit=50`)).data.items;
    const sales = entries.filter((e: { type: string }) => e.type === 'transaction.completed');
    expect(sales.map((e: { outcome: string }) => e.outcome)).toEqual(Array(6).fill('ISSUED'));
    expect(new Set(sales.flatMap((e: { lids: string[] }) => e.lids)).size).toBe(6);
  });

  it('keeps only the latest email by occurred_at: an older customer.updated arriving late changes nothing', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('pri_latest', { validityMonths: 12 })] })).data;
    await deliver(id, customerEvent('customer.updated', 'ctm_latest', 'new@customer.example', 'New Name', Date.now() - 60_000));
    await deliver(id, customerEvent('customer.created', 'ctm_latest', 'old@customer.example', 'Old Name', Date.now() - 3_600_000));
    const issued = await deliver(id, transaction({ customer: 'ctm_latest', subscription: null, endsAt: nowS(), prices: [{ price: 'pri_latest' }] }));
    expect(issued.data.outcome).toBe('ISSUED');
    expect(await licence(issued.data.lids[0])).toMatchObject({ licensee: 'New Name', licenseeEmail: 'new@customer.example' });
  });

  it('a WAITING transaction becomes FAILED 72 h after it came (the hourly task), audited integration.failed; a retry applies it once the customer came', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('pri_late')] })).data;
    const waiting = await deliver(id, transaction({ customer: 'ctm_late', endsAt: nowS() + 20 * 86_400, prices: [{ price: 'pri_late' }] }));
    expect(waiting.data.outcome).toBe('WAITING');
    const recent = await deliver(id, transaction({ customer: 'ctm_late', endsAt: nowS() + 20 * 86_400, prices: [{ price: 'pri_late' }] }));
    // The clock moves: the first came 73 h ago, the second 71 h ago.
    for (const [eventId, hours] of [
      [waiting.data.eventId, 73],
      [recent.data.eventId, 71],
    ] as const) {
      await h.database.db
        .updateTable('integration_events')
        .set({ received_at: Date.now() - hours * 3_600_000 })
        .where('event_id', '=', eventId)
        .execute();
    }
    const { app } = await h.loggedApp();
    await app.ready();
    await expect.poll(async () => (await entry(id, waiting.data.eventId)).outcome, { timeout: 5_000 }).toBe('FAILED');
    await app.close();
    expect((await entry(id, waiting.data.eventId)).error).toContain('72 hours');
    expect((await entry(id, recent.data.eventId)).outcome).toBe('WAITING');
    expect((await h.admin('GET', `/integrations/${id}`)).data).toMatchObject({ failedEvents: 1, waitingEvents: 1 });
    const audited = (await h.admin('GET', '/dashboard/activity?action=integration.failed&limit=200')).data.items.filter(
      (e: { details: { integrationId: number } }) => e.details.integrationId === id,
    );
    expect(audited).toMatchObject([{ details: { eventId: waiting.data.eventId, type: 'transaction.completed' } }]);
    expect(audited[0].actor).toMatch(/^integration\/paddle-/);

    // The customer comes: the WAITING one is applied, the FAILED one waits for a retry.
    await deliver(id, customerEvent('customer.created', 'ctm_late', 'late@customer.example', null));
    expect((await entry(id, recent.data.eventId)).outcome).toBe('ISSUED');
    expect((await entry(id, waiting.data.eventId)).outcome).toBe('FAILED');
    const retried = await h.admin('POST', `/integrations/${id}/events/${waiting.data.eventId}/retry`);
    expect(retried.data).toMatchObject({ outcome: 'ISSUED', error: null });
    expect((await licence(retried.data.lids[0])).licensee).toBe('late@customer.example');
  });

  it('erasing a customer erases the email and name its Paddle customer entry keeps', async () => {
    const { id } = (await create({ sendOnIssue: false })).data;
    await deliver(id, customerEvent('customer.created', 'ctm_erased', 'Erased@customer.example', 'Erased Buyer'));
    const customer = (await h.admin('POST', '/customers', { name: 'Erased Buyer', email: 'erased@customer.example' })).data;
    expect((await h.admin('POST', `/customers/${customer.id}/erase`)).statusCode).toBe(200);
    const kept = await h.database.db
      .selectFrom('paddle_customers')
      .select(['email', 'name'])
      .where('customer_ref', '=', 'ctm_erased')
      .executeTakeFirstOrThrow();
    expect(kept).toEqual({ email: null, name: null });
  });
});

describe("a Paddle subscription's whole life (DESIGN 22, issue 49's Done when)", () => {
  it('customer, first transaction, two renewals following billing_period.ends_at, an approved full refund: issued, emailed, renewed twice, revoked "refunded"', async () => {
    const { id } = (await create({ mappings: [mapping('pri_wholeLife', { graceDays: 2 })] })).data;
    const email = 'whole-life@customer.example';
    expect((await deliver(id, customerEvent('customer.created', 'ctm_life', email, 'Whole Life'))).data.outcome).toBe('UNCHANGED');
    const sale = (n: number, endsAt: number) =>
      transaction({ id: `txn_life${n}`, customer: 'ctm_life', subscription: 'sub_life', endsAt, prices: [{ price: 'pri_wholeLife' }] });

    const firstEnd = nowS() + 10 * 86_400;
    const first = await deliver(id, sale(1, firstEnd));
    expect(first.data).toMatchObject({ outcome: 'ISSUED', duplicate: false });
    const [lid] = first.data.lids;
    expect(await licence(lid)).toMatchObject({
      status: 'ACTIVE',
      licensee: 'Whole Life',
      licenseeEmail: email,
      expiresAt: followingEnd(firstEnd),
      graceDays: 2,
    });
    // sendOnIssue: the licence email is queued with the licence, then the outbox sends it.
    await expect
      .poll(async () => (await h.admin('GET', `/licenses/${lid}/emails`)).data, { timeout: 10_000 })
      .toMatchObject([{ to: email, trigger: 'issued', status: 'sent' }]);
    const mail = smtp.received.filter((m) => m.to.includes(email));
    expect(mail).toHaveLength(1);
    expect(parseMime(mail[0]!.raw).headers['x-licensor-lid']).toBe(lid);

    const secondEnd = firstEnd + 30 * 86_400;
    expect((await deliver(id, sale(2, secondEnd))).data).toMatchObject({ outcome: 'RENEWED', lids: [lid] });
    expect((await licence(lid)).expiresAt).toBe(followingEnd(secondEnd));
    const thirdEnd = secondEnd + 31 * 86_400;
    const third = sale(3, thirdEnd);
    expect((await deliver(id, third)).data).toMatchObject({ outcome: 'RENEWED', lids: [lid] });
    expect((await licence(lid)).expiresAt).toBe(followingEnd(thirdEnd));
    expect((await deliver(id, third)).data).toMatchObject({ outcome: 'RENEWED', duplicate: true });

    // A refund waiting for Paddle's approval takes nothing back; approved, it revokes.
    const pending = await deliver(id, adjustment('adjustment.created', 'txn_life3', { action: 'refund', type: 'full', status: 'pending_approval' }));
    expect(pending.data.outcome).toBe('IGNORED');
    const approved = await deliver(id, adjustment('adjustment.updated', 'txn_life3', { action: 'refund', type: 'full', status: 'approved' }));
    expect(approved.data).toMatchObject({ outcome: 'REVOKED', lids: [lid] });
    expect(await licence(lid)).toMatchObject({ status: 'REVOKED', revokedReason: 'refunded' });
    const audit = (await h.admin('GET', `/licenses/${lid}/activity`)).data.items.map((e: { action: string }) => e.action);
    expect(audit).toEqual(expect.arrayContaining(['licence.issued', 'licence.renewed', 'licence.revoked']));
    expect(audit.filter((a: string) => a === 'licence.renewed')).toHaveLength(2);
    const issuedEntry = (await h.admin('GET', `/licenses/${lid}/activity`)).data.items.find((e: { action: string }) => e.action === 'licence.issued');
    expect(issuedEntry.details).toMatchObject({ integrationId: id, customer: 'ctm_life', subscription: 'sub_life', order: 'txn_life1' });
    const metrics = (await h.request('GET', '/metrics')).body;
    expect(metrics).toMatch(/licensor_integration_events_total\{provider="paddle",outcome="RENEWED"\} [2-9]/);
    expect(metrics).toMatch(/licensor_integration_events_total\{provider="paddle",outcome="WAITING"\} \d+/);
  });
});

describe('Paddle revocations and reinstatements (DESIGN 22)', () => {
  it('a chargeback revokes "disputed" and its reverse reinstates; a partial refund and a credit are IGNORED; an unlinked transaction IGNORED', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('pri_charged')] })).data;
    await deliver(id, customerEvent('customer.created', 'ctm_charged', 'charged@customer.example', null));
    const [lid] = (
      await deliver(id, transaction({ id: 'txn_charged', customer: 'ctm_charged', endsAt: nowS() + 20 * 86_400, prices: [{ price: 'pri_charged' }] }))
    ).data.lids;
    expect((await deliver(id, adjustment('adjustment.created', 'txn_charged', { action: 'refund', type: 'partial', status: 'approved' }))).data.outcome).toBe(
      'IGNORED',
    );
    expect((await deliver(id, adjustment('adjustment.created', 'txn_charged', { action: 'credit', type: 'full', status: 'approved' }))).data.outcome).toBe(
      'IGNORED',
    );
    const elsewhere = await deliver(id, adjustment('adjustment.created', 'txn_elsewhere', { action: 'refund', type: 'full', status: 'approved' }));
    expect(elsewhere.data.outcome).toBe('IGNORED');
    expect((await entry(id, elsewhere.data.eventId)).error).toBe('payment not linked');
    expect((await deliver(id, adjustment('adjustment.created', 'txn_charged', { action: 'chargeback', type: 'full', status: 'approved' }))).data).toMatchObject(
      {
        outcome: 'REVOKED',
        lids: [lid],
      },
    );
    expect((await licence(lid)).revokedReason).toBe('disputed');
    expect(
      (await deliver(id, adjustment('adjustment.created', 'txn_charged', { action: 'chargeback_reverse', type: 'full', status: 'approved' }))).data,
    ).toMatchObject({ outcome: 'REINSTATED', lids: [lid] });
    expect((await licence(lid)).status).toBe('ACTIVE');
  });

  it('a plan change: the transaction issuing a new price beside a one-time one revokes the licence of the price it no longer names, "plan changed"', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('pri_small'), mapping('pri_large'), mapping('pri_setup', { validityMonths: 0 })] }))
      .data;
    await deliver(id, customerEvent('customer.created', 'ctm_plan', 'plan@customer.example', null));
    const endsAt = nowS() + 20 * 86_400;
    const [small] = (await deliver(id, transaction({ customer: 'ctm_plan', subscription: 'sub_plan', endsAt, prices: [{ price: 'pri_small' }] }))).data.lids;
    const change = await deliver(
      id,
      transaction({ customer: 'ctm_plan', subscription: 'sub_plan', endsAt, prices: [{ price: 'pri_setup', oneTime: true }, { price: 'pri_large' }] }),
    );
    expect(change.data.outcome).toBe('ISSUED');
    const [setup, large, revoked] = change.data.lids;
    expect(revoked).toBe(small);
    expect(await licence(small)).toMatchObject({ status: 'REVOKED', revokedReason: 'plan changed' });
    // The one-time price is paid once: perpetual by its mapping, not following the subscription.
    expect(await licence(setup)).toMatchObject({ status: 'ACTIVE', expiresAt: null });
    expect(await licence(large)).toMatchObject({ status: 'ACTIVE', expiresAt: followingEnd(endsAt) });
  });

  it('a pause revokes, a resume reinstates; trialing, past_due and a scheduled change are UNCHANGED; a cancellation before the period end revokes', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('pri_paused')] })).data;
    await deliver(id, customerEvent('customer.created', 'ctm_paused', 'paused@customer.example', null));
    const endsAt = nowS() + 20 * 86_400;
    const [lid] = (await deliver(id, transaction({ customer: 'ctm_paused', subscription: 'sub_paused', endsAt, prices: [{ price: 'pri_paused' }] }))).data.lids;
    const sub = (type: string, fields: Record<string, unknown> = {}) =>
      notification(type, { id: 'sub_paused', status: 'active', customer_id: 'ctm_paused', scheduled_change: null, canceled_at: null, ...fields });
    expect((await deliver(id, sub('subscription.past_due', { status: 'past_due' }))).data.outcome).toBe('UNCHANGED');
    expect((await deliver(id, sub('subscription.updated', { status: 'trialing' }))).data.outcome).toBe('UNCHANGED');
    const scheduled = { action: 'cancel', effective_at: rfc3339(endsAt * 1000), resume_at: null };
    expect((await deliver(id, sub('subscription.updated', { status: 'active', scheduled_change: scheduled }))).data.outcome).toBe('UNCHANGED');
    expect((await deliver(id, sub('subscription.paused', { status: 'paused' }))).data).toMatchObject({ outcome: 'REVOKED', lids: [lid] });
    expect((await licence(lid)).revokedReason).toBe('subscription paused');
    expect((await deliver(id, sub('subscription.resumed'))).data).toMatchObject({ outcome: 'REINSTATED', lids: [lid] });
    expect((await deliver(id, sub('subscription.updated', { status: 'paused' }))).data.outcome).toBe('REVOKED');
    expect((await deliver(id, sub('subscription.updated', { status: 'active' }))).data).toMatchObject({ outcome: 'REINSTATED', lids: [lid] });

    // Canceled at the period's end changes nothing (the term runs out); canceled weeks before revokes.
    expect((await deliver(id, sub('subscription.canceled', { status: 'canceled', canceled_at: rfc3339((endsAt - 600) * 1000) }))).data.outcome).toBe(
      'UNCHANGED',
    );
    expect((await deliver(id, sub('subscription.updated', { status: 'canceled', canceled_at: rfc3339(Date.now()) }))).data).toMatchObject({
      outcome: 'REVOKED',
      lids: [lid],
    });
    expect((await licence(lid)).revokedReason).toBe('subscription canceled');
    expect((await deliver(id, sub('subscription.created'))).data.outcome).toBe('IGNORED');
  });
});
