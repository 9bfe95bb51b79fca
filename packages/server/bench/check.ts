/**
 * bench:check — the licence check endpoint at speed. For SQLite (and PostgreSQL when
 * DATABASE_URL is set): per algorithm (Ed25519, ECDSA P-256, RSA-2048) and kind, a product and
 * 10,000 licences holding their machines (bulk insert, real signed strings): node-locked licences
 * bound to their machines; floating licences (DESIGN.md 13, one-hour leases) whose leases were
 * just renewed, so no check extends one (`floating`); and floating licences whose leases have less
 * than half left, so every check commits a new end before signing (`extending`: each licence
 * checked once per run, the leases set back before each run). The service with one worker, then
 * two (LICENSOR_WORKERS); autocannon from a separate process, a fresh nonce per request, rate
 * limits off. Reports sustained checks/s against the single-core crypto bound (one verify + one
 * sign with bare node:crypto, measured right before), and p50/p99 of a paced 1,000 checks/s,
 * beside the p99 of the same paced run against a control right before it (a bare server doing
 * a remembered licence's check's one sign, and on PostgreSQL one round trip:
 * bench/check-floor.ts): what this machine allowed at that minute.
 * With both node-locked and floating kinds it then alternates short sustained runs of the two
 * (ROUNDS, PAIRED_SECONDS) and reports the median of each round's floating ÷ node-locked ratio.
 * LICENCES=n, SECONDS=n, ALGORITHMS=ED25519,..., KINDS=node-locked,floating,extending,
 * WORKERS=1,2 and BACKENDS=sqlite,postgres override.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ALGORITHM_INFO, buildFingerprint, fpDigest, parseFingerprint, signLicence, type Algorithm } from '@licensor/protocol';
import { sql, type SelectQueryBuilder } from 'kysely';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, sqliteFileIn, type Db } from '../src/db/database.js';
import type { Schema } from '../src/db/schema.js';
import { STAMP_INTERVAL_MS } from '../src/check/counters.js';
import { searchText } from '../src/listings/repos/search.js';
import { bootstrap } from '../src/orgs/service.js';
import { benchEnv, benchKeyPair, checkLoad as load, cryptoBound, type LoadResult, startService } from './support.js';

const LICENCES = Number(process.env.LICENCES ?? 10_000);
const SECONDS = Number(process.env.SECONDS ?? 10);
const ALGORITHMS = (process.env.ALGORITHMS ?? 'ED25519,EC_P256,RSA_2048').split(',') as Algorithm[];
const WORKERS = (process.env.WORKERS ?? '1,2').split(',').map(Number);
type Kind = 'node-locked' | 'floating' | 'extending';
const KINDS = (process.env.KINDS ?? 'node-locked,floating,extending').split(',') as Kind[];
/** Rounds of alternating node-locked and floating sustained runs, and each run's length. */
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const PAIRED_SECONDS = Number(process.env.PAIRED_SECONDS ?? 3);
const KIND_LABEL: Record<Kind, string> = { 'node-locked': 'node-locked', floating: 'floating, no extension', extending: 'floating, every check extends' };
/** The floating products' lease: an hour, so a run of minutes never extends a lease just renewed. */
const LEASE_MS = 3_600_000;

interface Seeded {
  algorithm: Algorithm;
  kind: Kind;
  productId: number;
  checkId: string;
  token: string;
  bodiesFile: string;
}

/** Per algorithm: a product with an imported key (so this process can sign), its check token, and bound licences. */
async function seed(env: Record<string, string>, workDir: string): Promise<Seeded[]> {
  const config = loadConfig(env);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) });
  await bootstrap(database, config);
  const app = await buildApp({ config, database, masterKey: config.masterKey!, logger: false });
  const login = await app.inject({ method: 'POST', url: '/o/default/api/auth/login', payload: { username: 'admin', password: 'bench admin password' } });
  const headers = { cookie: `svc_session=${login.cookies.find((c) => c.name === 'svc_session')!.value}` };
  const org = await database.db.selectFrom('organisations').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
  const seeded: Seeded[] = [];
  for (const algorithm of ALGORITHMS)
    for (const kind of KINDS) {
      const { privateKey } = benchKeyPair(algorithm);
      const productKey = `bench-${algorithm.toLowerCase()}-${kind}`;
      const floating = kind !== 'node-locked';
      const product = (
        await app.inject({
          method: 'POST',
          url: '/o/default/api/products',
          headers,
          payload: {
            productKey,
            name: `Bench ${algorithm} ${kind}`,
            licenceType: 'ONLINE',
            privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }),
            ...(floating ? { seatModel: 'FLOATING', leaseSeconds: LEASE_MS / 1000, allowedLicenceTypes: ['ONLINE'] } : {}),
          },
        })
      ).json() as { id: number };
      const rotated = (await app.inject({ method: 'POST', url: `/o/default/api/products/${product.id}/check-token`, headers })).json() as {
        checkId: string;
        checkToken: string;
      };
      const key = await database.db.selectFrom('product_keys').select('id').where('product_id', '=', product.id).executeTakeFirstOrThrow();
      const now = Date.now();
      const iat = Math.floor(now / 1000);
      const exp = iat + 365 * 86_400;
      const pairs: Array<[string, string]> = [];
      for (let i = 0; i < LICENCES; i += 500) {
        const licences = [];
        const machines = [];
        for (let j = i; j < Math.min(LICENCES, i + 500); j++) {
          const lid = randomUUID();
          const fingerprint = buildFingerprint({ machine: `m${j}-${algorithm}`, host: `h${j}`, mac: `a${j}`, cpu: 'cpu', disk: `d${j}` });
          const licenceString = signLicence(
            {
              lid,
              prd: productKey,
              org: 'default',
              typ: 'ONLINE',
              lic: `Customer ${j}`,
              iat,
              exp,
              grace: 0,
              mm: 1,
              chk: 86_400,
              max: 604_800,
              lse: floating ? LEASE_MS / 1000 : null,
            },
            privateKey,
          );
          pairs.push([licenceString, fingerprint]);
          licences.push({
            org_id: org.id,
            lid,
            product_id: product.id,
            customer_id: null,
            licensee: `Customer ${j}`,
            licensee_email: null,
            licence_type: 'ONLINE',
            activation: null,
            issued_at: iat * 1000,
            starts_at: null,
            expires_at: exp * 1000,
            grace_days: 0,
            grace_ends_at: exp * 1000,
            max_machines: 1,
            check_every_seconds: 86_400,
            check_max_seconds: 604_800,
            params: '{}',
            licence_string: licenceString,
            key_id: key.id,
            term_version: 0,
            revoked: 0,
            revoked_at: null,
            revoked_reason: null,
            archived: 0,
            archived_at: null,
            issued_by: 'bench',
            renewed_at: null,
            rebind_count: 0,
            notes: null,
            search_text: searchText({ licensee: `Customer ${j}`, email: null, lid, notes: null }),
            seat_model: floating ? 'FLOATING' : 'NODE_LOCKED',
          });
          machines.push({ lid, fingerprint });
        }
        const ids = await database.db.insertInto('licences').values(licences).returning(['id', 'lid']).execute();
        const idOf = new Map(ids.map((r) => [r.lid, r.id]));
        await database.db
          .insertInto('licence_stamps')
          .values(ids.map((r) => ({ licence_id: r.id, org_id: org.id, archived: 0, lid: r.lid, last_checked_at: now })))
          .execute();
        await database.db
          .insertInto('machine_bindings')
          .values(
            machines.map((m) => ({
              org_id: org.id,
              licence_id: idOf.get(m.lid)!,
              fingerprint: m.fingerprint,
              parts: JSON.stringify(parseFingerprint(m.fingerprint)),
              bound_at: now,
              released_at: null,
              released_by: null,
              at_issue: 0,
              ...(floating ? { fp_digest: fpDigest(m.fingerprint), lease_ends_at: now + LEASE_MS } : {}),
            })),
          )
          .execute();
      }
      const bodiesFile = path.join(workDir, `${algorithm}-${kind}.json`);
      fs.writeFileSync(bodiesFile, JSON.stringify(pairs));
      seeded.push({ algorithm, kind, productId: product.id, checkId: rotated.checkId, token: rotated.checkToken, bodiesFile });
    }
  // Statistics now, rather than autovacuum's own pass competing with the load for the cores.
  await sql`${sql.raw(database.dialect === 'postgres' ? 'vacuum analyze' : 'analyze')}`.execute(database.db);
  await app.close();
  await database.close();
  return seeded;
}

/**
 * Changes rows of one product from outside the running service. The service's gathered seat
 * stamps of the run just ended may be writing the same rows in another order: on PostgreSQL a
 * deadlock ends one of the two, and this one tries again. On PostgreSQL the rows it leaves dead
 * are vacuumed at once: autovacuum's pass over them fell in the next measured run (whichever
 * product's paced run came first had the slow tail: 99.2 to 99.6% of checks answered within 10 ms,
 * against 99.9 to 100% for the next).
 */
async function alter(
  env: Record<string, string>,
  productId: number,
  change: (db: Db, licenceIds: SelectQueryBuilder<Schema, 'licences', { id: number }>) => Promise<unknown>,
): Promise<void> {
  const config = loadConfig(env);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) }, { migrate: false });
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await change(database.db, database.db.selectFrom('licences').select('id').where('product_id', '=', productId));
        if (database.dialect === 'postgres') await sql`vacuum licences, licence_stamps, machine_bindings`.execute(database.db);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== '40P01' || attempt === 5) throw err;
      }
    }
  } finally {
    await database.close();
  }
}

/** Sets every lease of a floating product to end at `endsAt`. */
const setLeases = (env: Record<string, string>, productId: number, endsAt: number) =>
  alter(env, productId, (db, ids) => db.updateTable('machine_bindings').set({ lease_ends_at: endsAt }).where('licence_id', 'in', ids).execute());

/** Makes every licence's and seat's once-a-minute stamp due, so that each check of the next run writes both. */
const stampsDue = (env: Record<string, string>, productId: number) =>
  alter(env, productId, async (db, ids) => {
    const longAgo = Date.now() - 2 * STAMP_INTERVAL_MS;
    await db.updateTable('licence_stamps').set({ last_checked_at: longAgo }).where('licence_id', 'in', ids).execute();
    await db.updateTable('machine_bindings').set({ last_seen_at: longAgo }).where('licence_id', 'in', ids).execute();
  });

/**
 * The paced run against bench/check-floor.ts, this machine's control at that minute: a bare
 * server doing a check's one sign (and one PostgreSQL round trip when given a URL).
 */
async function control(job: { bodiesFile: string; seconds: number }, algorithm: Algorithm, databaseUrl: string | undefined): Promise<LoadResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'check-floor.ts'), JSON.stringify({ algorithm, databaseUrl })], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const port = await new Promise<string>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
      child.once('exit', (code) => reject(new Error(`the control server exited ${code}`)));
    });
    return await load({
      url: `http://127.0.0.1:${port}/check`,
      token: 'control',
      bodiesFile: job.bodiesFile,
      connections: 32,
      seconds: job.seconds,
      rate: 1000,
    });
  } finally {
    child.kill();
  }
}

/**
 * The checks the service answered 200, all and within 10 ms, from its own latency histogram: the
 * paced run's p99 counts this process's and the kernel's delays too, this only the service's.
 */
async function answered(url: string): Promise<{ within10ms: number; all: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const bucket = (le: string) =>
    Number(new RegExp(`http_request_duration_seconds_bucket\\{le="${le}",method="POST",route="[^"]*/check",status_code="200"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  return { within10ms: bucket('0.01'), all: bucket('\\+Inf') };
}

const rows: string[] = [];
const paired: string[] = [];
const BACKENDS = (process.env.BACKENDS?.split(',') ?? ['sqlite', ...(process.env.DATABASE_URL ? ['postgres'] : [])]) as Array<'sqlite' | 'postgres'>;
for (const backend of BACKENDS) {
  const { env, dispose } = await benchEnv(backend);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-bench-check-'));
  try {
    const seeded = await seed(env, workDir);
    const oneWorker = new Map<string, number>();
    for (const workers of WORKERS) {
      const service = await startService({ ...env, LICENSOR_WORKERS: String(workers), LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '0' });
      // /healthz answers once the first worker listens, and a connection stays with the worker that
      // took it: give the others their start-up before any connection is made.
      if (workers > 1) await new Promise((resolve) => setTimeout(resolve, 15_000));
      const jobOf = ({ checkId, token, bodiesFile }: Seeded) => ({ url: `${service.url}/o/default/api/public/license/${checkId}/check`, token, bodiesFile });
      try {
        // Every licence of every product checked once before any is measured, as a running service
        // has seen its installed base: the first measured after start-up ran slower, whichever it
        // was, and a licence string's first check verifies its signature (later ones remember it).
        for (const product of seeded) await load({ ...jobOf(product), connections: 16, seconds: SECONDS, amount: LICENCES });
        for (const product of seeded) {
          const { algorithm, kind, productId } = product;
          const job = jobOf(product);
          // Floating: leases just renewed (no check extends one), or with less than half left
          // before each run of the extending kind, whose runs check each licence once.
          const extending = kind === 'extending';
          const resetLeases = () =>
            kind === 'node-locked' ? Promise.resolve() : setLeases(env, productId, Date.now() + (extending ? LEASE_MS / 2 - 60_000 : LEASE_MS));
          await resetLeases();
          await load({ ...job, connections: 16, seconds: 2 }); // warm-up: JIT, key cache, pools
          // Measured right before the load it divides: this VM's speed drifts from hour to hour.
          const bound = cryptoBound(algorithm);
          await resetLeases();
          const sustained = await load({ ...job, connections: 32, seconds: SECONDS, ...(extending ? { amount: LICENCES } : {}) });
          await resetLeases();
          // The worst case for the paced run's latency: every check stamps its licence and seat.
          await stampsDue(env, productId);
          const pacedSeconds = extending ? Math.min(SECONDS, LICENCES / 1000) : SECONDS;
          const floor = await control({ bodiesFile: job.bodiesFile, seconds: pacedSeconds }, algorithm, env.DATABASE_URL);
          const answeredBefore = await answered(service.url);
          const fixed = await load({ ...job, connections: 32, seconds: pacedSeconds, rate: 1000 });
          const answeredAfter = await answered(service.url);
          // /metrics is one worker's: with more than one, the share is of whichever answered.
          const serviceWithin10ms =
            workers === 1 ? `${((100 * (answeredAfter.within10ms - answeredBefore.within10ms)) / (answeredAfter.all - answeredBefore.all)).toFixed(1)}%` : '';
          const series = `${algorithm} ${kind}`;
          if (workers === 1) oneWorker.set(series, sustained.rps);
          const scaling = workers === 1 ? '' : `${(sustained.rps / oneWorker.get(series)!).toFixed(2)}×`;
          const failures = sustained.non2xx + sustained.errors + fixed.non2xx + fixed.errors;
          rows.push(
            `| ${backend} | ${workers} | ${ALGORITHM_INFO[algorithm].label} | ${KIND_LABEL[kind]} | ${Math.round(bound)} | ${Math.round(sustained.rps)} | ${(sustained.rps / bound).toFixed(2)} | ${scaling} | ${sustained.p99} | ${Math.round(fixed.rps)} | ${fixed.p50} | ${fixed.p99} | ${serviceWithin10ms} | ${floor.p99} | ${failures} |`,
          );
          console.error(rows.at(-1), sustained.firstFailure ?? fixed.firstFailure ?? (floor.non2xx + floor.errors ? `control: ${floor.firstFailure}` : ''));
        }
        // The VM's speed drifts between runs by more than the difference sought between floating
        // and node-locked checks: alternate short sustained runs and compare within each pair.
        for (const algorithm of ALGORITHMS) {
          const pair = (['node-locked', 'floating'] as const).map((kind) => seeded.find((s) => s.algorithm === algorithm && s.kind === kind));
          if (!pair[0] || !pair[1] || ROUNDS === 0) continue;
          const ratios: number[] = [];
          for (let round = 0; round < ROUNDS; round++) {
            await setLeases(env, pair[1].productId, Date.now() + LEASE_MS);
            const rps = new Map<Kind, number>();
            for (const product of round % 2 === 0 ? pair : [...pair].reverse())
              rps.set(product!.kind, (await load({ ...jobOf(product!), connections: 32, seconds: PAIRED_SECONDS })).rps);
            ratios.push(rps.get('floating')! / rps.get('node-locked')!);
          }
          const sorted = [...ratios].sort((a, b) => a - b);
          const median = (sorted[Math.floor((ROUNDS - 1) / 2)]! + sorted[Math.ceil((ROUNDS - 1) / 2)]!) / 2;
          paired.push(
            `| ${backend} | ${workers} | ${ALGORITHM_INFO[algorithm].label} | ${median.toFixed(3)} | ${sorted[0]!.toFixed(3)} to ${sorted.at(-1)!.toFixed(3)} | ${ratios.map((r) => r.toFixed(3)).join(', ')} |`,
          );
          console.error(paired.at(-1));
        }
      } finally {
        await service.stop();
      }
    }
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
    await dispose();
  }
}

console.log(
  `\nbench:check — ${LICENCES} bound licences per product, ${SECONDS} s per run; ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}\n`,
);
console.log(
  `| Backend | Workers | Algorithm | Seats | Crypto bound (verify+sign pairs/s, 1 core) | Sustained checks/s | of bound | vs 1 worker | p99 at max (ms) | Paced checks/s | p50 at 1,000/s (ms) | p99 at 1,000/s (ms) | paced, answered by the service within 10 ms | control: p99 at 1,000/s of a bare server doing one sign${BACKENDS.includes('postgres') ? ' (and on PostgreSQL one round trip)' : ''} (ms) | non-2xx/errors |`,
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
if (paired.length) {
  console.log(
    `\nFloating checks with no extension ÷ node-locked checks, ${ROUNDS} rounds of alternating ${PAIRED_SECONDS} s sustained runs (32 connections), order swapped every round\n`,
  );
  console.log('| Backend | Workers | Algorithm | Median ratio | Range | Every round |');
  console.log('|---|---|---|---|---|---|');
  for (const row of paired) console.log(row);
}
