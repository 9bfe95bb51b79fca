/**
 * bench:issue — licences issued per second through HTTP with an Ed25519 product, against a
 * separate service process (SQLite; PostgreSQL too when DATABASE_URL is set).
 * CONCURRENCY and SECONDS override the load shape.
 */
import os from 'node:os';
import { benchEnv, percentile, startService } from './support.js';

const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const SECONDS = Number(process.env.SECONDS ?? 10);

async function run(backend: 'sqlite' | 'postgres') {
  const { env, dispose } = await benchEnv(backend);
  const service = await startService(env);
  try {
    const api = `${service.url}/o/default/api`;
    const login = await fetch(`${api}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'bench admin password' }),
    });
    const headers = { cookie: login.headers.get('set-cookie')!.split(';')[0]!, 'content-type': 'application/json' };
    const product = (await (
      await fetch(`${api}/products`, { method: 'POST', headers, body: JSON.stringify({ productKey: 'bench', name: 'Bench' }) })
    ).json()) as { id: number };
    const token = (await (
      await fetch(`${api}/tokens`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench', scopes: ['licenses:write'] }) })
    ).json()) as { token: string };
    const auth = { authorization: `Bearer ${token.token}`, 'content-type': 'application/json' };

    let issued = 0;
    let failed = 0;
    let firstFailure = '';
    const latencies: number[] = [];
    const deadline = performance.now() + SECONDS * 1000;
    const worker = async (w: number) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const start = performance.now();
        const response = await fetch(`${api}/licenses`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ productId: product.id, customer: { name: `Customer ${w}-${i}`, email: `c${w}-${i}@example.com` } }),
        });
        const text = await response.text();
        latencies.push(performance.now() - start);
        if (response.status === 201) issued++;
        else if (failed++ === 0) firstFailure = `${response.status} ${text.slice(0, 160)}`;
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
    const elapsed = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    console.log(
      `| ${backend} | ${CONCURRENCY} | ${(issued / elapsed).toFixed(0)} | ${percentile(latencies, 50).toFixed(1)} | ${percentile(latencies, 99).toFixed(1)} | ${failed}${firstFailure && ` (first: ${firstFailure})`} |`,
    );
  } finally {
    await service.stop();
    await dispose();
  }
}

console.log(`bench:issue on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}, ${SECONDS} s per backend`);
console.log('| backend | concurrent clients | licences/s | p50 ms | p99 ms | failures |\n|---|---|---|---|---|---|');
await run('sqlite');
if (process.env.DATABASE_URL) await run('postgres');
