/**
 * bench:backup — `licensor backup` and `licensor restore` of the bench:licences database (one
 * organisation, 1,000,000 licences), each as its own process: wall time, the process's peak
 * resident memory, and the file's size. SQLite always; PostgreSQL too when DATABASE_URL is set.
 * LICENCES=n overrides the row count; BACKENDS=sqlite or postgres picks one.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { seedLicences } from './seed-licences.js';
import { benchEnv, CLI } from './support.js';

const TOTAL = Number(process.env.LICENCES ?? 1_000_000);

// Loaded into the measured process: its own peak resident memory (KiB), written to stderr as it exits.
const PEAK = `data:text/javascript,process.on('exit', () => process.stderr.write('peak-rss ' + process.resourceUsage().maxRSS + '\\n'))`;

/** Runs one CLI command to completion: seconds taken and peak RSS in MiB. */
function timed(args: string[], env: Record<string, string>): Promise<{ seconds: number; peakMiB: number; stdout: string }> {
  const { DATABASE_URL: _inherited, ...inherited } = process.env;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', PEAK, CLI, ...args], { env: { ...inherited, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const peak = /peak-rss (\d+)/.exec(stderr);
      if (code !== 0 || !peak) return reject(new Error(`licensor ${args[0]} failed (${code}):\n${stderr.slice(-2000)}`));
      resolve({ seconds: (performance.now() - started) / 1000, peakMiB: Number(peak[1]) / 1024, stdout });
    });
  });
}

async function run(backend: 'sqlite' | 'postgres') {
  const source = await benchEnv(backend);
  const target = await benchEnv(backend);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-bench-backup-')), 'bench.backup.gz');
  try {
    const seedSeconds = await seedLicences(source.env, TOTAL);
    console.log(`\n## ${backend}: ${TOTAL.toLocaleString('en')} licences seeded in ${seedSeconds.toFixed(0)} s`);
    const backup = await timed(['backup', '--out', file], source.env);
    const rows = Object.values(JSON.parse(backup.stdout).counts as Record<string, number>).reduce((a, b) => a + b, 0);
    const restore = await timed(['restore', file], target.env);
    console.log('| step | rows | seconds | rows/s | peak RSS MiB | file MiB |\n|---|---|---|---|---|---|');
    const size = (fs.statSync(file).size / 1024 / 1024).toFixed(1);
    for (const [step, result] of [
      ['backup', backup],
      ['restore', restore],
    ] as const) {
      console.log(
        `| ${step} | ${rows.toLocaleString('en')} | ${result.seconds.toFixed(1)} | ${Math.round(rows / result.seconds).toLocaleString('en')} | ${result.peakMiB.toFixed(0)} | ${size} |`,
      );
    }
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
    await source.dispose();
    await target.dispose();
  }
}

console.log(`bench:backup on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}`);
const backends = process.env.BACKENDS?.split(',') ?? ['sqlite', ...(process.env.DATABASE_URL ? ['postgres'] : [])];
for (const backend of backends) await run(backend as 'sqlite' | 'postgres');
