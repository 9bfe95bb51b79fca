import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.js';
import { openDatabase, sqliteFileIn } from '../../src/db/database.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { HOLD, LEASE_MS } from '../../src/webhooks/outbox.js';
import { startServe, stopServe } from '../cli.js';
import { backend, startHarness, type Harness } from '../harness.js';
import { addEndpoint, startReceiver, verified, type Receiver } from '../webhook-helpers.js';

const ALLOW = { LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' };
const EVENTS = 200;

let h: Harness;
let receiver: Receiver;
beforeAll(async () => {
  h = await startHarness(ALLOW);
  // This process's own loop stays out: the instances under test deliver.
  await h.app.webhooks!.stop();
  receiver = await startReceiver();
});
afterAll(async () => {
  await h?.close();
  await receiver?.close();
});
afterEach(() => vi.useRealTimers());

/** An endpoint and EVENTS customer.created events waiting for it; returns their event ids. */
async function pendingEvents(): Promise<string[]> {
  await addEndpoint(h.admin, receiver.url, ['customer.created']);
  for (let i = 0; i < EVENTS; i++) {
    const response = await h.admin('POST', '/customers', { name: `Pending ${i}` });
    expect(response.statusCode).toBe(201);
  }
  const rows = await h.database.db.selectFrom('webhook_events').select('event_id').where('type', '=', 'customer.created').execute();
  expect(rows).toHaveLength(EVENTS);
  return rows.map((r) => r.event_id);
}

/** Another service instance over the same database, delivering only when told. */
async function instance() {
  const database = await openDatabase({ databaseUrl: h.config.databaseUrl, sqliteFile: sqliteFileIn(h.config.dataDir) });
  const app = await buildApp({ config: h.config, database, masterKey: loadMasterKey(h.config, () => {}), logger: false, deliverWebhooks: false });
  await app.ready();
  return {
    app,
    close: async () => {
      await app.close();
      await database.close();
    },
  };
}

const received = () => receiver.received.map((r) => String(r.headers['webhook-id']));

describe('webhook delivery across processes', () => {
  it('loses nothing when the service is killed with -9 mid-delivery, and delivers all after a restart', async () => {
    receiver.received.length = 0;
    receiver.answer = () => new Promise((resolve) => setTimeout(() => resolve({ status: 204 }), 20));
    const ids = await pendingEvents();
    const serve = await startServe({ ...h.env, ...ALLOW, LOG_LEVEL: 'info' });
    await vi.waitFor(() => expect(receiver.received.length).toBeGreaterThanOrEqual(30), { timeout: 30_000, interval: 5 });
    serve.child.kill('SIGKILL');
    await new Promise((resolve) => serve.child.once('exit', resolve));
    const beforeRestart = new Set(received()).size;
    expect(beforeRestart).toBeLessThan(EVENTS);

    // The restarted service: the killed process's leases run out.
    const restarted = await instance();
    try {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + LEASE_MS + 1_000);
      await restarted.app.webhooks!.drain();
    } finally {
      await restarted.close();
    }
    expect(new Set(received())).toEqual(new Set(ids));
    const duplicates = receiver.received.length - EVENTS;
    // At least once: only attempts whose outcome was not yet written at the kill may be made again.
    console.info(`kill -9 after ${beforeRestart} deliveries: ${duplicates} delivered twice`);
    expect(duplicates).toBeLessThanOrEqual(HOLD.perEndpoint);
    const statuses = await h.database.db.selectFrom('webhook_deliveries').select('status').distinct().execute();
    expect(statuses.map((s) => s.status)).toEqual(['delivered']);
  });

  it('`serve` delivers from a thread of its own, counts its attempts in /metrics, and stops cleanly on SIGTERM', async () => {
    await h.database.db.deleteFrom('webhook_endpoints').execute();
    await h.database.db.deleteFrom('webhook_events').execute();
    receiver.received.length = 0;
    receiver.answer = () => ({ status: 204 });
    const serve = await startServe({ ...h.env, ...ALLOW, LOG_LEVEL: 'info' });
    try {
      const { secret } = await addEndpoint(h.admin, receiver.url, ['customer.created']);
      for (let i = 0; i < 5; i++) expect((await h.admin('POST', '/customers', { name: `Threaded ${i}` })).statusCode).toBe(201);
      await vi.waitFor(() => expect(new Set(received()).size).toBe(5), { timeout: 20_000, interval: 20 });
      expect(receiver.received.map((r) => verified(secret, r).type)).toEqual(Array(5).fill('customer.created'));
      await vi.waitFor(async () => {
        const metrics = await (await fetch(`${serve.url}/metrics`)).text();
        expect(metrics).toMatch(/^webhook_attempts_total\{outcome="delivered"\} 5$/m);
      });
    } finally {
      await stopServe(serve.child);
    }
    expect(serve.child.exitCode).toBe(0);
    expect(serve.output()).not.toMatch(/delivery thread (failed|ended)/);
  });

  // SQLite takes one process at a time (its write lock), which two instances in one test process would wait on forever.
  it.runIf(backend === 'postgres')('two instances on one PostgreSQL database never make one attempt twice', async () => {
    await h.database.db.deleteFrom('webhook_endpoints').execute();
    await h.database.db.deleteFrom('webhook_events').execute();
    receiver.received.length = 0;
    receiver.answer = () => new Promise((resolve) => setTimeout(() => resolve({ status: 204 }), 2));
    const ids = await pendingEvents();
    const [a, b] = [await instance(), await instance()];
    try {
      await Promise.all([a.app.webhooks!.drain(), b.app.webhooks!.drain()]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    expect(received().sort()).toEqual([...ids].sort());
    const attempts = await h.database.db
      .selectFrom('webhook_attempts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(attempts.n)).toBe(EVENTS);
  });
});
