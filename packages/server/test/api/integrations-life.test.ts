// DESIGN.md 22, issue 49's "Done when": a Stripe subscription's whole life as signed events over real HTTP.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { createProduct } from '../licence-helpers.js';
import { decoded, parseMime, startSmtp, type Part } from '../mail-helpers.js';
import { invoicePaid, nowS, stripeEvent, stripeHeaders } from '../stripe-helpers.js';

const SECRET = 'whsec_whole_life_test_secret_0123456789';
const DAY_S = 86_400;

let h: Harness;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let base: string;
let token: string;
let product: { id: number; productKey: string };

beforeAll(async () => {
  smtp = await startSmtp();
  h = await startHarness(smtp.env);
  // The test sends the outbox's mail itself (drain), so it knows when a mail has gone.
  await h.app.mail.stop();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/o/${h.slug}/api`;
  token = await h.createToken(['licenses:write', 'integrations:write', 'activity:read']);
  product = await createProduct(h.admin, { name: 'Widget Pro' });
});
afterAll(async () => {
  await h?.close();
  await smtp?.close();
});

/** The Management API over HTTP, with a token. */
async function api(method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, data: (await response.json()) as any };
}

/** One signed delivery of `payload` to the connection's hook URL, as Stripe makes it. */
async function deliver(hookUrl: string, payload: string) {
  const response = await fetch(hookUrl, { method: 'POST', headers: stripeHeaders(payload, SECRET), body: payload });
  return { status: response.status, data: (await response.json()) as any };
}

async function connect(name: string) {
  const created = await api('POST', '/integrations', {
    provider: 'stripe',
    name,
    signingSecret: SECRET,
    mappings: [{ match: 'price_life', productId: product.id }],
  });
  expect(created.status).toBe(201);
  // What to paste in Stripe: the hook on the service's public URL, here served at this test's address.
  expect(created.data.hookUrl).toBe(`${h.config.publicUrl}/o/${h.slug}/api/hooks/stripe/${created.data.id}`);
  return { ...created.data, hookUrl: `${base}/hooks/stripe/${created.data.id}` } as { id: number; name: string; hookUrl: string };
}

/** The start of the first UTC date at or after the period's end: a term that follows the subscription (the organisation's zone is UTC). */
function termEnd(periodEnd: number): string {
  const ms = periodEnd * 1000;
  const start = Date.parse(`${new Date(ms).toISOString().slice(0, 10)}T00:00:00.000Z`);
  return new Date(start >= ms ? start : start + DAY_S * 1000).toISOString();
}

const lastAction = async (lid: string, action: string) =>
  (await api('GET', `/licenses/${lid}/activity?limit=50`)).data.items.find((e: { action: string }) => e.action === action);

describe('a Stripe subscription from first invoice to refund (DESIGN 22)', () => {
  it('issues and emails the licence once, renews it twice, links the payment and revokes it "refunded"', async () => {
    const shop = await connect('stripe-life');
    const actor = `integration/${shop.name}`;
    const subscription = { subscription: 'sub_life', email: 'ada@customer.example' };
    const firstEnd = nowS() + 30 * DAY_S;

    const first = await deliver(shop.hookUrl, invoicePaid({ ...subscription, invoice: 'in_life_1', periodEnd: firstEnd, lines: [{ price: 'price_life' }] }));
    expect(first.status).toBe(200);
    expect(first.data).toMatchObject({ outcome: 'ISSUED', duplicate: false });
    const [lid] = first.data.lids as [string];
    const issued = (await api('GET', `/licenses/${lid}`)).data;
    expect(issued).toMatchObject({ status: 'ACTIVE', expiresAt: termEnd(firstEnd), licensee: 'Buyer One', issuedBy: actor });
    expect(await lastAction(lid, 'licence.issued')).toMatchObject({ actor, details: { integrationId: shop.id, subscription: 'sub_life' } });

    // Emailed on issue: one mail, once, with the licence attached.
    const [queued, ...otherEmails] = (await api('GET', `/licenses/${lid}/emails`)).data;
    expect(otherEmails).toEqual([]);
    expect(queued).toMatchObject({ to: 'ada@customer.example', trigger: 'issued', status: 'pending', createdBy: actor });
    expect(await h.app.mail.drain()).toBe(1);
    expect(await h.app.mail.drain()).toBe(0);
    const mails = smtp.received.filter((m) => parseMime(m.raw).headers['x-licensor-lid'] === lid);
    expect(mails.map((m) => m.to)).toEqual([['ada@customer.example']]);
    const attachment = parseMime(mails[0]!.raw).parts[1] as Part;
    expect(attachment.headers['content-disposition']).toContain(`filename=${product.productKey}-${lid}.lic`);
    expect(decoded(attachment)).toBe(issued.licenseString);
    expect((await api('GET', `/licenses/${lid}/emails`)).data[0]).toMatchObject({ id: queued.id, status: 'sent', attempts: 1 });

    // Two renewals, each following its line's period end.
    let periodEnd = firstEnd;
    for (const invoice of ['in_life_2', 'in_life_3']) {
      periodEnd += 30 * DAY_S;
      const renewal = await deliver(shop.hookUrl, invoicePaid({ ...subscription, invoice, periodEnd, lines: [{ price: 'price_life' }] }));
      expect(renewal.data).toMatchObject({ outcome: 'RENEWED', duplicate: false, lids: [lid] });
      expect((await api('GET', `/licenses/${lid}`)).data).toMatchObject({ status: 'ACTIVE', expiresAt: termEnd(periodEnd) });
      expect(await lastAction(lid, 'licence.renewed')).toMatchObject({ actor, details: { integrationId: shop.id, eventId: renewal.data.eventId } });
    }

    // The last invoice's payment, linked to it; then its full refund.
    const link = stripeEvent('invoice_payment.paid', {
      id: 'inpay_life_3',
      invoice: 'in_life_3',
      payment: { type: 'payment_intent', payment_intent: 'pi_life_3' },
    });
    expect((await deliver(shop.hookUrl, link)).data).toMatchObject({ outcome: 'UNCHANGED', lids: [] });
    const refund = await deliver(shop.hookUrl, stripeEvent('charge.refunded', { id: 'ch_life_3', payment_intent: 'pi_life_3', refunded: true }));
    expect(refund.data).toMatchObject({ outcome: 'REVOKED', duplicate: false, lids: [lid] });
    expect((await api('GET', `/licenses/${lid}`)).data).toMatchObject({ status: 'REVOKED', revokedReason: 'refunded', expiresAt: termEnd(periodEnd) });
    expect(await lastAction(lid, 'licence.revoked')).toMatchObject({ actor, details: { integrationId: shop.id, eventId: refund.data.eventId } });

    // Renewals sent no mail (sendOnRenew is off); the ledger holds the five events.
    expect(await h.app.mail.drain()).toBe(0);
    expect(smtp.received.filter((m) => parseMime(m.raw).headers['x-licensor-lid'] === lid)).toHaveLength(1);
    const ledger = (await api('GET', `/integrations/${shop.id}/events`)).data;
    expect(ledger.items.map((e: { type: string; outcome: string }) => [e.type, e.outcome])).toEqual([
      ['charge.refunded', 'REVOKED'],
      ['invoice_payment.paid', 'UNCHANGED'],
      ['invoice.paid', 'RENEWED'],
      ['invoice.paid', 'RENEWED'],
      ['invoice.paid', 'ISSUED'],
    ]);
  });

  it('finds the refunded licence when invoice_payment.paid comes before the invoice.paid it links', async () => {
    const shop = await connect('stripe-early-link');
    const link = stripeEvent('invoice_payment.paid', {
      id: 'inpay_early',
      invoice: 'in_early',
      payment: { type: 'payment_intent', payment_intent: 'pi_early' },
    });
    expect((await deliver(shop.hookUrl, link)).data).toMatchObject({ outcome: 'UNCHANGED', lids: [] });
    const paid = await deliver(
      shop.hookUrl,
      invoicePaid({ subscription: 'sub_early', invoice: 'in_early', periodEnd: nowS() + 30 * DAY_S, lines: [{ price: 'price_life' }] }),
    );
    expect(paid.data.outcome).toBe('ISSUED');
    const refund = await deliver(shop.hookUrl, stripeEvent('charge.refunded', { id: 'ch_early', payment_intent: 'pi_early', refunded: true }));
    expect(refund.data).toMatchObject({ outcome: 'REVOKED', lids: paid.data.lids });
    expect((await api('GET', `/licenses/${paid.data.lids[0]}`)).data).toMatchObject({ status: 'REVOKED', revokedReason: 'refunded' });
  });
});
