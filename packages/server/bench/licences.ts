/**
 * bench:licences — one organisation with 1,000,000 licences (bulk insert, not HTTP), then
 * p50/p95 over HTTP for the page listing, windows, sorts, search, dashboard and a 25,000-row
 * export against a separate service process. SQLite always; PostgreSQL too when DATABASE_URL is set.
 * LICENCES=n overrides the row count.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, sqliteFileIn } from '../src/db/database.js';
import { searchText } from '../src/licences/repo.js';
import { bootstrap } from '../src/orgs/service.js';
import { benchEnv, fmt, measure, memoryOf, startService } from './support.js';

const TOTAL = Number(process.env.LICENCES ?? 1_000_000);
const DAY = 86_400_000;
const YEAR = 365 * DAY;

async function seed(env: Record<string, string>) {
  const config = loadConfig(env);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) });
  await bootstrap(database, config);
  const app = await buildApp({ config, database, masterKey: config.masterKey!, logger: false });
  const login = await app.inject({ method: 'POST', url: '/o/default/api/auth/login', payload: { username: 'admin', password: 'bench admin password' } });
  const cookie = `svc_session=${login.cookies.find((c) => c.name === 'svc_session')!.value}`;
  const products = [];
  for (const [key, name] of [['desk', 'Desk Studio'], ['cloud', 'Cloud Sync'], ['mobile', 'Mobile Kit']]) {
    const created = await app.inject({ method: 'POST', url: '/o/default/api/products', headers: { cookie }, payload: { productKey: key, name, allowedLicenceTypes: ['OFFLINE', 'ONLINE', 'HYBRID'] } });
    products.push(created.json() as { id: number });
  }
  const org = await database.db.selectFrom('organisations').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
  const keys = await database.db.selectFrom('product_keys').select(['id', 'product_id']).execute();
  const keyOf = new Map(keys.map((k) => [k.product_id, k.id]));
  const now = Date.now();
  const started = performance.now();
  const batch = database.dialect === 'postgres' ? 2000 : 1000;
  for (let i = 0; i < TOTAL; i += batch) {
    const rows = [];
    for (let j = i; j < Math.min(TOTAL, i + batch); j++) {
      const product = products[j % 3]!;
      const issuedAt = now - Math.floor(((j * 7919) % TOTAL) / TOTAL * 3 * YEAR);
      const perpetual = j % 20 === 0;
      const expiresAt = perpetual ? null : issuedAt + YEAR;
      const grace = j % 4 === 0 ? 14 : 0;
      const lid = randomUUID();
      const licensee = `Customer ${j % 50_000}`;
      const email = `customer${j % 50_000}@example.com`;
      const notes = j % 10 === 0 ? `renewal call ${j}` : null;
      rows.push({
        org_id: org.id,
        lid,
        product_id: product.id,
        customer_id: null,
        licensee,
        licensee_email: email,
        licence_type: ['OFFLINE', 'ONLINE', 'HYBRID'][j % 3]!,
        activation: j % 3 === 2 ? 'ONLINE' : null,
        issued_at: issuedAt,
        starts_at: null,
        expires_at: expiresAt,
        grace_days: grace,
        grace_ends_at: expiresAt === null ? null : expiresAt + grace * DAY,
        max_machines: 1,
        check_every_seconds: j % 3 === 0 ? null : 86_400,
        check_max_seconds: j % 3 === 0 ? null : 604_800,
        params: '{}',
        licence_string: `bench.${lid}`,
        key_id: keyOf.get(product.id)!,
        term_version: 0,
        revoked: j % 33 === 0 ? 1 : 0,
        revoked_at: j % 33 === 0 ? now : null,
        revoked_reason: null,
        archived: j % 50 === 0 && j % 33 === 0 ? 1 : 0,
        archived_at: null,
        issued_by: 'bench',
        last_checked_at: j % 3 !== 0 && j % 5 !== 0 ? now - (j % 1000) * 60_000 : null,
        renewed_at: null,
        rebind_count: 0,
        notes,
        search_text: searchText({ licensee, email, lid, notes }),
      });
    }
    await database.db.insertInto('licences').values(rows).execute();
  }
  const seconds = (performance.now() - started) / 1000;
  if (database.dialect === 'postgres') await database.db.executeQuery({ sql: 'analyze', parameters: [], query: { kind: 'RawNode' } } as never);
  else await database.db.executeQuery({ sql: 'analyze', parameters: [], query: { kind: 'RawNode' } } as never);
  await app.close();
  await database.close();
  return seconds;
}

async function run(backend: 'sqlite' | 'postgres') {
  const { env, dispose } = await benchEnv(backend);
  try {
    const seedSeconds = await seed(env);
    console.log(`\n## ${backend}: ${TOTAL.toLocaleString('en')} licences seeded in ${seedSeconds.toFixed(0)} s`);
    const service = await startService(env);
    try {
      const login = await fetch(`${service.url}/o/default/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'bench admin password' }),
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const get = (path: string) => () => fetch(`${service.url}/o/default/api${path}`, { headers: { cookie } });
      const cases: Array<[string, string, number]> = [
        ['default page', '/licenses/page', 30],
        ...['7d', '30d', '90d', 'grace', 'expired', 'perpetual', 'archived'].map((w): [string, string, number] => [`window ${w}`, `/licenses/page?window=${w}`, 30]),
        ['status=GRACE,EXPIRED', '/licenses/page?status=GRACE,EXPIRED', 20],
        ...['expiresAt', 'licensee', 'status', 'product', 'lastCheckedAt'].map((s): [string, string, number] => [`sort ${s}`, `/licenses/page?sort=${s}&asc=true`, 10]),
        ['q=customer 4242', '/licenses/page?q=customer%204242', 20],
        ['q=renewal call 7', '/licenses/page?q=renewal%20call%207', 20],
        ['windows', '/licenses/windows', 10],
        ['dashboard', '/dashboard', 10],
      ];
      console.log('| request | p50 ms | p95 ms |\n|---|---|---|');
      for (const [name, path, n] of cases) {
        const { p50, p95 } = await measure(n, get(path));
        console.log(`| ${name} | ${fmt(p50)} | ${fmt(p95)} |`);
      }
      // The export: the 25,000 licences that expire soonest among those in the 90-day window and beyond.
      const before = memoryOf(service.child.pid!);
      const started = performance.now();
      const response = await fetch(`${service.url}/o/default/api/licenses/export.csv?q=customer%2042`, { headers: { cookie } });
      const body = await response.text();
      const ms = performance.now() - started;
      const after = memoryOf(service.child.pid!);
      const rows = body.split('\r\n').length - 2;
      console.log(`| export ${rows.toLocaleString('en')} rows (HTTP ${response.status}) | ${fmt(ms)} total | peak RSS growth ${(after.peak - before.now).toFixed(1)} MiB |`);
    } finally {
      await service.stop();
    }
  } finally {
    await dispose();
  }
}

console.log(`bench:licences on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}`);
await run('sqlite');
if (process.env.DATABASE_URL) await run('postgres');
