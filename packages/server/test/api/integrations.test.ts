import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/integrations/signature.js';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { ADMIN_PASSWORD, startHarness, type Harness } from '../harness.js';
import { addMonths, createProduct, todayUtc } from '../licence-helpers.js';
import { startSmtp } from '../mail-helpers.js';
import { invoicePaid, nowS, stripe, stripeHeaders } from '../stripe-helpers.js';

const SECRET = 'whsec_integration_test_secret_0123456789';
const DAY = 86_400_000;

let h: Harness;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let product: { id: number };
let seq = 0;

const mapping = (match: string, extra: Record<string, unknown> = {}) => ({ match, productId: product.id, ...extra });
const create = (body: Record<string, unknown>) =>
  h.admin('POST', '/integrations', { provider: 'stripe', name: `shop-${++seq}`, signingSecret: SECRET, mappings: [mapping('price_basic')], ...body });

/** Posts a raw body to a connection's hook, signed by Stripe's own test header unless `headers` say otherwise. */
function deliver(id: number, payload: string, headers: Record<string, string> = {}, slug = 'acme') {
  return h.request('POST', `/o/${slug}/api/hooks/stripe/${id}`, { body: payload, headers: { ...stripeHeaders(payload, SECRET), ...headers } });
}

beforeAll(async () => {
  smtp = await startSmtp();
  h = await startHarness(smtp.env);
  await h.app.mail.stop();
  product = await createProduct(h.admin, { licenceType: 'ONLINE', allowedLicenceTypes: ['ONLINE', 'OFFLINE'] });
});
afterAll(async () => {
  await h?.close();
  await smtp?.close();
});

describe('integrations: the connections (DESIGN 22)', () => {
  it('creates with the defaults, answers no secret (secretSet) and the hook URL; lists, reads, changes and deletes', async () => {
    const created = await create({ name: 'stripe-live' });
    expect(created.statusCode).toBe(201);
    expect(created.data).toMatchObject({
      name: 'stripe-live',
      provider: 'stripe',
      enabled: true,
      sendOnIssue: true,
      sendOnRenew: false,
      secretSet: true,
      mappings: [{ match: 'price_basic', productId: product.id }],
      hookUrl: `${h.config.publicUrl}/o/acme/api/hooks/stripe/${created.data.id}`,
      createdBy: 'admin',
      lastEventAt: null,
      lastFailure: null,
      failedEvents: 0,
      waitingEvents: 0,
    });
    expect(created.body).not.toContain(SECRET);
    const id = created.data.id;
    expect((await h.admin('GET', '/integrations')).data.map((i: { id: number }) => i.id)).toContain(id);
    const changed = await h.admin('PUT', `/integrations/${id}`, { enabled: false, mappings: [mapping('price_pro', { validityMonths: 12 })] });
    expect(changed.statusCode).toBe(200);
    expect(changed.data).toMatchObject({ enabled: false, sendOnIssue: true, mappings: [{ match: 'price_pro', validityMonths: 12 }] });
    expect((await h.admin('PUT', `/integrations/${id}`, { signingSecret: 'whsec_another_secret_value_1234' })).data.secretSet).toBe(true);
    const actions = (await h.admin('GET', '/dashboard/activity?limit=10')).data.items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['integration.created', 'integration.updated', 'integration.secret_replaced']));
    expect((await h.admin('DELETE', `/integrations/${id}`)).statusCode).toBe(204);
    expect((await h.admin('GET', `/integrations/${id}`)).statusCode).toBe(404);
  });

  it('seals the secret and never logs it, at LOG_LEVEL trace either', async () => {
    const { app, lines } = await h.loggedApp();
    const secret = 'whsec_never_logged_secret_42424242';
    const cookie = await h.signIn('admin', ADMIN_PASSWORD);
    const send = (method: string, url: string, body: unknown) => h.request(method, `/o/acme/api${url}`, { app, cookies: { svc_session: cookie }, body });
    const created = await send('POST', '/integrations', { provider: 'stripe', name: 'sealed', signingSecret: secret, mappings: [mapping('price_sealed')] });
    expect(created.statusCode).toBe(201);
    expect((await send('PUT', `/integrations/${created.data.id}`, { signingSecret: `${secret}x` })).statusCode).toBe(200);
    expect(
      (await send('POST', '/integrations', { provider: 'stripe', name: 'sealed', signingSecret: secret, mappings: [mapping('price_sealed')] })).statusCode,
    ).toBe(409);
    const stored = await h.database.db.selectFrom('integrations').select('secret').where('id', '=', created.data.id).executeTakeFirstOrThrow();
    expect(stored.secret).toMatch(/^sealed-v1\$/);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain('never_logged');
    await app.close();
  });

  it('refuses a bad name, a bad secret, a taken name (409), another field, a changed provider', async () => {
    expect((await create({ name: 'Bad Name' })).data.error).toContain('name');
    expect((await create({ signingSecret: 'short' })).data.error).toContain('signingSecret');
    expect((await create({ signingSecret: 'whsec_with a space inside it' })).statusCode).toBe(400);
    expect((await create({ name: 'taken' })).statusCode).toBe(201);
    expect((await create({ name: 'taken' })).statusCode).toBe(409);
    expect((await create({ color: 'blue' })).statusCode).toBe(400);
    const { data } = await create({});
    const moved = await h.admin('PUT', `/integrations/${data.id}`, { provider: 'paddle' });
    expect(moved.statusCode).toBe(400);
    expect(moved.data.error).toContain('provider');
  });

  it('checks every mapping at save, naming mappings[i].<field>', async () => {
    const refusal = async (mappings: unknown[]) => {
      const response = await create({ mappings });
      expect(response.statusCode).toBe(400);
      return response.data.error as string;
    };
    expect(await refusal([mapping('price_a'), mapping('pri_b')])).toContain('mappings[1].match');
    expect(await refusal([mapping('price_a'), mapping('price_a')])).toContain('mappings[1].match');
    expect(await refusal([{ match: 'price_a', productId: 999_999 }])).toContain('mappings[0].productId');
    expect(await refusal([mapping('price_a', { licenceType: 'HYBRID' })])).toContain('mappings[0].licenceType');
    expect(await refusal([mapping('plink_a')])).toContain('mappings[0].validityMonths');
    expect(await refusal([mapping('price_a', { params: { nope: 1 } })])).toContain('mappings[0].params.nope');
    expect((await create({ mappings: [] })).statusCode).toBe(400);
  });

  it('needs integrations:write and licenses:write to save, ORG_ADMIN among members; refuses an ISSUER, a licences token and a platform session', async () => {
    const integrationsOnly = h.as({ token: await h.createToken(['integrations:write']) });
    const noLicences = await integrationsOnly('POST', '/integrations', {
      provider: 'stripe',
      name: 'tok',
      signingSecret: SECRET,
      mappings: [mapping('price_a')],
    });
    expect(noLicences.statusCode).toBe(403);
    expect(noLicences.data.error).toContain('licenses:write');
    expect((await integrationsOnly('GET', '/integrations')).statusCode).toBe(200);
    const both = h.as({ token: await h.createToken(['integrations:write', 'licenses:write']) });
    expect((await both('POST', '/integrations', { provider: 'stripe', name: 'tok', signingSecret: SECRET, mappings: [mapping('price_a')] })).statusCode).toBe(
      201,
    );
    const issuer = await h.createMember('ISSUER');
    expect((await h.as({ cookie: issuer.cookie })('GET', '/integrations')).statusCode).toBe(403);
    // A platform administrator acts as an ORG_ADMIN inside, yet never sees or changes a connection.
    await createPlatformAccount(h.database, { username: 'ops', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
    const login = await h.request('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'platform password 1' } });
    const platform = { svc_platform: login.cookies.find((c) => c.name === 'svc_platform')!.value };
    const inside = (method: string, url: string, body?: unknown) => h.request(method, `/o/${h.slug}/api${url}`, { cookies: platform, body });
    expect((await inside('GET', '/licenses')).statusCode).toBe(200);
    for (const [method, body] of [['GET'], ['POST', { provider: 'stripe', name: 'ops', signingSecret: SECRET, mappings: [mapping('price_a')] }]] as const) {
      const refused = await inside(method, '/integrations', body);
      expect(refused.statusCode, method).toBe(403);
      expect(refused.data.error).toContain('platform');
    }

    // While the organisation is suspended its people are refused, and the hook goes on applying events.
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_suspended', { validityMonths: 1 })] })).data;
    expect((await h.request('PUT', `/platform/api/organisations/${h.slug}`, { cookies: platform, body: { suspended: true } })).statusCode).toBe(200);
    try {
      const refused = await h.admin('GET', '/integrations');
      expect(refused.statusCode).toBe(403);
      expect(refused.data.reason).toBe('ORG_SUSPENDED');
      const applied = await deliver(id, invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_suspended' }] }));
      expect(applied.data.outcome).toBe('ISSUED');
    } finally {
      await h.request('PUT', `/platform/api/organisations/${h.slug}`, { cookies: platform, body: { suspended: false } });
    }
    expect((await h.as({ token: await h.createToken(['licenses:read']) })('GET', '/integrations')).statusCode).toBe(403);
  });

  it('keeps a mapped product from deletion (409)', async () => {
    const mapped = await createProduct(h.admin);
    expect((await create({ mappings: [{ match: 'price_kept', productId: mapped.id }] })).statusCode).toBe(201);
    const refused = await h.admin('DELETE', `/products/${mapped.id}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.data.error).toContain('integration');
  });
});

describe('the Stripe hook: refusals in order (DESIGN 22)', () => {
  let id: number;
  beforeAll(async () => {
    id = (await create({ mappings: [mapping('price_refusals', { validityMonths: 12 })] })).data.id;
  });
  const body = () => JSON.stringify({ id: `evt_r${++seq}`, type: 'customer.created', created: nowS(), data: { object: {} } });

  it('404 for an unknown slug, an unknown id, another provider or another organisation', async () => {
    expect((await deliver(id, body(), {}, 'nowhere')).statusCode).toBe(404);
    expect((await deliver(999_999, body())).statusCode).toBe(404);
    expect((await h.request('POST', '/o/acme/api/hooks/stripe/not-an-id', { body: body() })).statusCode).toBe(404);
    const other = await h.otherOrg();
    expect((await deliver(id, body(), {}, other.slug)).statusCode).toBe(404);
    const paddle = await create({ provider: 'paddle', signingSecret: 'pdl_ntfset_0123456789abcdef', mappings: [mapping('pri_abc', { validityMonths: 12 })] });
    expect((await deliver(paddle.data.id, body())).statusCode).toBe(404);
  });

  it('415 before 413, 413 over 1 MiB, then 400 for the signature (stamping lastFailure once a minute), TIMESTAMP for an old one', async () => {
    const huge = `{"id":"evt_big","type":"x","pad":"${'a'.repeat(1024 * 1024)}"}`;
    expect((await deliver(id, huge, { 'content-type': 'text/plain' })).statusCode).toBe(415);
    const tooLarge = await deliver(id, huge);
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.data.error).toBeTruthy();
    const forged = await deliver(id, body(), { 'stripe-signature': `t=${nowS()},v1=${'0'.repeat(64)}` });
    expect(forged.statusCode).toBe(400);
    expect(forged.data.error).toContain('signature');
    const first = (await h.admin('GET', `/integrations/${id}`)).data;
    expect(first.lastFailure).toBe('SIGNATURE');
    const payload = body();
    const old = stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp: nowS() - 301 });
    expect((await deliver(id, payload, { 'stripe-signature': old })).statusCode).toBe(400);
    // Within the minute the stamp stays as it was.
    expect((await h.admin('GET', `/integrations/${id}`)).data).toMatchObject({ lastFailure: 'SIGNATURE', lastFailureAt: first.lastFailureAt });
    await h.database.db
      .updateTable('integrations')
      .set({ last_failure_at: Date.now() - 61_000 })
      .where('id', '=', id)
      .execute();
    expect((await deliver(id, payload, { 'stripe-signature': old })).statusCode).toBe(400);
    expect((await h.admin('GET', `/integrations/${id}`)).data.lastFailure).toBe('TIMESTAMP');
    expect((await deliver(id, body(), { 'stripe-signature': '' })).statusCode).toBe(400);
  });

  it("signs as Stripe does: the service's verifier agrees with Stripe's own header", () => {
    const payload = body();
    const header = stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET });
    expect(verifySignature('stripe', header, Buffer.from(payload), SECRET, nowS()).ok).toBe(true);
  });

  it('503 while disabled, writing nothing; 400 for a body that is not an event', async () => {
    await h.admin('PUT', `/integrations/${id}`, { enabled: false });
    expect((await deliver(id, body())).statusCode).toBe(503);
    await h.admin('PUT', `/integrations/${id}`, { enabled: true });
    for (const bad of ['[1,2]', '{"type":"invoice.paid"}', '{"id":"evt_x"}', 'not json']) {
      const response = await deliver(id, bad);
      expect(response.statusCode, bad).toBe(400);
    }
    const rows = await h.database.db.selectFrom('integration_events').select('id').where('integration_id', '=', id).execute();
    expect(rows).toEqual([]);
  });

  it('answers an unknown type and an event over 30 days old IGNORED, a repeat with duplicate: true', async () => {
    const payload = body();
    const first = await deliver(id, payload);
    expect(first.statusCode).toBe(200);
    expect(first.data).toMatchObject({ outcome: 'IGNORED', duplicate: false, lids: [] });
    expect((await deliver(id, payload)).data).toMatchObject({ outcome: 'IGNORED', duplicate: true });
    const row = await h.database.db.selectFrom('integration_events').selectAll().where('event_id', '=', first.data.eventId).executeTakeFirstOrThrow();
    expect(Number(row.deliveries)).toBe(2);
    const old = invoicePaid({ periodEnd: nowS() + 30 * 86_400, lines: [{ price: 'price_refusals' }] }).replace(
      /"created":\d+/,
      `"created":${nowS() - 31 * 86_400}`,
    );
    const ignored = await deliver(id, old);
    expect(ignored.data).toMatchObject({ outcome: 'IGNORED', lids: [] });
    expect(
      (await h.database.db.selectFrom('integration_events').select('error').where('event_id', '=', ignored.data.eventId).executeTakeFirstOrThrow()).error,
    ).toBe('too old');
  });
});

describe('Stripe invoice.paid and checkout.session.completed (DESIGN 22)', () => {
  it('issues one licence for ten concurrent deliveries of one invoice, answering the others as repeats', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_race')] })).data;
    const payload = invoicePaid({ periodEnd: nowS() + 30 * 86_400, lines: [{ price: 'price_race', quantity: 2 }] });
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(id, payload)));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(10).fill(200));
    expect(new Set(answers.map((a) => a.data.outcome))).toEqual(new Set(['ISSUED']));
    expect(answers.filter((a) => !a.data.duplicate)).toHaveLength(1);
    const lids = new Set(answers.flatMap((a) => a.data.lids));
    expect(lids.size).toBe(1);
    const [lid] = [...lids];
    const licence = (await h.admin('GET', `/licenses/${lid}`)).data;
    expect(licence).toMatchObject({ maxMachines: 2, issuedBy: `integration/${(await h.admin('GET', `/integrations/${id}`)).data.name}` });
    const links = await h.database.db.selectFrom('integration_links').select('licence_id').where('integration_id', '=', id).execute();
    expect(links).toHaveLength(1);
    const row = await h.database.db.selectFrom('integration_events').select('deliveries').where('integration_id', '=', id).executeTakeFirstOrThrow();
    expect(Number(row.deliveries)).toBe(10);
  });

  it("follows the subscription: a first invoice's period end, then a renewal invoice extends expiresAt; an old period is UNCHANGED", async () => {
    const { id, name } = (await create({ sendOnIssue: false, mappings: [mapping('price_monthly', { graceDays: 3 })] })).data;
    const firstEnd = nowS() + 10 * 86_400;
    const first = await deliver(id, invoicePaid({ subscription: 'sub_follow', periodEnd: firstEnd, lines: [{ price: 'price_monthly' }] }));
    expect(first.data).toMatchObject({ outcome: 'ISSUED', duplicate: false });
    const [lid] = first.data.lids;
    const issued = (await h.admin('GET', `/licenses/${lid}`)).data;
    // The start of the first UTC date at or after the period's end.
    const expected = (end: number) => {
      const ms = end * 1000;
      const start = Date.parse(`${new Date(ms).toISOString().slice(0, 10)}T00:00:00.000Z`);
      return new Date(start >= ms ? start : start + DAY).toISOString();
    };
    expect(issued).toMatchObject({ expiresAt: expected(firstEnd), graceDays: 3, licensee: 'Buyer One' });
    const audit = (await h.admin('GET', `/licenses/${lid}/activity`)).data.items.find((e: { action: string }) => e.action === 'licence.issued');
    expect(audit).toMatchObject({ actor: `integration/${name}`, details: { integrationId: id, subscription: 'sub_follow', customer: 'cus_1' } });

    const secondEnd = firstEnd + 30 * 86_400;
    const renewal = await deliver(id, invoicePaid({ subscription: 'sub_follow', periodEnd: secondEnd, lines: [{ price: 'price_monthly', quantity: 5 }] }));
    expect(renewal.data).toMatchObject({ outcome: 'RENEWED', lids: [lid] });
    expect((await h.admin('GET', `/licenses/${lid}`)).data).toMatchObject({ expiresAt: expected(secondEnd), maxMachines: 1 });

    const stale = await deliver(id, invoicePaid({ subscription: 'sub_follow', periodEnd: secondEnd, lines: [{ price: 'price_monthly' }] }));
    expect(stale.data).toMatchObject({ outcome: 'UNCHANGED', lids: [] });
  });

  it('a mapping with months issues and renews by them; an unmapped price and a credit line are IGNORED; has_more FAILED', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_yearly', { validityMonths: 12 })] })).data;
    const issued = await deliver(id, invoicePaid({ subscription: 'sub_year', periodEnd: nowS() + 365 * 86_400, lines: [{ price: 'price_yearly' }] }));
    expect(issued.data.outcome).toBe('ISSUED');
    expect((await h.admin('GET', `/licenses/${issued.data.lids[0]}`)).data.expiresAt).toBe(`${addMonths(todayUtc(), 12)}T00:00:00.000Z`);
    const unmapped = await deliver(id, invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_someone_else' }] }));
    expect(unmapped.data).toMatchObject({ outcome: 'IGNORED', lids: [] });
    const credit = await deliver(id, invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_yearly', amount: -500 }] }));
    expect(credit.data).toMatchObject({ outcome: 'IGNORED', lids: [] });
    const more = invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_yearly' }] }).replace('"has_more":false', '"has_more":true');
    const failed = await deliver(id, more);
    expect(failed.data).toMatchObject({ outcome: 'FAILED', lids: [] });
    expect((await h.admin('GET', `/integrations/${id}`)).data.failedEvents).toBe(1);
    // The first FAILED event of the clock hour is audited; a later one only counts.
    const again = invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_yearly' }] }).replace('"has_more":false', '"has_more":true');
    expect((await deliver(id, again)).data.outcome).toBe('FAILED');
    expect((await h.admin('GET', `/integrations/${id}`)).data.failedEvents).toBe(2);
    const audited = (await h.admin('GET', '/dashboard/activity?action=integration.failed&limit=200')).data.items.filter(
      (e: { details: { integrationId: number } }) => e.details.integrationId === id,
    );
    expect(audited).toMatchObject([{ details: { eventId: failed.data.eventId, type: 'invoice.paid', error: 'more lines than the event carries' } }]);
    expect(audited[0].actor).toMatch(/^integration\//);
    const metrics = (await h.request('GET', '/metrics')).body;
    expect(metrics).toMatch(/licensor_integration_events_total\{provider="stripe",outcome="FAILED"\} [2-9]/);
    expect(metrics).toMatch(/licensor_integration_events_total\{provider="stripe",outcome="ISSUED"\} \d+/);
  });

  it('a line without a subscription needs a mapping with months: FAILED "no period"', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_oneoff')] })).data;
    const payload = JSON.parse(invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_oneoff' }] }));
    payload.data.object.parent = null;
    const failed = await deliver(id, JSON.stringify(payload));
    expect(failed.data).toMatchObject({ outcome: 'FAILED', lids: [] });
    expect((await h.admin('GET', `/integrations/${id}/events`)).data.items[0].error).toBe('no period');
  });

  it('reads the API shape before 2025-03-31 (price.id, subscription)', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_legacy')] })).data;
    const payload = JSON.parse(invoicePaid({ periodEnd: nowS() + 20 * 86_400, lines: [{ price: 'price_legacy' }] }));
    const invoice = payload.data.object;
    invoice.subscription = 'sub_legacy';
    delete invoice.parent;
    for (const line of invoice.lines.data) {
      line.price = { id: line.pricing.price_details.price };
      delete line.pricing;
    }
    const answer = await deliver(id, JSON.stringify(payload));
    expect(answer.data.outcome).toBe('ISSUED');
    const link = await h.database.db.selectFrom('integration_links').selectAll().where('integration_id', '=', id).executeTakeFirstOrThrow();
    expect(link).toMatchObject({ subscription_ref: 'sub_legacy', price_ref: 'price_legacy' });
  });

  it('sendOnIssue queues the email in the licence transaction; a paid Payment Link issues once', async () => {
    const { id } = (await create({ mappings: [mapping('plink_once', { validityMonths: 0 })] })).data;
    const n = ++seq;
    const session = (extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        id: `evt_cs_${n}_${JSON.stringify(extra).length}`,
        type: 'checkout.session.completed',
        created: nowS(),
        data: {
          object: {
            id: `cs_${n}`,
            mode: 'payment',
            payment_status: 'paid',
            invoice: null,
            payment_link: 'plink_once',
            customer: null,
            customer_details: { email: 'once@customer.example', name: 'Once Buyer' },
            payment_intent: `pi_${n}`,
            ...extra,
          },
        },
      });
    const answer = await deliver(id, session());
    expect(answer.data.outcome).toBe('ISSUED');
    const [lid] = answer.data.lids;
    expect((await h.admin('GET', `/licenses/${lid}`)).data).toMatchObject({ expiresAt: null, licenseeEmail: 'once@customer.example' });
    const emails = (await h.admin('GET', `/licenses/${lid}/emails`)).data;
    expect(emails).toMatchObject([{ to: 'once@customer.example', trigger: 'issued', status: 'pending' }]);
    // The same session named by another event is applied once.
    expect((await deliver(id, session({ metadata: {} }))).data).toMatchObject({ outcome: 'UNCHANGED', lids: [] });
    expect((await deliver(id, session({ payment_status: 'unpaid' }))).data).toMatchObject({ outcome: 'IGNORED' });
  });
});

describe('the ledger: GET /integrations/{id}/events and retry (DESIGN 22)', () => {
  it('lists the events newest first, filtered by outcome; a FAILED one is retried once the cause is gone, then 409', async () => {
    const inactive = await createProduct(h.admin);
    const { id } = (await create({ sendOnIssue: false, mappings: [{ match: 'price_retry', productId: inactive.id }] })).data;
    expect((await h.admin('PUT', `/products/${inactive.id}`, { active: false })).statusCode).toBe(200);
    const ignored = await deliver(id, invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_other' }] }));
    const failed = await deliver(id, invoicePaid({ subscription: 'sub_retry', periodEnd: nowS() + 20 * 86_400, lines: [{ price: 'price_retry' }] }));
    expect(failed.data).toMatchObject({ outcome: 'FAILED', lids: [] });

    const page = (await h.admin('GET', `/integrations/${id}/events`)).data;
    expect(page).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(page.items.map((e: { eventId: string }) => e.eventId)).toEqual([failed.data.eventId, ignored.data.eventId]);
    expect(page.items[0]).toMatchObject({ type: 'invoice.paid', outcome: 'FAILED', deliveries: 1, lids: [] });
    expect(page.items[0].error).toContain('inactive');
    const onlyFailed = (await h.admin('GET', `/integrations/${id}/events?outcome=FAILED`)).data;
    expect(onlyFailed.items.map((e: { eventId: string }) => e.eventId)).toEqual([failed.data.eventId]);
    expect((await h.admin('GET', `/integrations/${id}/events?outcome=LOST`)).statusCode).toBe(400);

    expect((await h.admin('POST', `/integrations/${id}/events/${ignored.data.eventId}/retry`)).statusCode).toBe(409);
    expect((await h.admin('POST', `/integrations/${id}/events/evt_never/retry`)).statusCode).toBe(404);
    expect((await h.admin('POST', `/integrations/${id}/events/${failed.data.eventId}/retry`)).data.outcome).toBe('FAILED');
    await h.admin('PUT', `/products/${inactive.id}`, { active: true });
    const retried = await h.admin('POST', `/integrations/${id}/events/${failed.data.eventId}/retry`);
    expect(retried.statusCode).toBe(200);
    // A retry is not a delivery.
    expect(retried.data).toMatchObject({ eventId: failed.data.eventId, outcome: 'ISSUED', deliveries: 1, error: null });
    expect(retried.data.lids).toHaveLength(1);
    expect((await h.admin('POST', `/integrations/${id}/events/${failed.data.eventId}/retry`)).statusCode).toBe(409);
    const readOnly = h.as({ token: await h.createToken(['integrations:read']) });
    expect((await readOnly('GET', `/integrations/${id}/events`)).statusCode).toBe(200);
    expect((await readOnly('POST', `/integrations/${id}/events/${failed.data.eventId}/retry`)).statusCode).toBe(403);
  });

  it('applies an event whole or not at all: a refused second line leaves the first unissued, and the retry issues both', async () => {
    const live = await createProduct(h.admin);
    const inactive = await createProduct(h.admin);
    const created = await create({
      sendOnIssue: false,
      mappings: [
        { match: 'price_wholeA', productId: live.id },
        { match: 'price_wholeB', productId: inactive.id },
      ],
    });
    const { id } = created.data;
    expect((await h.admin('PUT', `/products/${inactive.id}`, { active: false })).statusCode).toBe(200);
    const email = 'whole@customer.example';
    const issued = async () =>
      (await h.admin('GET', `/licenses?productId=${live.id}`)).data.length + (await h.admin('GET', `/licenses?productId=${inactive.id}`)).data.length;
    const failed = await deliver(
      id,
      invoicePaid({ email, subscription: 'sub_whole', periodEnd: nowS() + 20 * 86_400, lines: [{ price: 'price_wholeA' }, { price: 'price_wholeB' }] }),
    );
    expect(failed.data).toMatchObject({ outcome: 'FAILED', lids: [] });
    expect(await issued()).toBe(0);
    await h.admin('PUT', `/products/${inactive.id}`, { active: true });
    const retried = await h.admin('POST', `/integrations/${id}/events/${failed.data.eventId}/retry`);
    expect(retried.data).toMatchObject({ outcome: 'ISSUED', error: null });
    expect(retried.data.lids).toHaveLength(2);
    expect(await issued()).toBe(2);
  });

  it('erasing a customer takes its email and name out of the orders FAILED events keep for a retry', async () => {
    const inactive = await createProduct(h.admin, { active: false });
    const { id } = (await create({ sendOnIssue: false, mappings: [{ match: 'price_erased', productId: inactive.id }] })).data;
    const email = 'Erase-Me@customer.example';
    const failed = await deliver(id, invoicePaid({ email, periodEnd: nowS() + 20 * 86_400, lines: [{ price: 'price_erased' }] }));
    expect(failed.data.outcome).toBe('FAILED');
    const kept = () =>
      h.database.db.selectFrom('integration_events').select('retry_order').where('event_id', '=', failed.data.eventId).executeTakeFirstOrThrow();
    expect((await kept()).retry_order).toContain(email);
    const customer = (await h.admin('POST', '/customers', { name: 'Buyer One', email: 'erase-me@customer.example' })).data;
    expect((await h.admin('POST', `/customers/${customer.id}/erase`)).statusCode).toBe(200);
    const after = (await kept()).retry_order!;
    expect(after).not.toContain('customer.example');
    expect(after).not.toContain('Buyer One');
    await h.admin('PUT', `/products/${inactive.id}`, { active: true });
    const retried = await h.admin('POST', `/integrations/${id}/events/${failed.data.eventId}/retry`);
    expect(retried.data).toMatchObject({ outcome: 'FAILED', error: 'the order names no customer email' });
  });

  it('keeps the ledger 90 days: each process forgets older entries at start and hourly', async () => {
    const { id } = (await create({})).data;
    const old = await deliver(id, JSON.stringify({ id: 'evt_old_entry', type: 'customer.created', created: nowS(), data: { object: {} } }));
    const recent = await deliver(id, JSON.stringify({ id: 'evt_recent_entry', type: 'customer.created', created: nowS(), data: { object: {} } }));
    expect([old.statusCode, recent.statusCode]).toEqual([200, 200]);
    await h.database.db
      .updateTable('integration_events')
      .set({ received_at: Date.now() - 91 * DAY })
      .where('event_id', '=', 'evt_old_entry')
      .execute();
    const { app } = await h.loggedApp();
    await app.ready();
    const ids = async () => (await h.admin('GET', `/integrations/${id}/events`)).data.items.map((e: { eventId: string }) => e.eventId);
    await expect.poll(ids, { timeout: 5_000 }).toEqual(['evt_recent_entry']);
    await app.close();
  });

  it('applies a FAILED event again when the provider delivers it again, counting the delivery', async () => {
    const inactive = await createProduct(h.admin, { active: false });
    const { id } = (await create({ sendOnIssue: false, mappings: [{ match: 'price_again', productId: inactive.id }] })).data;
    const payload = invoicePaid({ subscription: 'sub_again', periodEnd: nowS() + 20 * 86_400, lines: [{ price: 'price_again' }] });
    expect((await deliver(id, payload)).data.outcome).toBe('FAILED');
    await h.admin('PUT', `/products/${inactive.id}`, { active: true });
    expect((await deliver(id, payload)).data).toMatchObject({ outcome: 'ISSUED', duplicate: false });
    expect((await h.admin('GET', `/integrations/${id}/events`)).data.items[0]).toMatchObject({ outcome: 'ISSUED', deliveries: 2, error: null });
  });
});

describe('Stripe revocations and reinstatements (DESIGN 22)', () => {
  const event = (type: string, object: Record<string, unknown>) => JSON.stringify({ id: `evt_v${++seq}`, type, created: nowS(), data: { object } });
  const licence = async (lid: string) => (await h.admin('GET', `/licenses/${lid}`)).data;

  it('a full refund of a Payment Link sale revokes its licence "refunded"; a partial one and an unlinked payment are IGNORED', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('plink_refund', { validityMonths: 12 })] })).data;
    const sale = event('checkout.session.completed', {
      id: 'cs_refund',
      mode: 'payment',
      payment_status: 'paid',
      invoice: null,
      payment_link: 'plink_refund',
      customer_details: { email: 'refund@customer.example', name: null },
      payment_intent: 'pi_refund',
    });
    const [lid] = (await deliver(id, sale)).data.lids;
    expect((await licence(lid)).licensee).toBe('refund@customer.example');
    expect((await deliver(id, event('charge.refunded', { id: 'ch_1', payment_intent: 'pi_refund', refunded: false }))).data.outcome).toBe('IGNORED');
    expect((await deliver(id, event('charge.refunded', { id: 'ch_2', payment_intent: 'pi_elsewhere', refunded: true }))).data.outcome).toBe('IGNORED');
    const refund = event('charge.refunded', { id: 'ch_1', payment_intent: 'pi_refund', refunded: true });
    expect((await deliver(id, refund)).data).toMatchObject({ outcome: 'REVOKED', lids: [lid] });
    expect(await licence(lid)).toMatchObject({ status: 'REVOKED', revokedReason: 'refunded' });
    expect((await deliver(id, refund)).data).toMatchObject({ outcome: 'REVOKED', duplicate: true });
    // Another full refund of the same payment finds it revoked already.
    expect((await deliver(id, event('charge.refunded', { id: 'ch_1', payment_intent: 'pi_refund', refunded: true }))).data).toMatchObject({
      outcome: 'UNCHANGED',
      lids: [],
    });
  });

  it('invoice_payment.paid links a payment to its invoice: a dispute revokes "disputed", a won dispute reinstates', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_disputed')] })).data;
    const paid = await deliver(id, invoicePaid({ invoice: 'in_disputed', periodEnd: nowS() + 20 * 86_400, lines: [{ price: 'price_disputed' }] }));
    const [lid] = paid.data.lids;
    const link = event('invoice_payment.paid', { id: 'inpay_1', invoice: 'in_disputed', payment: { type: 'payment_intent', payment_intent: 'pi_disputed' } });
    expect((await deliver(id, link)).data).toMatchObject({ outcome: 'UNCHANGED', lids: [] });
    expect(
      (await deliver(id, event('charge.dispute.created', { id: 'dp_1', charge: 'ch_d', payment_intent: 'pi_disputed', status: 'needs_response' }))).data,
    ).toMatchObject({
      outcome: 'REVOKED',
      lids: [lid],
    });
    expect((await licence(lid)).revokedReason).toBe('disputed');
    expect((await deliver(id, event('charge.dispute.closed', { id: 'dp_1', payment_intent: 'pi_disputed', status: 'won' }))).data).toMatchObject({
      outcome: 'REINSTATED',
      lids: [lid],
    });
    expect((await licence(lid)).status).toBe('ACTIVE');
  });

  it('a plan change: the invoice issuing the new price revokes the licence of the price it names only in a credit, "plan changed"', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_small'), mapping('price_large')] })).data;
    const periodEnd = nowS() + 20 * 86_400;
    const [small] = (await deliver(id, invoicePaid({ subscription: 'sub_plan', periodEnd, lines: [{ price: 'price_small' }] }))).data.lids;
    const change = await deliver(
      id,
      invoicePaid({ subscription: 'sub_plan', periodEnd, lines: [{ price: 'price_small', amount: -300 }, { price: 'price_large' }] }),
    );
    expect(change.data.outcome).toBe('ISSUED');
    expect(change.data.lids).toHaveLength(2);
    const [large, revoked] = change.data.lids;
    expect(revoked).toBe(small);
    expect(await licence(small)).toMatchObject({ status: 'REVOKED', revokedReason: 'plan changed' });
    expect((await licence(large)).status).toBe('ACTIVE');
  });

  it('a pause revokes, a resume reinstates unless an operator touched the licence since; a cancellation before the period end revokes', async () => {
    const { id } = (await create({ sendOnIssue: false, mappings: [mapping('price_paused')] })).data;
    const periodEnd = nowS() + 20 * 86_400;
    const [lid] = (await deliver(id, invoicePaid({ subscription: 'sub_paused', periodEnd, lines: [{ price: 'price_paused' }] }))).data.lids;
    const sub = (type: string, extra: Record<string, unknown> = {}) => event(type, { id: 'sub_paused', status: 'active', ...extra });
    expect((await deliver(id, sub('customer.subscription.updated', { status: 'past_due' }))).data.outcome).toBe('UNCHANGED');
    expect((await deliver(id, sub('customer.subscription.paused', { status: 'paused' }))).data).toMatchObject({ outcome: 'REVOKED', lids: [lid] });
    expect((await licence(lid)).revokedReason).toBe('subscription paused');
    expect((await deliver(id, sub('customer.subscription.resumed'))).data).toMatchObject({ outcome: 'REINSTATED', lids: [lid] });

    expect((await deliver(id, sub('customer.subscription.updated', { status: 'paused' }))).data.outcome).toBe('REVOKED');
    // An operator reinstates and revokes again: the resume leaves that alone.
    expect((await h.admin('POST', `/licenses/${lid}/reinstate`)).statusCode).toBe(200);
    expect((await h.admin('POST', `/licenses/${lid}/revoke`, { reason: 'fraud' })).statusCode).toBe(200);
    expect((await deliver(id, sub('customer.subscription.resumed'))).data.outcome).toBe('UNCHANGED');
    expect((await licence(lid)).revokedReason).toBe('fraud');
    await h.admin('POST', `/licenses/${lid}/reinstate`);

    // Ending at the period's end changes nothing (the term runs out); ending weeks before revokes.
    expect((await deliver(id, sub('customer.subscription.deleted', { status: 'canceled', ended_at: periodEnd - 600 }))).data.outcome).toBe('UNCHANGED');
    expect((await deliver(id, sub('customer.subscription.deleted', { status: 'canceled', ended_at: nowS() }))).data).toMatchObject({
      outcome: 'REVOKED',
      lids: [lid],
    });
    expect((await licence(lid)).revokedReason).toBe('subscription canceled');
  });
});
