import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { ALGORITHM_INFO, signBytes, verifyBytes, type Algorithm } from '@licensor/protocol';

/** A fresh key pair of a signing algorithm, for benchmarks that sign as a product does. */
export function benchKeyPair(algorithm: Algorithm): { privateKey: KeyObject; publicKey: KeyObject } {
  const { type, options } = ALGORITHM_INFO[algorithm].keyGeneration;
  return (generateKeyPairSync as (type: string, options: object) => { privateKey: KeyObject; publicKey: KeyObject })(type, options);
}

/** One verify (of a licence-sized payload) plus one sign (of a receipt-sized message) per second, on this core. */
export function cryptoBound(algorithm: Algorithm): number {
  const { privateKey, publicKey } = benchKeyPair(algorithm);
  const licence = Buffer.from(randomBytes(300).toString('base64url'));
  const receipt = Buffer.from(
    `SVCR1\x1f${randomUUID()}\x1fACTIVE\x1f${randomBytes(18).toString('base64url')}\x1f2026-01-01T00:00:00.000Z\x1f2026-01-01T00:00:00.000Z\x1f${'a'.repeat(32)}`,
  );
  const signature = signBytes(privateKey, licence);
  let pairs = 0;
  const start = performance.now();
  while (performance.now() - start < 2000) {
    verifyBytes(publicKey, licence, signature);
    signBytes(privateKey, receipt);
    pairs++;
  }
  return pairs / ((performance.now() - start) / 1000);
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  firstFailure: string | null;
}

/** A run of bench/check-load.ts, the check load generator, in a process of its own. */
export function checkLoad(job: {
  url: string;
  token: string;
  bodiesFile: string;
  connections: number;
  seconds: number;
  rate?: number;
  amount?: number;
  usage?: { meter: string; events: number };
  get?: boolean;
}): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'check-load.ts'), JSON.stringify(job)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load generator exited ${code}`))));
  });
}

export const CLI = path.resolve(import.meta.dirname, '../../../bin/licensor.js');

/** A fresh database for a benchmark run: a temporary SQLite dir, or a new PostgreSQL database. */
export async function benchEnv(backend: 'sqlite' | 'postgres'): Promise<{ env: Record<string, string>; dispose: () => Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-bench-'));
  const env: Record<string, string> = {
    LICENSOR_DATA_DIR: dataDir,
    LICENSOR_MASTER_KEY: randomBytes(32).toString('base64'),
    LICENSOR_BOOTSTRAP_PASSWORD: 'bench admin password',
    LOG_LEVEL: 'warn',
  };
  let drop = async () => {};
  if (backend === 'postgres') {
    const base = process.env.DATABASE_URL!;
    const name = `licensor_bench_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(base);
    url.pathname = `/${name}`;
    env.DATABASE_URL = url.toString();
    drop = async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    };
  }
  return {
    env,
    dispose: async () => {
      await drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A free loopback port, found by letting the OS pick one. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `licensor serve` as its own process at LOG_LEVEL=warn (a log line per request would
 * be measured too) and resolves once /healthz answers. Its output is drained throughout: a
 * full pipe would block the service's writes and stall it.
 */
export async function startService(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // The service gets the run's database only: a DATABASE_URL inherited from this process (set for
  // the PostgreSQL pass) must not turn the SQLite pass into a PostgreSQL one.
  const { DATABASE_URL: _inherited, ...inherited } = process.env;
  // BENCH_PROFILE=dir writes the service's CPU profile there when it stops (node --cpu-prof).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, CLI, 'serve'], { env: { ...inherited, LOG_LEVEL: 'warn', ...env, PORT: String(port) } });
  let output = '';
  const keep = (d: Buffer) => (output = (output + d).slice(-10_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  child.once('exit', () => (exited = true));
  for (let i = 0; i < 300; i++) {
    if (exited) throw new Error(`service exited:\n${output}`);
    const ready = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) {
      return {
        child,
        url,
        stop: () =>
          new Promise((done) => {
            if (exited) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`service did not start:\n${output}`);
}

/** `concurrency` clients each sending one request after another for `seconds`; what came of them. */
export async function closedLoop(concurrency: number, seconds: number, send: (client: number, i: number) => Promise<Response>, expected: number) {
  let ok = 0;
  let failed = 0;
  let firstFailure = '';
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  const client = async (c: number) => {
    for (let i = 0; performance.now() < deadline; i++) {
      const start = performance.now();
      const response = await send(c, i);
      const text = await response.text();
      latencies.push(performance.now() - start);
      if (response.status === expected) ok++;
      else if (failed++ === 0) firstFailure = `${response.status} ${text.slice(0, 160)}`;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, (_, c) => client(c)));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { rate: ok / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failed, firstFailure };
}

/** Signs in as the benchmark's bootstrap administrator: the headers of its session. */
export async function benchSession(api: string): Promise<{ cookie: string; 'content-type': string }> {
  const login = await fetch(`${api}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: 'bench admin password' }),
  });
  return { cookie: login.headers.get('set-cookie')!.split(';')[0]!, 'content-type': 'application/json' };
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Sequential requests: p50/p95 in milliseconds. */
export async function measure(n: number, request: () => Promise<Response>): Promise<{ p50: number; p95: number }> {
  await (await request()).arrayBuffer();
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const response = await request();
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

/** Peak and current resident memory of a process, in MiB (Linux /proc). */
export function memoryOf(pid: number): { peak: number; now: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)![1]);
  return { peak: kb('VmHWM') / 1024, now: kb('VmRSS') / 1024 };
}

/**
 * CPU seconds (user and system) a process and every process under it have used so far (Linux
 * /proc, clock ticks of 1/100 s): the service's own work, which a machine shared with other work
 * slows far less than it does throughput.
 */
export function treeCpuSeconds(pid: number): number {
  const stats = fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        // The fields after the command's closing parenthesis: state, ppid, ... utime (14th of the line), stime (15th).
        const fields = fs.readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]!.split(' ');
        return [{ pid: Number(name), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) }];
      } catch {
        return [];
      }
    });
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const stat of stats) {
      if (tree.has(stat.pid) || !tree.has(stat.ppid)) continue;
      tree.add(stat.pid);
      grew = true;
    }
  }
  return stats.filter((stat) => tree.has(stat.pid)).reduce((sum, stat) => sum + stat.ticks, 0) / 100;
}

export const fmt = (ms: number) => ms.toFixed(1);
