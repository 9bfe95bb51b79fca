/**
 * bench:downloads (DESIGN.md 20) — a 1 GiB artifact uploaded and then downloaded through a grant
 * from the disk store, against streaming the same stored file with `fs.createReadStream` to a
 * socket from a process of its own in the same run (target: at least 0.8 of its throughput), the
 * service's resident memory sampled throughout each (target: growth under 64 MiB); then each feed
 * (`latest.yml`, Tauri, the appcast) paced at 200 requests a second with 100 published releases
 * (target: p99 under 20 ms). SQLite; PostgreSQL too when DATABASE_URL is set. The runs measure the
 * work, not its refusals: LICENSOR_CHECK_RATE_ADDRESS, LICENSOR_CHECK_RATE_PRODUCT and
 * LICENSOR_USAGE_RATE_LICENCE are 0 and the product's trial limits null. MIB, RELEASES, RATE and
 * SECONDS override the shape.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pg from 'pg';
import { benchEnv, benchSession, checkLoad, memoryOf, startService } from './support.js';

const MIB = Number(process.env.MIB ?? 1024);
const RELEASES = Number(process.env.RELEASES ?? 100);
const RATE = Number(process.env.RATE ?? 200);
const SECONDS = Number(process.env.SECONDS ?? 10);

/** `MIB` mebibytes of one random mebibyte repeated, made as they are read. */
function body(): Readable {
  const chunk = randomBytes(1 << 20);
  let left = MIB;
  return new Readable({
    read() {
      this.push(left-- > 0 ? chunk : null);
    },
  });
}

/** Runs `work` while sampling `pid`'s resident memory every 20 ms: the work's result, seconds and the growth over the start in MiB. */
async function sampled<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; seconds: number; growth: number }> {
  const before = memoryOf(pid).now;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, memoryOf(pid).now)), 20);
  const started = performance.now();
  try {
    const result = await work();
    return { result, seconds: (performance.now() - started) / 1000, growth: Math.max(peak, memoryOf(pid).now) - before };
  } finally {
    clearInterval(timer);
  }
}

/** Reads a response's body to its end without keeping it: the bytes read. */
async function drain(response: Response): Promise<number> {
  if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  return bytes;
}

/** The control: a process of its own answering every GET with `file` piped from `fs.createReadStream`. */
async function control(file: string): Promise<{ url: string; stop: () => void }> {
  const script = `
    const fs = require('node:fs');
    const server = require('node:http').createServer((_, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': fs.statSync(process.argv[1]).size });
      fs.createReadStream(process.argv[1]).pipe(res);
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', script, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())));
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill() };
}

/** The one file under `dir` (the artifact store's) of `size` bytes. */
function storedFile(dir: string, size: number): string {
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (entry.isFile() && fs.statSync(file).size === size) return file;
  }
  throw new Error('stored artifact not found');
}

/**
 * `RATE` GETs a second for `SECONDS` at `url`, spread evenly from a process of its own (bench:check's
 * paced generator; autocannon's rates send each second's quota in a burst): p50 and p99 in
 * milliseconds, and how many did not answer 200.
 */
async function paced(url: string): Promise<{ p50: number; p99: number; bad: number }> {
  const result = await checkLoad({ url, token: '', bodiesFile: '', connections: 10, seconds: SECONDS, rate: RATE, get: true });
  return { p50: result.p50, p99: result.p99, bad: result.non2xx + result.errors };
}

async function run(backend: 'sqlite' | 'postgres'): Promise<string[]> {
  const { env, dispose } = await benchEnv(backend);
  const service = await startService({ ...env, LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '0', LICENSOR_USAGE_RATE_LICENCE: '0' });
  try {
    const api = `${service.url}/o/default/api`;
    const admin = await benchSession(api);
    const call = async (method: string, route: string, payload?: unknown, headers: Record<string, string> = admin) => {
      const response = await fetch(`${api}${route}`, { method, headers, body: payload === undefined ? undefined : JSON.stringify(payload) });
      if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, any>;
    };
    const product = await call('POST', '/products', {
      productKey: 'bench-downloads',
      name: 'Bench downloads',
      licenceType: 'OFFLINE',
      trialDailyLimit: null,
      trialAddressDailyLimit: null,
    });
    const { checkToken } = await call('POST', `/products/${product.id}/check-token`, {});
    const checker = { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' };
    const licence = await call('POST', '/licenses', { productId: product.id, licensee: 'Bench customer' });
    const upload = (releaseId: number, filename: string, platform: string, arch: string, content: Readable | string, extra = '') =>
      fetch(`${api}/releases/${releaseId}/artifacts?${new URLSearchParams({ filename, platform, arch })}${extra}`, {
        method: 'POST',
        headers: { cookie: admin.cookie, 'content-type': 'application/octet-stream' },
        body: content,
        duplex: 'half',
      } as RequestInit).then(async (response) => {
        if (response.status !== 201) throw new Error(`upload: ${response.status} ${await response.text()}`);
        return (await response.json()) as Record<string, any>;
      });

    // The feeds' releases first, so that the large one is the highest.
    const tauriSig = Buffer.from('untrusted comment: signature from tauri secret key\nbench\n').toString('base64');
    const edSig = Buffer.alloc(64, 7).toString('base64');
    for (let i = 0; i < RELEASES; i++) {
      const version = `1.${i}.0`;
      const release = await call('POST', `/products/${product.id}/releases`, { version, notes: `Release ${version}`, bundleVersion: String(i + 1) });
      await upload(release.id, `App-${version}.exe`, 'windows', 'x86_64', `exe ${version}`, `&tauriSignature=${encodeURIComponent(tauriSig)}`);
      await upload(release.id, `App-${version}.zip`, 'darwin', 'universal', `zip ${version}`, `&edSignature=${encodeURIComponent(edSig)}`);
      await call('POST', `/releases/${release.id}/publish`, { publishedAt: new Date(Date.now() - (RELEASES - i) * 60_000).toISOString() });
    }

    const big = await call('POST', `/products/${product.id}/releases`, { version: '2.0.0' });
    const pid = service.child.pid!;
    const up = await sampled(pid, () => upload(big.id, 'App-2.0.0.bin', 'linux', 'x86_64', body()));
    await call('POST', `/releases/${big.id}/publish`, {});
    const size = up.result.size as number;

    const file = storedFile(path.join(env.LICENSOR_DATA_DIR!, 'artifacts'), size);
    const baseline = await control(file);
    const grant = () => call('POST', `/public/license/${product.checkId}/download`, { license: licence.licenseString, artifactId: up.result.id }, checker);
    let down: Awaited<ReturnType<typeof sampled<number>>> | undefined;
    let plain: { seconds: number } | undefined;
    try {
      // One of each first, so that both read the file from the page cache; then three rounds
      // alternating, the fastest of each kept (one transfer of a second or two is at the mercy of
      // whatever else the machine does in it).
      await drain(await fetch(baseline.url));
      await drain(await fetch((await grant()).url));
      for (let round = 0; round < 3; round++) {
        const control = await sampled(pid, async () => drain(await fetch(baseline.url)));
        if (!plain || control.seconds < plain.seconds) plain = control;
        const url = (await grant()).url as string;
        const service = await sampled(pid, async () => drain(await fetch(url)));
        if (!down || service.seconds < down.seconds) down = { ...service, growth: Math.max(service.growth, down?.growth ?? 0) };
      }
    } finally {
      baseline.stop();
    }
    if (!down || !plain) throw new Error('no download measured');
    if (down.result !== size) throw new Error(`download: ${down.result} of ${size} bytes`);
    const mibs = (seconds: number) => size / 2 ** 20 / seconds;

    if (env.DATABASE_URL) {
      // Statistics now, rather than autovacuum's pass over the tables just written competing with
      // the paced feeds for the two cores (as bench:check does after its seed).
      const client = new pg.Client({ connectionString: env.DATABASE_URL });
      await client.connect();
      await client.query('vacuum analyze');
      await client.end();
    }
    const { urls } = await call('POST', `/public/license/${product.checkId}/feed-token`, { license: licence.licenseString }, checker);
    const feeds = {
      'latest.yml': `${urls.electron}latest.yml`,
      Tauri: urls.tauri.replace('{{target}}', 'windows').replace('{{arch}}', 'x86_64').replace('{{current_version}}', '1.0.0'),
      appcast: urls.sparkle,
    } as Record<string, string>;
    const rows = [
      `| ${backend} | upload of ${MIB.toLocaleString('en')} MiB | ${mibs(up.seconds).toFixed(0)} MiB/s | | | +${up.growth.toFixed(1)} MiB |`,
      `| ${backend} | download of ${MIB.toLocaleString('en')} MiB (grant, disk) | ${mibs(down.seconds).toFixed(0)} MiB/s | ${mibs(plain.seconds).toFixed(0)} MiB/s | ${(plain.seconds / down.seconds).toFixed(2)} | +${down.growth.toFixed(1)} MiB |`,
    ];
    const feedRows: string[] = [];
    for (const [name, url] of Object.entries(feeds)) {
      const probe = await fetch(url);
      if (probe.status !== 200) throw new Error(`${name}: ${probe.status} ${await probe.text()}`);
      const { p50, p99, bad } = await paced(url);
      feedRows.push(`| ${backend} | ${name} | ${RELEASES} | ${RATE}/s | ${p50.toFixed(1)} | ${p99.toFixed(1)} | ${bad} |`);
    }
    return [...rows, '', ...feedRows];
  } finally {
    await service.stop();
    await dispose();
  }
}

console.log(`bench:downloads on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}`);
const results = [await run('sqlite'), ...(process.env.DATABASE_URL ? [await run('postgres')] : [])];
console.log('| backend | transfer | service | createReadStream control | ratio | service memory growth |\n|---|---|---:|---:|---:|---:|');
for (const rows of results) console.log(rows.slice(0, rows.indexOf('')).join('\n'));
console.log('\n| backend | feed | releases | paced | p50 ms | p99 ms | not 200 |\n|---|---|---:|---:|---:|---:|---:|');
for (const rows of results) console.log(rows.slice(rows.indexOf('') + 1).join('\n'));
