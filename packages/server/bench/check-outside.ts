/**
 * bench:check:outside — the licence check in the shape of the independent harness of issue 53,
 * beside bench:check's own shape (bench/check.ts). Per backend: a fresh database (PostgreSQL over
 * TCP when DATABASE_URL names one), `serve` with one worker and the check rate limits off, one
 * Ed25519 product made through the API, LICENCES ONLINE licences (maxMachines 1) issued through
 * the API, each bound to its machine by a first check before the run; then WARMUP s and SECONDS s
 * of load from a separate process on 32 keep-alive connections, each request the next licence in
 * turn with a fresh nonce. The crypto bound (one verify and one sign per pair, KeyObjects, one
 * core) is measured right before the load; the CPU of the service's process tree, and of all
 * PostgreSQL processes, is read from /proc over the load. After it, every 40th licence is checked
 * once more and its answer verified in full (valid, its lid, the receipt with the product's key).
 * LICENCES=n (2,000), SECONDS=n (15), WARMUP=n (3), BACKENDS=sqlite,postgres and
 * ANALYZE=1 (ANALYZE the database after the binding checks, as bench:check does after its seed)
 * override.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPublicKey, randomBytes } from 'node:crypto';
import { buildFingerprint, fpDigest, verifyReceipt } from '@licensor/protocol';
import pg from 'pg';
import { benchEnv, benchSession, checkLoad, cryptoBound, startService } from './support.js';

const LICENCES = Number(process.env.LICENCES ?? 2000);
const SECONDS = Number(process.env.SECONDS ?? 15);
const WARMUP = Number(process.env.WARMUP ?? 3);
const ANALYZE = process.env.ANALYZE === '1';
const BACKENDS = (process.env.BACKENDS?.split(',') ?? ['sqlite', ...(process.env.DATABASE_URL ? ['postgres'] : [])]) as Array<'sqlite' | 'postgres'>;
/** /proc's clock ticks per second on Linux. */
const TICKS = 100;

/** Every process's `[pid, ppid, comm, utime + stime ticks]` from /proc. */
function processes(): Array<[number, number, string, number]> {
  const all: Array<[number, number, string, number]> = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      all.push([Number(entry), Number(fields[1]), comm, Number(fields[11]) + Number(fields[12])]);
    } catch {
      // The process ended while the list was read.
    }
  }
  return all;
}

/** CPU ticks so far of each process in the tree under `root`, and of each PostgreSQL process. */
function cpuTicks(root: number): { service: Map<number, number>; postgres: Map<number, number> } {
  const all = processes();
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of all)
      if (tree.has(ppid) && !tree.has(pid)) {
        tree.add(pid);
        grew = true;
      }
  }
  const service = new Map<number, number>();
  const postgres = new Map<number, number>();
  for (const [pid, , comm, ticks] of all) {
    if (tree.has(pid)) service.set(pid, ticks);
    else if (comm === 'postgres') postgres.set(pid, ticks);
  }
  return { service, postgres };
}

/** Ticks spent between two readings by the processes alive at the second (a process that ended between them is not counted). */
const spent = (before: Map<number, number>, after: Map<number, number>) => [...after].reduce((sum, [pid, ticks]) => sum + ticks - (before.get(pid) ?? 0), 0);

async function run(backend: 'sqlite' | 'postgres'): Promise<string> {
  const { env, dispose } = await benchEnv(backend);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-bench-outside-'));
  const service = await startService({ ...env, LICENSOR_WORKERS: '1', LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '0' });
  try {
    const api = `${service.url}/o/default/api`;
    const admin = await benchSession(api);
    const post = async (route: string, body: unknown) => {
      const response = await fetch(`${api}${route}`, { method: 'POST', headers: admin, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${route}: HTTP ${response.status} ${await response.text()}`);
      return response.json() as Promise<any>;
    };
    const product = await post('/products', { productKey: 'bench-outside', name: 'Bench outside', licenceType: 'ONLINE', algorithm: 'ED25519' });
    const { checkId, checkToken } = await post(`/products/${product.id}/check-token`, {});
    const pairs: Array<[string, string]> = [];
    const lids: string[] = [];
    for (let i = 0; i < LICENCES; i += 8) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(8, LICENCES - i) }, (_, j) =>
          post('/licenses', { productId: product.id, licensee: `Customer ${i + j}`, maxMachines: 1 }),
        ),
      );
      for (const [j, licence] of batch.entries()) {
        lids.push(licence.lid);
        pairs.push([licence.licenseString, buildFingerprint({ machine: `m${i + j}`, host: `h${i + j}`, mac: `a${i + j}`, cpu: 'cpu', disk: `d${i + j}` })]);
      }
    }
    const bodiesFile = path.join(workDir, 'pairs.json');
    fs.writeFileSync(bodiesFile, JSON.stringify(pairs));
    const job = { url: `${api}/public/license/${checkId}/check`, token: checkToken, bodiesFile };
    // Each licence's first check binds its machine.
    const binding = await checkLoad({ ...job, connections: 16, seconds: 600, amount: LICENCES });
    if (binding.non2xx + binding.errors > 0) throw new Error(`binding checks failed: ${binding.firstFailure}`);
    if (ANALYZE && backend === 'postgres') {
      const client = new pg.Client({ connectionString: env.DATABASE_URL });
      await client.connect();
      await client.query('analyze');
      await client.end();
    }
    await checkLoad({ ...job, connections: 32, seconds: WARMUP });
    const bound = cryptoBound('ED25519');
    const before = cpuTicks(service.child.pid!);
    const started = performance.now();
    const result = await checkLoad({ ...job, connections: 32, seconds: SECONDS });
    const elapsed = (performance.now() - started) / 1000;
    const after = cpuTicks(service.child.pid!);
    const cores = (ticks: number) => (ticks / TICKS / elapsed).toFixed(2);
    const failures = result.non2xx + result.errors;
    if (failures) console.error(`${backend}: ${failures} failed, first: ${result.firstFailure}`);
    const publicKey = createPublicKey(product.publicKeyPem);
    for (let i = 0; i < pairs.length; i += 40) {
      const [license, fingerprint] = pairs[i]!;
      const nonce = randomBytes(18).toString('base64url');
      const response = await fetch(job.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ license, fingerprint, nonce }),
      });
      const a = (await response.json()) as any;
      const fields = { lid: lids[i]!, status: a.status, nonce, checkedAt: a.checkedAt, boundAt: a.boundAt ?? '', fpDigest: fpDigest(fingerprint) };
      if (response.status !== 200 || a.valid !== true || a.nonce !== nonce || !verifyReceipt(fields, a.receipt, [publicKey]))
        throw new Error(`licence ${i}: the check's answer does not verify: ${JSON.stringify(a)}`);
    }
    return `| ${backend} | ${LICENCES} | ${ANALYZE ? 'yes' : 'no'} | ${Math.round(bound)} | ${Math.round(result.rps)} | ${(result.rps / bound).toFixed(2)} | ${result.p50} | ${cores(spent(before.service, after.service))} | ${backend === 'postgres' ? cores(spent(before.postgres, after.postgres)) : ''} | ${((spent(before.service, after.service) / TICKS / (result.rps * elapsed)) * 1e6).toFixed(0)} | ${failures} |`;
  } finally {
    await service.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
    await dispose();
  }
}

const rows: string[] = [];
for (const backend of BACKENDS) rows.push(await run(backend));
console.log(
  `\nbench:check:outside — ${SECONDS} s of 32 connections after ${WARMUP} s of warm-up; ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}\n`,
);
console.log(
  '| Backend | Licences | ANALYZE after binding | Crypto bound (pairs/s, 1 core) | Checks/s | of bound | p50 (ms) | Service CPU (cores) | PostgreSQL CPU (cores) | Service CPU per check (µs) | non-2xx/errors |',
);
console.log('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) console.log(row);
