import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

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
  return { env, dispose: async () => { await drop(); fs.rmSync(dataDir, { recursive: true, force: true }); } };
}

/** Starts `licensor serve` as its own process and resolves with its base URL once it listens. */
export function startService(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; stop: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'serve'], { env: { ...process.env, ...env, PORT: '0', LOG_LEVEL: 'info' } });
    let output = '';
    const onData = (d: Buffer) => {
      output += d;
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        child.stdout!.off('data', onData);
        resolve({
          child,
          url: match[1]!,
          stop: () => new Promise((done) => { child.once('exit', () => done()); child.kill('SIGTERM'); }),
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (output += d));
    child.once('exit', (code) => reject(new Error(`service exited (${code}):\n${output}`)));
  });
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

export const fmt = (ms: number) => ms.toFixed(1);
