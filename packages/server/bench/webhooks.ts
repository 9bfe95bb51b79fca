/**
 * bench:webhooks — 10,000 licences issued through HTTP with and without a webhook endpoint
 * (`licence.issued`, to a receiver in this process on loopback), against a separate service
 * process (SQLite; PostgreSQL too when DATABASE_URL is set). Reports the issue rate of each run
 * and, with the endpoint, when every event had arrived and the delivery lag (arrival minus the
 * event's `timestamp`). LICENCES and CONCURRENCY override the load shape; BACKENDS=postgres
 * runs one backend only.
 */
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import { benchEnv, benchSession, percentile, startService } from './support.js';

const LICENCES = Number(process.env.LICENCES ?? 10_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);

interface Receiver {
  url: string;
  /** Arrival minus the event's timestamp, per distinct webhook-id, in ms. */
  lags: Map<string, number>;
  deliveries: number;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const receiver = { url: '', lags: new Map<string, number>(), deliveries: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const arrived = Date.now();
      const { timestamp } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string };
      receiver.deliveries++;
      const id = String(req.headers['webhook-id']);
      if (!receiver.lags.has(id)) receiver.lags.set(id, arrived - Date.parse(timestamp));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  receiver.close = () => new Promise((resolve) => server.close(() => resolve()));
  return receiver;
}

/** Issues LICENCES licences with CONCURRENCY clients; with `endpoint`, waits for every event to arrive. */
async function run(backend: 'sqlite' | 'postgres', receiver: Receiver | null) {
  const { env, dispose } = await benchEnv(backend);
  const service = await startService({ ...env, LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' });
  try {
    const api = `${service.url}/o/default/api`;
    const headers = await benchSession(api);
    const product = (await (
      await fetch(`${api}/products`, { method: 'POST', headers, body: JSON.stringify({ productKey: 'bench', name: 'Bench' }) })
    ).json()) as { id: number };
    if (receiver) {
      const created = await fetch(`${api}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: receiver.url, events: ['licence.issued'] }) });
      if (created.status !== 201) throw new Error(`endpoint: ${created.status} ${await created.text()}`);
    }
    const token = (await (
      await fetch(`${api}/tokens`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench', scopes: ['licenses:write'] }) })
    ).json()) as { token: string };
    const auth = { authorization: `Bearer ${token.token}`, 'content-type': 'application/json' };
    let next = 0;
    let failed = 0;
    let firstFailure: string | null = null;
    const worker = async () => {
      while (next < LICENCES) {
        const i = next++;
        const response = await fetch(`${api}/licenses`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ productId: product.id, customer: { name: `Customer ${i}`, email: `c${i}@example.com` } }),
        });
        const text = await response.text();
        if (response.status !== 201) {
          failed++;
          firstFailure ??= `${response.status} ${text}`;
        }
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const issuing = (performance.now() - started) / 1000;
    const row = {
      backend,
      endpoint: receiver !== null,
      rate: (LICENCES - failed) / issuing,
      failed,
      firstFailure,
      allDeliveredAfter: null as number | null,
      lagP50: null as number | null,
      lagP99: null as number | null,
      duplicates: 0,
    };
    if (receiver) {
      while (receiver.lags.size < LICENCES - failed) await new Promise((resolve) => setTimeout(resolve, 50));
      row.allDeliveredAfter = (performance.now() - started) / 1000;
      const lags = [...receiver.lags.values()].sort((a, b) => a - b);
      row.lagP50 = percentile(lags, 50);
      row.lagP99 = percentile(lags, 99);
      row.duplicates = receiver.deliveries - receiver.lags.size;
    }
    return row;
  } finally {
    await service.stop();
    await dispose();
  }
}

console.log(`bench:webhooks on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}, ${LICENCES} licences, ${CONCURRENCY} clients`);
console.log(
  '| backend | endpoint | licences/s | all delivered after s | lag p50 ms | lag p99 ms | duplicates | failures |\n|---|---|---:|---:|---:|---:|---:|---:|',
);
const backends = process.env.DATABASE_URL ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
// BACKENDS=postgres (or sqlite) runs one of them only.
for (const backend of backends.filter((b) => !process.env.BACKENDS || process.env.BACKENDS.split(',').includes(b))) {
  for (const withEndpoint of [false, true]) {
    const receiver = withEndpoint ? await startReceiver() : null;
    try {
      const r = await run(backend, receiver);
      const f = (n: number | null, digits = 0) => (n === null ? '–' : n.toFixed(digits));
      console.log(
        `| ${backend} | ${r.endpoint ? 'licence.issued' : 'none'} | ${r.rate.toFixed(0)} | ${f(r.allDeliveredAfter, 1)} | ${f(r.lagP50)} | ${f(r.lagP99)} | ${r.endpoint ? r.duplicates : '–'} | ${r.failed} |`,
      );
      if (r.firstFailure) console.log(`first failure: ${r.firstFailure}`);
    } finally {
      await receiver?.close();
    }
  }
}
