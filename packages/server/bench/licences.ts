/**
 * bench:licences — one organisation with 1,000,000 licences (bulk insert, not HTTP), then
 * p50/p95 over HTTP for the page listing, windows, sorts, search, dashboard and a 25,000-row
 * export against a separate service process. SQLite always; PostgreSQL too when DATABASE_URL is set.
 * LICENCES=n overrides the row count; BACKENDS=sqlite or postgres picks one.
 */
import os from 'node:os';
import { seedLicences } from './seed-licences.js';
import { benchEnv, benchSession, fmt, measure, memoryOf, startService } from './support.js';

const TOTAL = Number(process.env.LICENCES ?? 1_000_000);

async function run(backend: 'sqlite' | 'postgres') {
  const { env, dispose } = await benchEnv(backend);
  try {
    const seedSeconds = await seedLicences(env, TOTAL);
    console.log(`\n## ${backend}: ${TOTAL.toLocaleString('en')} licences seeded in ${seedSeconds.toFixed(0)} s`);
    const service = await startService(env);
    try {
      const { cookie } = await benchSession(`${service.url}/o/default/api`);
      const get = (path: string) => () => fetch(`${service.url}/o/default/api${path}`, { headers: { cookie } });
      const cases: Array<[string, string, number]> = [
        ['default page', '/licenses/page', 30],
        ...['7d', '30d', '90d', 'grace', 'expired', 'perpetual', 'archived'].map((w): [string, string, number] => [
          `window ${w}`,
          `/licenses/page?window=${w}`,
          30,
        ]),
        ['status=GRACE,EXPIRED', '/licenses/page?status=GRACE,EXPIRED', 20],
        ...['issuedAt', 'expiresAt', 'licensee', 'status', 'product', 'lastCheckedAt'].flatMap(
          (s): Array<[string, string, number]> => [
            [`sort ${s} asc`, `/licenses/page?sort=${s}&asc=true`, 10],
            [`sort ${s} desc`, `/licenses/page?sort=${s}&asc=false`, 10],
          ],
        ),
        // Common trigrams, few matches; then a phrase in every row.
        ['q=customer 4242', '/licenses/page?q=customer%204242', 20],
        ['q=renewal call 7', '/licenses/page?q=renewal%20call%207', 20],
        ['q=customer', '/licenses/page?q=customer', 10],
        ['offset 500,000', '/licenses/page?offset=500000', 10],
        ['windows', '/licenses/windows', 20],
        ['dashboard', '/dashboard', 20],
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
      console.log(
        `| export ${rows.toLocaleString('en')} rows (HTTP ${response.status}) | ${fmt(ms)} total | peak RSS growth ${(after.peak - before.now).toFixed(1)} MiB |`,
      );
    } finally {
      await service.stop();
    }
  } finally {
    await dispose();
  }
}

console.log(`bench:licences on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}`);
// BACKENDS=postgres runs one backend alone.
const backends = process.env.BACKENDS?.split(',') ?? ['sqlite', ...(process.env.DATABASE_URL ? ['postgres'] : [])];
for (const backend of backends) await run(backend as 'sqlite' | 'postgres');
