// The check API's lean handler (check/lean.ts) answers exactly as the Fastify routes it serves ahead of.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject, type InjectOptions } from 'light-my-request';
import { startHarness, type Harness } from '../harness.js';
import { checkBody, checkedProduct, nonce, type CheckedProduct } from '../check-helpers.js';

let h: Harness;
let limited: Harness;
let p: CheckedProduct;
let floating: CheckedProduct;
let licence: any;
let lease: any;

beforeAll(async () => {
  h = await startHarness();
  limited = await startHarness({ LICENSOR_CHECK_RATE_ADDRESS: '1', LICENSOR_CHECK_RATE_PRODUCT: '1' });
  p = await checkedProduct(h);
  floating = await checkedProduct(h, { seatModel: 'FLOATING', allowedLicenceTypes: ['ONLINE'], maxBorrowSeconds: 86_400, maxMachines: 3 });
  licence = await p.issue({ maxMachines: 2 });
  lease = await floating.issue();
});
afterAll(async () => {
  await h?.close();
  await limited?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

type Sent = { status: number; headers: Record<string, unknown>; body: string };
const seen = (r: { statusCode: number; headers: Record<string, unknown>; body: string }): Sent => {
  const { date: _date, ...headers } = r.headers;
  return { status: r.statusCode, headers, body: r.body };
};

/**
 * The same request through the lean handler (asserting whether it took it) and through Fastify's
 * own routes (app.inject, which never reaches the server's listener), at the same instant;
 * `toFastify` when the second must differ to meet the same state (another address).
 */
async function both(app: Harness, options: InjectOptions, taken = true, toFastify = options): Promise<{ lean: Sent; fastify: Sent }> {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
  let took: boolean | undefined;
  const lean = await inject((req, res) => {
    took = app.app.checkApiLean(req, res);
    if (!took) app.app.server.emit('request', req, res);
  }, options);
  expect(took).toBe(taken);
  const fastify = await app.app.inject(toFastify);
  vi.useRealTimers();
  return { lean: seen(lean), fastify: seen(fastify) };
}

const post = (product: CheckedProduct, action: string, body: unknown, headers: Record<string, string> = {}, slug = h.slug): InjectOptions => ({
  method: 'POST',
  url: `/o/${slug}/api/public/license/${product.checkId}/${action}`,
  headers: { authorization: `Bearer ${product.token}`, 'content-type': 'application/json', ...headers },
  payload: typeof body === 'string' ? body : JSON.stringify(body),
});

describe('the lean check handler', () => {
  it('answers a valid check, and the next ones with a label and unknown fields, byte for byte as Fastify does', async () => {
    const body = checkBody(licence.licenseString, 'lean-1');
    // The first binds the machine; both then answer from the same seat, bound at the same instant.
    await both(h, post(p, 'check', body));
    for (const options of [
      post(p, 'check', body),
      post(p, 'check', { ...body, machineLabel: 'Build box', extra: { any: 1 } }, { 'content-type': 'application/json; charset=utf-8' }),
    ]) {
      const { lean, fastify } = await both(h, options);
      expect(lean.status).toBe(200);
      expect(JSON.parse(lean.body)).toMatchObject({ valid: true, status: 'ACTIVE' });
      expect(lean).toEqual(fastify);
    }
  });

  it('gives every refusal in its order with the same status, headers and body', async () => {
    const body = checkBody(licence.licenseString, 'lean-2');
    const other = await checkedProduct(h, { active: false });
    const cases: Array<[InjectOptions, number, boolean?]> = [
      [post(p, 'check', body, {}, 'no-such-org'), 404],
      [post(p, 'check', body, { authorization: 'Bearer nonsense' }), 401],
      [post(p, 'check', body, { authorization: `Bearer ${other.token}` }), 401],
      [post(other, 'check', body), 403],
      [post(p, 'check', body, { 'content-type': 'text/plain' }), 415, false],
      [{ ...post(p, 'check', body), headers: { authorization: `Bearer ${p.token}` } }, 415, false],
      [post(p, 'check', '{"license": '), 400],
      [post(p, 'check', '{"__proto__": {}}'), 400],
      [post(p, 'check', ''), 400],
      [post(p, 'check', `{"license":"${'a'.repeat(1024 * 1024)}"}`), 413],
      [post(p, 'check', { ...body, nonce: 'short' }), 400],
      [post(p, 'check', { ...body, fingerprint: 'SVC1.nothing' }), 400],
      [post(p, 'check', { ...body, license: `${licence.licenseString.slice(0, -4)}AAAA` }), 400],
      [post(p, 'check', { fingerprint: body.fingerprint, nonce: body.nonce }), 400],
      [post(p, 'fetch', { license: body.license, fingerprint: body.fingerprint }), 404],
      [post(p, 'release', { ...body, nonce: nonce() }), 200],
      [post(p, 'borrow', { ...body, until: new Date(Date.now() + 60_000).toISOString() }), 400],
      [post(floating, 'borrow', { ...checkBody(lease.licenseString, 'lean-3'), until: 'tomorrow' }), 400],
      [post(floating, 'borrow', { ...checkBody(lease.licenseString, 'lean-3'), until: new Date(Date.now() + 60_000).toISOString() }), 403],
      [{ ...post(p, 'check', body), url: `/o/${h.slug}/api/public/license/${p.checkId}%00/check` }, 404, false],
      [{ ...post(p, 'check', body), url: `/o/${h.slug}/api/public/license/${p.checkId}/check?x=1` }, 400, false],
      [{ ...post(p, 'check', body), method: 'PUT' }, 404, false],
    ];
    for (const [options, status, taken] of cases) {
      const { lean, fastify } = await both(h, options, taken);
      expect(`${options.method} ${options.url} ${lean.status}`).toBe(`${options.method} ${options.url} ${status}`);
      expect(lean).toEqual(fastify);
      if (taken !== false)
        expect(lean.headers).toMatchObject({
          'x-content-type-options': 'nosniff',
          'cache-control': 'no-store',
          'content-type': 'application/json; charset=utf-8',
        });
    }
  });

  it('refuses past the per-address and per-product limits with the same Retry-After', async () => {
    const product = await checkedProduct(limited);
    const issued = await product.issue();
    const body = checkBody(issued.licenseString, 'lean-4');
    // The limits count per calendar minute: near its end, wait for the next, so that no count resets mid-test.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    const from = (remoteAddress: string, token = product.token): InjectOptions => ({
      ...post(product, 'check', body, { authorization: `Bearer ${token}` }, limited.slug),
      remoteAddress,
    });
    await both(limited, from('10.0.0.1'));
    const perAddress = await both(limited, from('10.0.0.1'));
    expect(perAddress.lean.status).toBe(429);
    expect(perAddress.lean.headers['retry-after']).toBeDefined();
    expect(perAddress.lean).toEqual(perAddress.fastify);
    const perProduct = await both(limited, from('10.0.0.2'), true, from('10.0.0.3'));
    expect(perProduct.lean.status).toBe(429);
    expect(JSON.parse(perProduct.lean.body).error).toBe('too many checks for this product');
    expect(perProduct.lean).toEqual(perProduct.fastify);
  });

  it('answers a fault with 500 and the request id, as Fastify does', async () => {
    const broken = await startHarness();
    const product = await checkedProduct(broken);
    const issued = await product.issue();
    await broken.database.close();
    const { lean, fastify } = await both(broken, post(product, 'check', checkBody(issued.licenseString, 'lean-5'), {}, broken.slug));
    expect(lean.status).toBe(500);
    const withoutId = (s: Sent) => ({ ...s, body: s.body.replace(/req-[0-9a-z]+/, 'req-?'), headers: { ...s.headers, 'content-length': undefined } });
    expect(withoutId(lean)).toEqual(withoutId(fastify));
    // Request ids come from one counter, so the lean handler's never repeat Fastify's.
    expect(JSON.parse(lean.body).error).not.toBe(JSON.parse(fastify.body).error);
    // The same error line, naming the request the answer names.
    const { app, lines } = await broken.loggedApp();
    await app.ready();
    const faults: string[] = [];
    for (const dispatch of ['lean', 'fastify']) {
      lines.length = 0;
      const options = post(product, 'check', checkBody(issued.licenseString, 'lean-5'), {}, broken.slug);
      const answer = dispatch === 'lean' ? await inject((req, res) => void app.checkApiLean(req, res), options) : await app.inject(options);
      const line = lines.map((l) => JSON.parse(l)).find((l) => l.level === 50);
      expect(answer.body).toContain(line.reqId);
      faults.push(JSON.stringify({ msg: line.msg, type: line.err.type, message: line.err.message }));
    }
    expect(faults[0]).toBe(faults[1]);
    await app.close();
    await broken.app.close();
  });

  it('counts its requests in /metrics under the route pattern', async () => {
    const line = (status: number) => `http_requests_total{method="POST",route="/o/:slug/api/public/license/:checkId/check",status_code="${status}"}`;
    const count = async (status: number) => {
      const metrics = (await h.anonymous('GET', '//metrics')).body as string;
      return Number(
        metrics
          .split('\n')
          .find((l) => l.startsWith(line(status)))
          ?.split(' ')[1] ?? 0,
      );
    };
    const before = [await count(200), await count(401)];
    await both(h, post(p, 'check', checkBody(licence.licenseString, 'lean-1')));
    await both(h, post(p, 'check', checkBody(licence.licenseString, 'lean-1'), { authorization: 'Bearer nonsense' }));
    expect([await count(200), await count(401)]).toEqual([before[0]! + 2, before[1]! + 2]);
  });
});

describe('the lean check handler while the app closes', () => {
  it('leaves requests to Fastify, which answers 503, once closing has begun; one in flight is answered first', async () => {
    const closing = await startHarness();
    const product = await checkedProduct(closing);
    const issued = await product.issue();
    // Through the server's listener as it stands (injectServed would first wait for the app to be ready).
    const send = () =>
      inject(
        (req, res) => void closing.app.server.emit('request', req, res),
        post(product, 'check', checkBody(issued.licenseString, 'lean-7'), {}, closing.slug),
      );
    const inFlight = send();
    const closed = closing.app.close();
    await vi.waitFor(async () => expect((await send()).statusCode).toBe(503));
    expect((await inFlight).statusCode).toBe(200);
    await closed;
    await closing.close();
  });
});

describe('the lean check handler at LOG_LEVEL trace', () => {
  it('logs the lines Fastify logs for the same requests', async () => {
    const { app, lines } = await h.loggedApp();
    await app.ready();
    const body = checkBody(licence.licenseString, 'lean-6');
    const comparable = (from: number) =>
      lines.splice(from).map((line) => {
        const { time: _time, reqId: _reqId, responseTime: _responseTime, ...rest } = JSON.parse(line);
        return rest;
      });
    for (const options of [post(p, 'check', body), post(p, 'check', body, { authorization: 'Bearer nonsense', 'x-forwarded-host': 'example.test' })]) {
      lines.length = 0;
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      await inject((req, res) => void expect(app.checkApiLean(req, res)).toBe(true), options);
      const lean = comparable(0);
      await app.inject(options);
      vi.useRealTimers();
      expect(lean.map((line) => line.msg)).toEqual(['incoming request', 'request completed']);
      expect(lean[0].req).toMatchObject({ method: 'POST', remoteAddress: '127.0.0.1' });
      expect(lean).toEqual(comparable(0));
    }
    await app.close();
  });
});
