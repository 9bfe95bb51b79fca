/**
 * bench:trials (DESIGN.md 18) — trial starts per second with 16 clients beside bench:issue's
 * licences per second in the same run (target: at least half: a start is an issue plus a ledger
 * lookup), then the p95 of one start at a time once the product's ledger holds 1,000,000 entries
 * (target: under 20 ms: the index, never a scan). SQLite; PostgreSQL too when DATABASE_URL is set.
 * The runs measure the work, not its refusals: LICENSOR_CHECK_RATE_ADDRESS and
 * LICENSOR_CHECK_RATE_PRODUCT are 0 and the product's trialDailyLimit and trialAddressDailyLimit
 * null. CONCURRENCY, SECONDS, ENTRIES and STARTS override the shape.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { buildFingerprint } from '@licensor/protocol';
import { benchEnv, benchSession, closedLoop, percentile, startService } from './support.js';

const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const SECONDS = Number(process.env.SECONDS ?? 10);
const ENTRIES = Number(process.env.ENTRIES ?? 1_000_000);
const STARTS = Number(process.env.STARTS ?? 300);

const hex = () => randomBytes(16).toString('hex');
const part = () => randomBytes(12).toString('hex');
/** A machine no other start has sent. */
const newMachine = () => buildFingerprint({ machine: part(), host: part(), mac: part(), cpu: part(), disk: part() });
const startBody = () =>
  JSON.stringify({ fingerprint: newMachine(), nonce: randomBytes(18).toString('base64url'), devicePublicKey: randomBytes(32).toString('base64url') });

/**
 * Fills the product's ledger with `count` entries of other machines, written beside the service
 * (its licences are not made: each entry's licence id is a negative number no licence has, so
 * this connection leaves the foreign key unchecked: SQLite's pragma off, PostgreSQL's session a
 * replica, which skips the key's trigger).
 */
async function seedLedger(env: Record<string, string>, productId: number, count: number): Promise<void> {
  const startedAt = Date.now() - 30 * 86_400_000;
  if (env.DATABASE_URL) {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    await client.query('set session_replication_role = replica');
    await client.query(
      `insert into trial_entries (org_id, product_id, licence_id, fpn, machine, host, mac, cpu, disk, addr, addr48, started_at, reset_at)
       select (select org_id from products where id = $1), $1, -g, 3, ${['m', 'h', 'a', 'c', 'd', 'r'].map((s) => `substr(md5('${s}' || g || random()::text), 1, 32)`).join(', ')}, null, $2, null
       from generate_series(1, $3::int) g`,
      [productId, startedAt, count],
    );
    await client.query('analyze trial_entries');
    // The seed's 500 MB of WAL would otherwise still be checkpointing while the starts are timed:
    // that is the bulk load's cost, not a start's, which a ledger grown over months never pays at once.
    await client.query('checkpoint');
    await client.end();
    return;
  }
  const db = new Database(path.join(env.LICENSOR_DATA_DIR!, 'licensor.sqlite'));
  db.pragma('busy_timeout = 10000');
  db.pragma('foreign_keys = OFF');
  const insert = db.prepare(
    `insert into trial_entries (org_id, product_id, licence_id, fpn, machine, host, mac, cpu, disk, addr, addr48, started_at, reset_at)
     values ((select org_id from products where id = ?), ?, ?, 3, ?, ?, ?, ?, ?, ?, null, ?, null)`,
  );
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) insert.run(productId, productId, -i - 1, hex(), hex(), hex(), hex(), hex(), hex(), startedAt);
  });
  for (let i = 0; i < count; i += 50_000) batch(i, Math.min(count, i + 50_000));
  db.exec('analyze trial_entries');
  db.close();
}

async function run(backend: 'sqlite' | 'postgres'): Promise<{ load: string; ledger: string }> {
  const { env, dispose } = await benchEnv(backend);
  const service = await startService({ ...env, LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '0' });
  try {
    const api = `${service.url}/o/default/api`;
    const admin = await benchSession(api);
    const post = async (route: string, body: unknown, headers = admin) => {
      const response = await fetch(`${api}${route}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, any>;
    };
    const product = await post('/products', {
      productKey: 'bench-trials',
      name: 'Bench trials',
      licenceType: 'ONLINE',
      trialDays: 14,
      trialDailyLimit: null,
      trialAddressDailyLimit: null,
    });
    const { checkToken } = await post(`/products/${product.id}/check-token`, {});
    const { token } = await post('/tokens', { name: 'bench', scopes: ['licenses:write'] });
    const issuer = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const starter = { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' };
    const start = () => fetch(`${api}/public/license/${product.checkId}/trial`, { method: 'POST', headers: starter, body: startBody() });
    const issue = (c: number, i: number) =>
      fetch(`${api}/licenses`, { method: 'POST', headers: issuer, body: JSON.stringify({ productId: product.id, licensee: `Customer ${c}-${i}` }) });

    const issued = await closedLoop(CONCURRENCY, SECONDS, issue, 201);
    const started = await closedLoop(CONCURRENCY, SECONDS, start, 201);
    const failures = (r: { failed: number; firstFailure: string }) => `${r.failed}${r.firstFailure && ` (first: ${r.firstFailure})`}`;
    const load = `| ${backend} | ${CONCURRENCY} | ${issued.rate.toFixed(0)} | ${started.rate.toFixed(0)} | ${(started.rate / issued.rate).toFixed(2)} | ${started.p50.toFixed(1)} | ${started.p99.toFixed(1)} | ${failures(issued)}; ${failures(started)} |`;

    const seeding = performance.now();
    await seedLedger(env, product.id, ENTRIES);
    const seeded = ((performance.now() - seeding) / 1000).toFixed(0);
    // The service closed the idle keep-alive connections during the seeding: the first use of each finds it closed.
    for (let i = 0; i < CONCURRENCY; i++) await fetch(`${service.url}/healthz`).catch(() => {});
    const times: number[] = [];
    let refused = 0;
    for (let i = 0; i < STARTS; i++) {
      const begun = performance.now();
      const response = await start();
      await response.arrayBuffer();
      times.push(performance.now() - begun);
      if (response.status !== 201) refused++;
    }
    times.sort((a, b) => a - b);
    const ledger = `| ${backend} | ${ENTRIES.toLocaleString('en')} (seeded in ${seeded} s) | ${STARTS} | ${percentile(times, 50).toFixed(1)} | ${percentile(times, 95).toFixed(1)} | ${refused} |`;
    return { load, ledger };
  } finally {
    await service.stop();
    await dispose();
  }
}

console.log(`bench:trials on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}, ${SECONDS} s per load`);
const rows = [await run('sqlite'), ...(process.env.DATABASE_URL ? [await run('postgres')] : [])];
console.log(
  '| backend | concurrent clients | issues/s | trial starts/s | ratio | start p50 ms | start p99 ms | failures (issue; start) |\n|---|---|---|---|---|---|---|---|',
);
for (const { load } of rows) console.log(load);
console.log('\n| backend | ledger entries of the product | starts, one at a time | p50 ms | p95 ms | not 201 |\n|---|---|---|---|---|---|');
for (const { ledger } of rows) console.log(ledger);
