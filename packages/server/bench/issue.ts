/**
 * bench:issue — licences issued per second through HTTP with an Ed25519 product, against a
 * separate service process (SQLite; PostgreSQL too when DATABASE_URL is set).
 * CONCURRENCY and SECONDS override the load shape.
 */
import os from 'node:os';
import { benchEnv, benchSession, closedLoop, startService } from './support.js';

const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const SECONDS = Number(process.env.SECONDS ?? 10);

async function run(backend: 'sqlite' | 'postgres') {
  const { env, dispose } = await benchEnv(backend);
  const service = await startService(env);
  try {
    const api = `${service.url}/o/default/api`;
    const headers = await benchSession(api);
    const product = (await (
      await fetch(`${api}/products`, { method: 'POST', headers, body: JSON.stringify({ productKey: 'bench', name: 'Bench' }) })
    ).json()) as { id: number };
    const token = (await (
      await fetch(`${api}/tokens`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench', scopes: ['licenses:write'] }) })
    ).json()) as { token: string };
    const auth = { authorization: `Bearer ${token.token}`, 'content-type': 'application/json' };

    const issue = (w: number, i: number) =>
      fetch(`${api}/licenses`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ productId: product.id, customer: { name: `Customer ${w}-${i}`, email: `c${w}-${i}@example.com` } }),
      });
    const { rate, p50, p99, failed, firstFailure } = await closedLoop(CONCURRENCY, SECONDS, issue, 201);
    console.log(
      `| ${backend} | ${CONCURRENCY} | ${rate.toFixed(0)} | ${p50.toFixed(1)} | ${p99.toFixed(1)} | ${failed}${firstFailure && ` (first: ${firstFailure})`} |`,
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
