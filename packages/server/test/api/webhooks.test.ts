import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { inTransaction } from '../../src/core/transaction.js';
import { operatorCtx } from '../../src/orgs/service.js';
import { findOrCreateCustomer } from '../../src/customers/service.js';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { inOneRateWindow, startHarness, type Caller, type Harness } from '../harness.js';
import { addDays, createProduct, issueOk, todayUtc } from '../licence-helpers.js';
import { checkBody, checkedProduct } from '../check-helpers.js';
import { addEndpoint, drain, startReceiver, verified, type Receiver } from '../webhook-helpers.js';
import { machine, startBody, trialProduct } from '../trial-helpers.js';
import { invoicePaid, nowS, stripeHeaders } from '../stripe-helpers.js';

let h: Harness;
let receiver: Receiver;
/** A token: a session would expire as the clock moves days ahead. */
let api: Caller;
beforeAll(async () => {
  h = await startHarness({ LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' });
  receiver = await startReceiver();
  api = h.as({ token: await h.createToken(['licenses:write', 'products:write', 'customers:write', 'webhooks:write', 'activity:read']) });
});
afterAll(async () => {
  await h?.close();
  await receiver?.close();
});
afterEach(async () => {
  vi.useRealTimers();
  // Each test starts with no endpoint and an empty receiver.
  for (const endpoint of (await h.admin('GET', '/webhooks')).data) await h.admin('DELETE', `/webhooks/${endpoint.id}`);
  await drain(h);
  receiver.received.length = 0;
  receiver.answer = () => ({ status: 204 });
});

const deliveries = async (id: number, query = '') => (await api('GET', `/webhooks/${id}/deliveries${query}`)).data.items;
const moveClock = (ms: number) => vi.setSystemTime(Date.now() + ms);

describe('webhook endpoints', () => {
  it('shows the secret once, seals it at rest, and changes only what PUT carries', async () => {
    const created = await h.admin('POST', '/webhooks', { url: `${receiver.url}/hooks`, events: ['licence.revoked'], description: 'billing' });
    expect(created.statusCode).toBe(201);
    expect(created.data).toMatchObject({
      url: `${receiver.url}/hooks`,
      events: ['licence.revoked'],
      description: 'billing',
      enabled: true,
      disabledReason: null,
      lastDeliveryAt: null,
      lastStatus: null,
    });
    expect(created.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.data.secret.slice(6), 'base64')).toHaveLength(32);
    const { secret, ...endpoint } = created.data;
    expect((await h.admin('GET', `/webhooks/${endpoint.id}`)).data).toEqual(endpoint);
    expect((await h.admin('GET', '/webhooks')).data).toEqual([endpoint]);
    const row = await h.database.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
    expect(row.secret).toMatch(/^sealed-v1\$/);
    expect(JSON.stringify(row)).not.toContain(secret.slice(6));

    const changed = await h.admin('PUT', `/webhooks/${endpoint.id}`, { enabled: false });
    expect(changed.data).toMatchObject({
      url: endpoint.url,
      events: ['licence.revoked'],
      description: 'billing',
      enabled: false,
      disabledReason: 'disabled by admin',
    });
    expect((await h.admin('PUT', `/webhooks/${endpoint.id}`, { enabled: true, events: ['*'] })).data).toMatchObject({
      enabled: true,
      disabledReason: null,
      events: ['*'],
    });
    const activity = (await h.admin('GET', '/dashboard/activity')).data.items.map((e: any) => e.action);
    expect(activity.slice(0, 3)).toEqual(['webhook.updated', 'webhook.updated', 'webhook.created']);
    expect((await h.admin('DELETE', `/webhooks/${endpoint.id}`)).statusCode).toBe(204);
    expect((await h.admin('GET', `/webhooks/${endpoint.id}`)).statusCode).toBe(404);
  });

  it('never logs a secret, even at trace level', async () => {
    const { app, lines } = await h.loggedApp();
    try {
      const cookie = await h.signIn('admin', 'correct horse battery staple');
      const call = (method: string, url: string, body?: unknown) =>
        h.request(method, `/o/${h.slug}/api${url}`, { app, body, cookies: { svc_session: cookie } });
      const created = await call('POST', '/webhooks', { url: receiver.url, events: ['*'] });
      const rotated = await call('POST', `/webhooks/${created.data.id}/rotate-secret`, { overlapHours: 0 });
      expect(rotated.data.secret).toMatch(/^whsec_/);
      await call('POST', `/webhooks/${created.data.id}/test`);
      const log = lines.join('');
      expect(log).toContain('/webhooks');
      for (const secret of [created.data.secret, rotated.data.secret]) expect(log).not.toContain(secret.slice(6, 30));
    } finally {
      await app.close();
    }
  });

  it('needs webhooks scopes, each event resource’s read scope, and an ORG_ADMIN session', async () => {
    const writer = h.as({ token: await h.createToken(['webhooks:write']) });
    const refused = await writer('POST', '/webhooks', { url: receiver.url, events: ['licence.issued'] });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toContain('licenses:read');
    expect((await writer('POST', '/webhooks', { url: receiver.url, events: ['*'] })).data.error).toContain('licenses:read');
    const licences = h.as({ token: await h.createToken(['webhooks:write', 'licenses:read']) });
    expect((await licences('POST', '/webhooks', { url: receiver.url, events: ['licence.issued', 'machine.bound'] })).statusCode).toBe(201);
    expect((await licences('POST', '/webhooks', { url: receiver.url, events: ['*'] })).data.error).toContain('products:read');
    expect((await licences('POST', '/webhooks', { url: receiver.url, events: ['customer.created'] })).data.error).toContain('customers:read');
    expect((await h.admin('POST', '/webhooks', { url: receiver.url, events: ['licence.exploded'] })).statusCode).toBe(400);
    const reader = h.as({ token: await h.createToken(['licenses:read']) });
    expect((await reader('GET', '/webhooks')).statusCode).toBe(403);
    const viewer = await h.createMember('VIEWER');
    expect((await h.as({ cookie: viewer.cookie })('GET', '/webhooks')).statusCode).toBe(403);
    // A platform administrator acts as an ORG_ADMIN inside, yet never changes webhooks.
    await createPlatformAccount(h.database, { username: 'ops', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
    const login = await h.request('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'platform password 1' } });
    const platform = { svc_platform: login.cookies.find((c) => c.name === 'svc_platform')!.value };
    const inside = (method: string, url: string, body?: unknown) => h.request(method, `/o/${h.slug}/api${url}`, { cookies: platform, body });
    const byPlatform = await inside('POST', '/webhooks', { url: receiver.url, events: ['*'] });
    expect(byPlatform.statusCode).toBe(403);
    expect(byPlatform.data.error).toContain('platform');
    expect((await inside('GET', '/webhooks')).statusCode).toBe(200);
    const issuer = await h.createMember('ISSUER');
    expect((await h.as({ cookie: issuer.cookie })('POST', '/webhooks', { url: receiver.url, events: ['*'] })).statusCode).toBe(403);
  });

  it('sends a test event once and answers its outcome, six a minute per endpoint', { timeout: 60_000 }, async () => {
    const { id, secret } = await addEndpoint(h.admin, receiver.url);
    await inOneRateWindow(20);
    const test = await h.admin('POST', `/webhooks/${id}/test`);
    expect(test.statusCode).toBe(200);
    expect(test.data).toMatchObject({ status: 'delivered', attempt: { httpStatus: 204, error: null } });
    expect(verified(secret, receiver.received[0]!)).toMatchObject({ type: 'webhook.test', sequence: null });
    expect(receiver.received[0]!.headers['webhook-id']).toBe(test.data.eventId);
    receiver.answer = () => ({ status: 500 });
    const failed = await h.admin('POST', `/webhooks/${id}/test`);
    expect(failed.data).toMatchObject({ status: 'failed', attempt: { httpStatus: 500, response: 'answer body' } });
    for (let i = 0; i < 4; i++) expect((await h.admin('POST', `/webhooks/${id}/test`)).statusCode).toBe(200);
    const limited = await h.admin('POST', `/webhooks/${id}/test`);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    await drain(h);
    expect(receiver.received).toHaveLength(6);
    const log = await deliveries(id);
    expect(log).toHaveLength(6);
    expect(log[4]).toMatchObject({ eventId: failed.data.eventId, type: 'webhook.test', status: 'failed', attempts: [{ httpStatus: 500 }] });
  });
});

describe('events', () => {
  it('delivers every event type, signed so that the Standard Webhooks library verifies it', async () => {
    const { id, secret } = await addEndpoint(h.admin, receiver.url);
    const customer = (await h.admin('POST', '/customers', { name: 'Hook Ltd', email: 'ops@hook.example' })).data;
    await h.admin('PUT', `/customers/${customer.id}`, { name: 'Hook Limited' });
    const spare = await createProduct(h.admin);
    await h.admin('PUT', `/products/${spare.id}`, { name: 'Renamed' });
    await h.admin('PUT', `/products/${spare.id}`, { regenerateKey: true });
    await h.admin('DELETE', `/products/${spare.id}`);
    const product = await checkedProduct(h);
    // Expires in about five days: expiring at issue.
    const licence = await product.issue({ customerId: customer.id, issueDate: addDays(todayUtc(), -26), validityMonths: 1, graceDays: 0 });
    expect((await product.check(checkBody(licence.licenseString, 'a'))).statusCode).toBe(200);
    await h.admin('POST', `/licenses/${licence.lid}/release-binding`, {});
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, { reason: 'test' });
    await h.admin('POST', `/licenses/${licence.lid}/archive`);
    await h.admin('POST', `/licenses/${licence.lid}/restore`);
    await h.admin('POST', `/licenses/${licence.lid}/reinstate`);
    const renewed = await h.admin('POST', `/licenses/${licence.lid}/renew`, {});
    expect(renewed.statusCode).toBe(200);
    const other = await issueOk(h.admin, {
      productId: product.id,
      licensee: 'Short Ltd',
      issueDate: addDays(todayUtc(), -26),
      validityMonths: 1,
      graceDays: 0,
    });
    const gone = (await h.admin('POST', '/customers', { name: 'Gone Ltd', email: 'gone@hook.example' })).data;
    await h.admin('DELETE', `/customers/${gone.id}`);
    await drain(h);
    // Verified as they arrive: the library refuses a timestamp five minutes away from its clock.
    const bodies = receiver.received.map((r) => ({ ...verified(secret, r), id: r.headers['webhook-id'] }));
    vi.useFakeTimers({ toFake: ['Date'] });
    moveClock(8 * 86_400_000);
    await drain(h);
    bodies.push(...receiver.received.slice(bodies.length).map((r) => ({ ...verified(secret, r), id: r.headers['webhook-id'] })));
    const types = new Set(bodies.map((b) => b.type));
    const expected = [
      'customer.created',
      'customer.updated',
      'customer.deleted',
      'product.created',
      'product.updated',
      'product.key_rotated',
      'product.deleted',
      'product.check_token_rotated',
      'licence.issued',
      'licence.expiring',
      'licence.revoked',
      'licence.archived',
      'licence.restored',
      'licence.reinstated',
      'licence.renewed',
      'licence.expired',
      'machine.bound',
      'machine.released',
    ];
    expect([...types].sort()).toEqual(expected.sort());
    // Sequences: one per event, increasing in the order read; ids unique.
    const sequences = bodies.map((b) => b.sequence!);
    expect(new Set(sequences).size).toBe(bodies.length);
    expect(new Set(bodies.map((b) => b.id)).size).toBe(bodies.length);
    const byType = (type: string) => bodies.filter((b) => b.type === type);
    expect(byType('licence.expired').map((b) => b.data.licence.lid)).toEqual([other.lid]);
    expect(
      byType('licence.expiring')
        .map((b) => b.data.licence.lid)
        .sort(),
    ).toEqual([licence.lid, other.lid].sort());
    expect(byType('licence.revoked')[0]!.data.licence).toMatchObject({ lid: licence.lid, status: 'REVOKED' });
    expect(byType('customer.deleted')[0]!.data.customer).toMatchObject({ id: gone.id, name: 'Gone Ltd' });
    expect(byType('product.deleted')[0]!.data.product).toMatchObject({ id: spare.id, name: 'Renamed' });
    const machine = byType('machine.bound')[0]!.data.machine;
    expect(machine).toMatchObject({ lid: licence.lid, live: true });
    expect(machine.parts).toBeUndefined();
    expect(JSON.stringify(bodies)).not.toMatch(/PRIVATE KEY|svcc_/);
    // Once per term: another scan finds nothing new.
    const count = receiver.received.length;
    moveClock(86_400_000);
    await drain(h);
    expect(receiver.received).toHaveLength(count);
    expect((await deliveries(id, '?status=delivered')).length).toBe(Math.min(50, count));
  });

  it('delivers a trial’s start, extension and conversion as their own events, never as licence.issued or licence.renewed', async () => {
    const events = ['licence.trial_started', 'licence.trial_extended', 'licence.trial_converted', 'licence.issued', 'licence.renewed', 'machine.bound'];
    const { secret } = await addEndpoint(api, receiver.url, events);
    const p = await trialProduct(h);
    const started = await p.start(startBody(machine('hooked'), { machineLabel: 'Desk' }));
    expect(started.statusCode).toBe(201);
    const trialLid = started.data.lid;
    const atStart = (await api('GET', `/licenses/${trialLid}`)).data;
    const extended = await api('POST', `/licenses/${trialLid}/extend-trial`, { days: 10 });
    expect(extended.statusCode).toBe(200);
    const paid = await api('POST', `/licenses/${trialLid}/convert`, { customer: { name: 'Buyer Ltd', email: 'buyer@example.com' }, keepMachine: true });
    expect(paid.statusCode).toBe(201);
    const trial = (await api('GET', `/licenses/${trialLid}`)).data;
    await drain(h);
    const bodies = receiver.received.map((r) => verified(secret, r));
    expect(bodies.map((b) => [b.type, b.data.licence?.lid ?? b.data.machine.lid])).toEqual([
      ['licence.trial_started', trialLid],
      ['licence.trial_extended', trialLid],
      ['machine.bound', paid.data.lid],
      ['licence.trial_converted', trialLid],
      ['licence.issued', paid.data.lid],
    ]);
    const [start, extension, , conversion, issued] = bodies;
    // `data.licence`: the trial as the API answers it after each change (the start's own check
    // answers once the trial is committed, so the event has it not yet checked).
    expect(start!.data).toEqual({ licence: { ...atStart, lastCheckedAt: null, checkHealth: 'NEVER' } });
    expect(start!.data.licence).toMatchObject({ trial: true, licensee: 'Trial', customerId: null, trialInstallations: 1, trialConvertedTo: null });
    expect(extension!.data).toEqual({ licence: extended.data });
    expect(conversion!.data).toEqual({ licence: trial });
    expect(conversion!.data.licence).toMatchObject({ trialConvertedTo: paid.data.lid, status: 'ACTIVE' });
    expect(issued!.data.licence).toMatchObject({ lid: paid.data.lid, convertedFromTrial: trialLid, trial: false });
  });

  it('writes nothing for a rolled-back change, and nothing while the organisation has no endpoint', async () => {
    const before = await h.database.db
      .selectFrom('webhook_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    await h.admin('POST', '/customers', { name: 'Unheard Ltd' });
    await addEndpoint(h.admin, receiver.url);
    const ctx = await operatorCtx(h.database, h.slug);
    await expect(
      inTransaction(ctx, async (t) => {
        await findOrCreateCustomer(t, h.database.dialect, 'admin', Date.now(), { name: 'Rolled Back Ltd', email: null });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await drain(h);
    const after = await h.database.db
      .selectFrom('webhook_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expect(receiver.received).toEqual([]);
  });
});

describe('delivery', () => {
  it('retries a refused connection on the schedule and delivers when the receiver is back', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { id } = await addEndpoint(api, receiver.url, ['customer.created']);
    await receiver.close();
    await api('POST', '/customers', { name: 'Retry Ltd' });
    await drain(h);
    let [delivery] = await deliveries(id);
    expect(delivery).toMatchObject({ status: 'pending', attempts: [{ httpStatus: null, error: expect.stringContaining('ECONNREFUSED') }] });
    expect(Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.attempts[0].at)).toBe(5_000);
    expect((await api('GET', `/webhooks/${id}`)).data).toMatchObject({ lastStatus: null, failingSince: delivery.attempts[0].at });
    moveClock(2_000);
    const metrics = (await h.request('GET', '/metrics')).body;
    expect(metrics).toMatch(/^webhook_attempts_total\{outcome="retrying"\} [1-9]/m);
    expect(metrics).toMatch(/^webhook_queue_depth 1$/m);
    expect(metrics).toMatch(/^webhook_oldest_pending_seconds 2(\.\d+)?$/m);
    await receiver.open();
    moveClock(2_000);
    await drain(h);
    expect(receiver.received).toEqual([]);
    moveClock(1_000);
    await drain(h);
    expect(receiver.received).toHaveLength(1);
    [delivery] = await deliveries(id);
    expect(delivery.status).toBe('delivered');
    expect((await api('GET', `/webhooks/${id}`)).data).toMatchObject({ lastStatus: 204, failingSince: null });
  });

  it('waits a longer Retry-After up to an hour, and fails after the eighth attempt', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { id } = await addEndpoint(api, receiver.url, ['customer.created']);
    receiver.answer = () => ({ status: 503, headers: { 'retry-after': '7200' } });
    await api('POST', '/customers', { name: 'Busy Ltd' });
    await drain(h);
    const [first] = await deliveries(id);
    expect(Date.parse(first.nextAttemptAt) - Date.parse(first.attempts[0].at)).toBe(3_600_000);
    receiver.answer = () => ({ status: 500 });
    for (const wait of [3_600_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]) {
      moveClock(wait);
      await drain(h);
    }
    const [last] = await deliveries(id);
    expect(last.status).toBe('failed');
    expect(last.attempts).toHaveLength(8);
    moveClock(86_400_000);
    await drain(h);
    expect(receiver.received).toHaveLength(8);
  });

  it('disables the endpoint at once on a 410, and keeps later events for recover', async () => {
    const { id } = await addEndpoint(api, receiver.url, ['customer.created']);
    receiver.answer = () => ({ status: 410 });
    await api('POST', '/customers', { name: 'Gone Away Ltd' });
    await drain(h);
    expect((await api('GET', `/webhooks/${id}`)).data).toMatchObject({ enabled: false, disabledReason: 'the endpoint answered 410 Gone', lastStatus: 410 });
    expect((await api('GET', '/dashboard/activity')).data.items[0]).toMatchObject({ action: 'webhook.disabled', actor: 'webhooks' });
    await api('POST', '/customers', { name: 'While Disabled Ltd' });
    await drain(h);
    expect(receiver.received).toHaveLength(1);
    expect((await deliveries(id)).map((d: any) => [d.status, d.attempts.length])).toEqual([
      ['failed', 0],
      ['failed', 1],
    ]);
    receiver.answer = () => ({ status: 200 });
    await api('PUT', `/webhooks/${id}`, { enabled: true });
    const recovered = await api('POST', `/webhooks/${id}/recover`, { since: new Date(Date.now() - 60_000).toISOString() });
    expect(recovered).toMatchObject({ statusCode: 202, data: { queued: 2 } });
    await drain(h);
    expect(receiver.received).toHaveLength(3);
    const [latest] = await deliveries(id);
    expect((await api('POST', `/webhooks/${id}/deliveries/${latest.eventId}/redeliver`)).statusCode).toBe(202);
    await drain(h);
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(latest.eventId);
    expect(receiver.received.at(-1)!.body).toBe(
      receiver.received.find((r) => r.headers['webhook-id'] === latest.eventId && r !== receiver.received.at(-1))!.body,
    );
    expect((await api('POST', `/webhooks/${id}/deliveries/msg_nothing/redeliver`)).statusCode).toBe(404);
  });

  it('disables an endpoint whose attempts all failed for five days', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { id } = await addEndpoint(api, receiver.url, ['customer.created']);
    receiver.answer = () => ({ status: 500 });
    await api('POST', '/customers', { name: 'Failing Ltd' });
    await drain(h);
    moveClock(5 * 86_400_000);
    await api('POST', '/customers', { name: 'Still Failing Ltd' });
    await drain(h);
    expect((await api('GET', `/webhooks/${id}`)).data).toMatchObject({ enabled: false, disabledReason: 'every attempt failed for 5 days' });
  });

  it('signs with both secrets during a rotation’s overlap, and with the new one only after it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { id, secret } = await addEndpoint(api, receiver.url, ['customer.created']);
    const rotated = await api('POST', `/webhooks/${id}/rotate-secret`, { overlapHours: 1 });
    expect(rotated.statusCode).toBe(200);
    const fresh = rotated.data.secret;
    await api('POST', '/customers', { name: 'Overlap Ltd' });
    await drain(h);
    const during = receiver.received[0]!;
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(secret, during).type).toBe('customer.created');
    expect(verified(fresh, during).type).toBe('customer.created');
    moveClock(3_600_000);
    await api('POST', '/customers', { name: 'After Ltd' });
    await drain(h);
    const after = receiver.received[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verified(fresh, after).data.customer.name).toBe('After Ltd');
    expect(() => verified(secret, after)).toThrow();
    // A second rotation ends the first overlap: at most two secrets sign.
    const third = (await api('POST', `/webhooks/${id}/rotate-secret`, {})).data.secret;
    await api('POST', `/webhooks/${id}/rotate-secret`, {});
    await api('POST', '/customers', { name: 'Twice Ltd' });
    await drain(h);
    const twice = receiver.received[2]!;
    expect(String(twice.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(third, twice).type).toBe('customer.created');
    expect(() => verified(fresh, twice)).toThrow();
  });

  it('follows no redirect', async () => {
    const { id } = await addEndpoint(api, `${receiver.url}/first`, ['customer.created']);
    receiver.answer = (r) => (r.path === '/first' ? { status: 302, headers: { location: `${receiver.url}/second` } } : { status: 200 });
    await api('POST', '/customers', { name: 'Redirected Ltd' });
    await drain(h);
    expect(receiver.received.map((r) => r.path)).toEqual(['/first']);
    expect((await deliveries(id))[0]).toMatchObject({ status: 'pending', attempts: [{ httpStatus: 302 }] });
  });

  it('reuses a kept-alive connection, and sends again on a new one when the receiver drops a reused one unanswered', async () => {
    // A receiver that keeps connections open, answers a connection's first request, and closes it
    // without answering its second (as a receiver's idle timeout can, just as the connection is reused).
    const seen: Array<{ socket: number; body: string }> = [];
    const sockets = new Map<object, number>();
    const server = http.createServer((req, res) => {
      const socket = sockets.get(req.socket) ?? sockets.set(req.socket, sockets.size + 1).get(req.socket)!;
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        const again = seen.some((s) => s.socket === socket);
        seen.push({ socket, body });
        if (again) req.socket.destroy();
        else res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { id } = await addEndpoint(api, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, ['customer.created']);
      await api('POST', '/customers', { name: 'First Kept Ltd' });
      await drain(h);
      await api('POST', '/customers', { name: 'Second Kept Ltd' });
      await drain(h);
      // The second event went over the first connection (dropped there), then over a new one, and was delivered in one attempt.
      expect(seen.map((s) => [s.socket, JSON.parse(s.body).data.customer.name])).toEqual([
        [1, 'First Kept Ltd'],
        [1, 'Second Kept Ltd'],
        [2, 'Second Kept Ltd'],
      ]);
      expect((await deliveries(id)).map((d: any) => [d.status, d.attempts.length])).toEqual([
        ['delivered', 1],
        ['delivered', 1],
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('keeps a slow receiver off the API', async () => {
    const { id } = await addEndpoint(api, receiver.url, ['customer.created']);
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    receiver.answer = async () => {
      await gate;
      return { status: 204 };
    };
    await api('POST', '/customers', { name: 'Slow Ltd' });
    // One turn claims the delivery and starts its attempt, which the receiver holds open.
    await h.app.webhooks!.tick();
    await vi.waitFor(() => expect(receiver.received).toHaveLength(1));
    expect((await api('POST', '/customers', { name: 'Meanwhile Ltd' })).statusCode).toBe(201);
    expect((await deliveries(id)).map((d: any) => d.status)).toEqual(['pending']);
    release();
    await drain(h);
    expect((await deliveries(id)).map((d: any) => d.status)).toEqual(['delivered', 'delivered']);
  });

  it('goes on delivering when an endpoint is deleted while an attempt to it is under way', async () => {
    const doomed = await addEndpoint(api, receiver.url, ['customer.created']);
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    receiver.answer = async () => {
      await gate;
      return { status: 204 };
    };
    await api('POST', '/customers', { name: 'Doomed Ltd' });
    await h.app.webhooks!.tick();
    await vi.waitFor(() => expect(receiver.received).toHaveLength(1));
    expect((await api('DELETE', `/webhooks/${doomed.id}`)).statusCode).toBe(204);
    release();
    await drain(h);
    receiver.answer = () => ({ status: 204 });
    const kept = await addEndpoint(api, receiver.url, ['customer.created']);
    await api('POST', '/customers', { name: 'After Ltd' });
    await drain(h);
    expect((await deliveries(kept.id)).map((d: any) => d.status)).toEqual(['delivered']);
    expect(receiver.received).toHaveLength(2);
  });
});

describe('addresses', () => {
  it('refuses private addresses, their IPv4-mapped and NAT64 forms, and http://, without the setting', async () => {
    const strict = await startHarness();
    try {
      for (const url of [
        receiver.url,
        'https://127.0.0.1/',
        'https://10.1.2.3/',
        'https://192.168.0.1/',
        'https://169.254.169.254/',
        'https://[::1]/',
        'https://[::ffff:127.0.0.1]/',
        'https://[::ffff:a01:203]/',
        'https://[64:ff9b::7f00:1]/',
        'https://[64:ff9b::a01:203]/',
        'https://[fd00::1]/',
        'https://localhost/',
        'http://93.184.215.14/',
        'ftp://93.184.215.14/',
      ]) {
        const response = await strict.admin('POST', '/webhooks', { url, events: ['*'] });
        expect(response.statusCode, url).toBe(400);
        expect(response.data.error, url).toMatch(/not a public address|must start with https/);
      }
      // The refusal says how to allow a local receiver.
      expect((await strict.admin('POST', '/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['*'] })).data).toEqual({
        error:
          'the host 127.0.0.1 resolves to 127.0.0.1, which is not a public address (to allow it, start the service with LICENSOR_WEBHOOK_ALLOW_NETWORKS=127.0.0.1/32)',
      });
      expect((await strict.admin('POST', '/webhooks', { url: 'https://[::ffff:10.0.0.1]/', events: ['*'] })).data.error).toMatch(
        /LICENSOR_WEBHOOK_ALLOW_NETWORKS=10\.0\.0\.1\/32\)$/,
      );
      expect((await strict.admin('POST', '/webhooks', { url: 'https://93.184.215.14/hooks', events: ['*'] })).statusCode).toBe(201);
    } finally {
      await strict.close();
    }
  });

  it('checks the address again at every attempt', async () => {
    const { id } = await addEndpoint(h.admin, receiver.url, ['customer.created']);
    // An endpoint saved while allowed, then pointed at a refused address behind the API's back.
    await h.database.db.updateTable('webhook_endpoints').set({ url: 'https://[::ffff:10.0.0.1]/' }).where('id', '=', id).execute();
    await h.admin('POST', '/customers', { name: 'Moved Ltd' });
    await drain(h);
    expect((await deliveries(id))[0].attempts[0]).toMatchObject({ httpStatus: null, error: expect.stringContaining('not a public address') });
  });
});

describe('integration.failed (DESIGN 22)', () => {
  const SECRET = 'whsec_failed_hook_secret_0123456789';
  /** An invoice with more lines than the event carries: FAILED. */
  const failing = () => invoicePaid({ periodEnd: nowS() + 86_400, lines: [{ price: 'price_failing' }] }).replace('"has_more":false', '"has_more":true');
  const deliver = (id: number, payload: string) =>
    h.request('POST', `/o/${h.slug}/api/hooks/stripe/${id}`, { body: payload, headers: stripeHeaders(payload, SECRET) });

  it('subscribing needs integrations:read; a * endpoint carries it only when its saver held integrations:read', async () => {
    const noIntegrations = h.as({ token: await h.createToken(['webhooks:write', 'licenses:read', 'products:read', 'customers:read']) });
    const refused = await noIntegrations('POST', '/webhooks', { url: receiver.url, events: ['integration.failed'] });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toContain('integrations:read');
    // `*` needs only the first three read scopes, and stands for the events whose read scope its saver holds.
    const star = await addEndpoint(noIntegrations, `${receiver.url}/star-without`);
    const allScopes = h.as({ token: await h.createToken(['webhooks:write', 'licenses:read', 'products:read', 'customers:read', 'integrations:read']) });
    const starWith = await addEndpoint(allScopes, `${receiver.url}/star-with`);
    const listed = await addEndpoint(h.admin, `${receiver.url}/listed`, ['integration.failed']);

    const product = await createProduct(h.admin);
    const connection = (
      await h.admin('POST', '/integrations', {
        provider: 'stripe',
        name: 'failing-shop',
        signingSecret: SECRET,
        mappings: [{ match: 'price_failing', productId: product.id }],
      })
    ).data;
    vi.useFakeTimers({ toFake: ['Date'] });
    // Early in a UTC clock hour, so the two failures below share it.
    vi.setSystemTime(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 60_000);
    const first = await deliver(connection.id, failing());
    expect(first.data).toMatchObject({ outcome: 'FAILED', duplicate: false });
    // The record and the entry as the API answers them right after the failure.
    const record = (await allScopes('GET', `/integrations/${connection.id}`)).data;
    const entry = (await allScopes('GET', `/integrations/${connection.id}/events`)).data.items[0];
    expect(record).toMatchObject({ failedEvents: 1 });
    expect(entry).toMatchObject({ eventId: first.data.eventId, outcome: 'FAILED', error: 'more lines than the event carries' });
    expect((await deliver(connection.id, failing())).data.outcome).toBe('FAILED');
    // Verified as they arrive: the library refuses a timestamp five minutes away from its clock.
    const secrets: Record<string, string> = { '/star-without': star.secret, '/star-with': starWith.secret, '/listed': listed.secret };
    const bodies: Array<{ path: string; type: string; data: any }> = [];
    const arrive = async () => {
      await drain(h);
      bodies.push(...receiver.received.slice(bodies.length).map((r) => ({ path: r.path, ...verified(secrets[r.path]!, r) })));
    };
    const failures = (path: string) => bodies.filter((b) => b.path === path && b.type === 'integration.failed');
    await arrive();
    expect(failures('/star-without')).toEqual([]);
    expect(failures('/star-with')).toHaveLength(1);
    expect(failures('/listed')).toHaveLength(1);
    expect(failures('/listed')[0]!.data).toEqual({ integration: record, event: entry });

    // The next clock hour's first failure raises it again; the second failure of this one raised nothing.
    vi.setSystemTime(Date.now() + 3_600_000);
    expect((await deliver(connection.id, failing())).data.outcome).toBe('FAILED');
    await arrive();
    expect(failures('/listed')).toHaveLength(2);
    expect(failures('/listed')[1]!.data.integration.failedEvents).toBe(3);
    expect(failures('/star-without')).toEqual([]);
  });
});
