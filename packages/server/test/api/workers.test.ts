// DESIGN.md 11 with LICENSOR_WORKERS=2: a real `serve` process, its two workers sharing the
// port, on the database of an in-process harness (which seeds the organisation and products).
// Each request goes on a connection of its own, so the primary deals them to both workers.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe } from '../cli.js';
import { checkBody, checkedProduct, type CheckedProduct } from '../check-helpers.js';
import { inOneRateWindow, startHarness, type Harness } from '../harness.js';

interface Answer {
  status: number;
  data: any;
}

/** One request on a fresh connection; `hold` sends the body's first half only until it resolves. */
function send(url: string, method: string, body: unknown, headers: Record<string, string>, hold?: Promise<void>): Promise<Answer> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method,
      agent: false,
      headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}) },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, data: text ? JSON.parse(text) : undefined }));
    });
    if (!hold) return void request.end(payload);
    const half = Math.floor(payload.length / 2);
    request.write(payload.slice(0, half));
    void hold.then(() => request.end(payload.slice(half)));
  });
}

interface Service {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Process ids of the workers the primary reported started, in order. */
  workers: () => number[];
  check(product: CheckedProduct, body: unknown, token?: string, hold?: Promise<void>): Promise<Answer>;
  api(method: string, path: string, token: string, body?: unknown): Promise<Answer>;
  stop(): Promise<number | null>;
}

const until = async (condition: () => boolean, what: string, timeout = 20_000) => {
  const deadline = Date.now() + timeout;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};
const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern, 'g'))?.length ?? 0;

/** Starts `serve` with two workers and waits until both listen. */
async function serveWorkers(env: Record<string, string>): Promise<Service> {
  const s = await startServe({ ...env, LICENSOR_WORKERS: '2', LOG_LEVEL: 'info' });
  await until(() => count(s.output(), /Server listening at/) >= 2, 'both workers to listen');
  const slug = 'acme';
  return {
    ...s,
    workers: () => [...s.output().matchAll(/"worker":(\d+),"msg":"(?:worker started|standby worker now serving)"/g)].map((m) => Number(m[1])),
    check: (product, body, token = product.token, hold) =>
      send(`${s.url}/o/${slug}/api/public/license/${product.checkId}/check`, 'POST', body, { authorization: `Bearer ${token}` }, hold),
    api: (method, path, token, body) => send(`${s.url}/o/${slug}/api${path}`, method, body, { authorization: `Bearer ${token}` }),
    async stop() {
      if (s.child.exitCode !== null) return s.child.exitCode;
      const exited = new Promise<number | null>((resolve) => s.child.once('exit', resolve));
      s.child.kill('SIGTERM');
      return exited;
    },
  };
}

let h: Harness;
let service: Service;
let token: string;
beforeAll(async () => {
  h = await startHarness();
  token = await h.createToken(['licenses:read', 'licenses:write', 'products:read', 'products:write']);
  service = await serveWorkers(h.env);
}, 90_000);
afterAll(async () => {
  await service?.stop();
  await h?.close();
});

const liveSeats = async (lid: string) =>
  (await h.admin('GET', `/licenses/${lid}/machines`)).data.filter((m: { releasedAt: string | null }) => m.releasedAt === null).length;

describe('two workers (LICENSOR_WORKERS=2)', () => {
  it('both serve the port', () => {
    expect(service.workers()).toHaveLength(2);
    expect(new Set(service.workers()).size).toBe(2);
  });

  it('bind exactly maxMachines seats for 50 first checks at once from 50 machines, and one seat for 20 from one machine', async () => {
    const product = await checkedProduct(h);
    const shared = await product.issue({ maxMachines: 3 });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => service.check(product, checkBody(shared.licenseString, `many-${i}`))));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.data.valid)).toHaveLength(3);
    expect(answers.filter((a) => !a.data.valid).map((a) => a.data.reason)).toEqual(Array(47).fill('SEATS_FULL'));
    expect(await liveSeats(shared.lid)).toBe(3);

    const single = await product.issue({ maxMachines: 3 });
    const same = await Promise.all(Array.from({ length: 20 }, () => service.check(product, checkBody(single.licenseString, 'one-machine'))));
    expect(same.map((a) => [a.status, a.data.valid])).toEqual(Array(20).fill([200, true]));
    expect(new Set(same.map((a) => a.data.boundAt)).size).toBe(1);
    expect(await liveSeats(single.lid)).toBe(1);
  });

  it('answer the next check on every worker with a revocation made through either', async () => {
    const product = await checkedProduct(h);
    const licence = await product.issue({ maxMachines: 1 });
    const checks = () => Promise.all(Array.from({ length: 6 }, () => service.check(product, checkBody(licence.licenseString, 'revoked-machine'))));
    expect((await checks()).map((a) => a.data.valid)).toEqual(Array(6).fill(true));
    const revoked = await service.api('POST', `/licenses/${licence.lid}/revoke`, token, { reason: 'chargeback' });
    expect(revoked.status).toBe(200);
    const after = await checks();
    expect(after.map((a) => [a.data.status, a.data.reason])).toEqual(Array(6).fill(['REVOKED', 'REVOKED']));
  });

  it('refuse a rotated check token at once on every worker, and take the new one', async () => {
    const product = await checkedProduct(h);
    const licence = await product.issue();
    const checks = (withToken: string) =>
      Promise.all(Array.from({ length: 6 }, () => service.check(product, checkBody(licence.licenseString, 'rotation'), withToken)));
    expect((await checks(product.token)).map((a) => a.status)).toEqual(Array(6).fill(200));
    const rotated = await service.api('POST', `/products/${product.id}/check-token`, token);
    expect(rotated.status).toBe(200);
    const old = await checks(product.token);
    expect(old.map((a) => [a.status, a.data.error])).toEqual(Array(6).fill([401, 'unknown or replaced check token']));
    expect((await checks(rotated.data.checkToken)).map((a) => a.status)).toEqual(Array(6).fill(200));
  });

  it('replace a worker killed with SIGKILL, answering throughout', async () => {
    const product = await checkedProduct(h);
    const licence = await product.issue({ maxMachines: 1 });
    const [victim] = service.workers();
    process.kill(victim!, 'SIGKILL');
    await until(() => service.output().includes('"msg":"worker died: starting another"'), 'the primary to see the death');
    const meanwhile = await Promise.all(Array.from({ length: 6 }, () => service.check(product, checkBody(licence.licenseString, 'survivor'))));
    expect(meanwhile.map((a) => a.status)).toEqual(Array(6).fill(200));
    await until(() => service.workers().length === 3 && count(service.output(), /Server listening at/) >= 3, 'the replacement to listen');
    const later = await Promise.all(Array.from({ length: 6 }, () => service.check(product, checkBody(licence.licenseString, 'survivor'))));
    expect(later.map((a) => [a.status, a.data.valid])).toEqual(Array(6).fill([200, true]));
  });

  // Last: it stops the service.
  it('drain on SIGTERM: every check already received is answered, then the service exits 0', async () => {
    const product = await checkedProduct(h);
    const licence = await product.issue({ maxMachines: 10 });
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const received = () => count(service.output(), new RegExp(`"url":"/o/acme/api/public/license/${product.checkId}/check".*?"msg":"incoming request"`));
    const inFlight = Array.from({ length: 10 }, (_, i) => service.check(product, checkBody(licence.licenseString, `drain-${i}`), product.token, held));
    await until(() => received() === 10, 'all ten checks to be received');
    const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve));
    service.child.kill('SIGTERM');
    await until(() => count(service.output(), /"msg":"shutting down: finishing in-flight requests"/) >= 2, 'both workers to start draining');
    expect(service.child.exitCode).toBeNull();
    finish();
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => [a.status, a.data.valid])).toEqual(Array(10).fill([200, true]));
    expect(await exited).toBe(0);
    expect(await liveSeats(licence.lid)).toBe(10);
  });
});

/** `/metrics` on a connection of its own: the primary hands each new connection to the next worker. */
const scrape = (url: string) =>
  new Promise<string>((resolve, reject) => {
    http
      .get(`${url}/metrics`, { agent: false }, (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve(text));
      })
      .on('error', reject);
  });

/**
 * Until enough scrapes in a row (so every worker's) say Redis holds the counts: a worker whose
 * connection to Redis is not yet up counts without it (DESIGN.md 17), as on a loaded machine
 * just after start-up, and the totals this test asserts are Redis's.
 */
async function redisUpInEveryWorker(url: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (let inARow = 0; inARow < 6; ) {
    if (Date.now() > deadline) throw new Error('timed out waiting for every worker to reach Redis');
    inARow = /^licensor_redis_up 1$/m.test(await scrape(url)) ? inARow + 1 : 0;
    if (!inARow) await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('rate limits with two workers hold their totals', () => {
  const redisEnv = () => ({ REDIS_URL: 'redis://127.0.0.1:6379', LICENSOR_REDIS_PREFIX: `licensor-test:${randomBytes(6).toString('hex')}:` });

  it.for([
    ['held by the primary', {}],
    ['in Redis', redisEnv()],
  ] as const)('%s: 20 checks from one address against a limit of 12 a minute get 12 answers and 8 refusals', { timeout: 90_000 }, async ([, extra]) => {
    const product = await checkedProduct(h);
    const licence = await product.issue();
    const limited = await serveWorkers({ ...h.env, ...extra, LICENSOR_CHECK_RATE_ADDRESS: '12' });
    try {
      if ('REDIS_URL' in extra) await redisUpInEveryWorker(limited.url);
      // Up to 20 s of waiting on a loaded machine, hence the longer timeout.
      await inOneRateWindow(20);
      const answers = await Promise.all(Array.from({ length: 20 }, () => limited.check(product, checkBody(licence.licenseString, 'limited'))));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(12);
      expect(answers.filter((a) => a.status === 429).map((a) => a.data.error)).toEqual(Array(8).fill('too many checks from this address'));
    } finally {
      expect(await limited.stop()).toBe(0);
    }
  });
});
