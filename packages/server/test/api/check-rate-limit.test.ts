import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { injectServed, startHarness, type Harness } from '../harness.js';
import { checkBody, checkedProduct } from '../check-helpers.js';

/*
 * Limits count per one-minute window; the clock is pinned to the start of a window so a run
 * never straddles two (only Date is faked: timers and I/O stay real).
 */
beforeEach(() => {
  const now = Date.now();
  vi.useFakeTimers({ toFake: ['Date'], now: now - (now % 60_000) + 60_000 });
});
afterEach(() => vi.useRealTimers());

const harnesses: Harness[] = [];
afterAll(() => Promise.all(harnesses.map((h) => h.close())));

async function harness(env: Record<string, string>) {
  const h = await startHarness(env);
  harnesses.push(h);
  return h;
}

/** A product and licence, and a sender of checks from a given address (with a wrong secret when asked). */
async function setup(h: Harness) {
  const product = await checkedProduct(h);
  const licence = await product.issue({ maxMachines: 100 });
  const wrong = product.token.replace(/_[0-9a-f]{64}$/, `_${'0'.repeat(64)}`);
  return (address: string, { wrongToken = false } = {}) =>
    injectServed(h.app, {
      method: 'POST',
      url: `/o/${h.slug}/api/public/license/${product.checkId}/check`,
      remoteAddress: address,
      headers: { authorization: `Bearer ${wrongToken ? wrong : product.token}`, 'content-type': 'application/json' },
      payload: JSON.stringify(checkBody(licence.licenseString, address)),
    }).then((r) => ({ status: r.statusCode, retryAfter: r.headers['retry-after'], data: JSON.parse(r.body) }));
}

function limitTests(env: () => Record<string, string>) {
  it('per address, before authentication: 429 with Retry-After once the limit is used, by any request', async () => {
    const h = await harness({ ...env(), LICENSOR_CHECK_RATE_ADDRESS: '3', LICENSOR_CHECK_RATE_PRODUCT: '0' });
    const send = await setup(h);
    expect((await send('10.0.0.1', { wrongToken: true })).status).toBe(401);
    expect((await send('10.0.0.1')).status).toBe(200);
    expect((await send('10.0.0.1')).status).toBe(200);
    const refused = await send('10.0.0.1');
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(59);
    expect(refused.data).toEqual({ error: expect.any(String) });
    expect((await send('10.0.0.2')).status).toBe(200);
    // The next window starts afresh.
    vi.setSystemTime(Date.now() + 60_000);
    expect((await send('10.0.0.1')).status).toBe(200);
  });

  it('per product, after authentication: requests without the token never use it up', async () => {
    const h = await harness({ ...env(), LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '2' });
    const send = await setup(h);
    const other = await setup(h);
    for (let i = 0; i < 5; i++) expect((await send(`10.1.0.${i}`, { wrongToken: true })).status).toBe(401);
    expect((await send('10.1.1.1')).status).toBe(200);
    expect((await send('10.1.1.2')).status).toBe(200);
    const refused = await send('10.1.1.3');
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBeDefined();
    expect((await other('10.1.1.4')).status).toBe(200);
  });
}

describe('check rate limits in memory', () => {
  limitTests(() => ({}));
});

describe('check rate limits in Redis', () => {
  const redisEnv = () => ({ REDIS_URL: 'redis://127.0.0.1:6379', LICENSOR_REDIS_PREFIX: `licensor-test:${randomBytes(6).toString('hex')}:` });
  limitTests(redisEnv);

  it('are shared by instances', async () => {
    const env = { ...redisEnv(), LICENSOR_CHECK_RATE_ADDRESS: '3', LICENSOR_CHECK_RATE_PRODUCT: '0' };
    const one = await harness(env);
    const two = await harness(env);
    const sendOne = await setup(one);
    const sendTwo = await setup(two);
    expect((await sendOne('10.2.0.1')).status).toBe(200);
    expect((await sendTwo('10.2.0.1')).status).toBe(200);
    expect((await sendOne('10.2.0.1')).status).toBe(200);
    expect((await sendTwo('10.2.0.1')).status).toBe(429);
  });

  it('are counted without Redis while it is unreachable: checks go on, the limits still hold (DESIGN.md 17)', async () => {
    const h = await harness({ REDIS_URL: 'redis://127.0.0.1:1', LICENSOR_CHECK_RATE_ADDRESS: '2', LICENSOR_CHECK_RATE_PRODUCT: '0' });
    const send = await setup(h);
    expect((await send('10.3.0.1')).status).toBe(200);
    expect((await send('10.3.0.1')).status).toBe(200);
    expect((await send('10.3.0.1')).status).toBe(429);
    expect((await send('10.3.0.2')).status).toBe(200);
  });
});
