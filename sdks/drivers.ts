// What sdks/drivers.test.ts needs around the drivers: which ones to run, a man-in-the-middle proxy
// per driver, and the driver processes themselves (protocol in docs/protocol.md).
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';

const root = path.resolve(import.meta.dirname, '..');
export const REQUIRE = process.env.LICENSOR_REQUIRE_SDKS === '1';

const overrides = new Map(
  (process.env.LICENSOR_DRIVERS ?? '')
    .split(',')
    .filter(Boolean)
    .map((entry) => entry.split('=') as [string, string]),
);

const onPath = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
/** Why a language's toolchain is missing, or null when it is present. */
const toolchains: Record<string, () => string | null> = {
  java: () => (onPath('javac') && onPath('java') ? null : 'javac and java (openjdk-17-jdk-headless) are not installed'),
  python: () =>
    spawnSync('/usr/bin/python3', ['-c', 'import cryptography']).status === 0
      ? null
      : "Debian's /usr/bin/python3 with cryptography (python3-cryptography) is not installed",
  go: () => (onPath('go') || existsSync('/usr/bin/go') ? null : 'go (golang-go) is not installed'),
};

interface Found {
  lang: string;
  driver: string;
}

/** The drivers to run, and why each missing one is missing. */
function discover(): { found: Found[]; missing: Array<{ lang: string; reason: string }> } {
  const found: Found[] = [];
  const missing: Array<{ lang: string; reason: string }> = [];
  // A language of an override that the test does not know (a fifth SDK) is taken as present.
  for (const lang of new Set(['typescript', 'java', 'python', 'go', ...overrides.keys()])) {
    const driver = overrides.get(lang) ?? path.join(root, lang === 'typescript' ? 'packages/sdk/driver' : `sdks/${lang}/driver`);
    const reason = !existsSync(driver) ? `${path.relative(root, driver) || driver} does not exist` : (toolchains[lang]?.() ?? null);
    if (reason) missing.push({ lang, reason });
    else found.push({ lang, driver });
  }
  return { found, missing };
}

export const { found, missing } = discover();

/**
 * `forge` moves a check answer's signed time; `forgeManifest` swaps the first file of an update
 * in `latest.json` (its SHA-256 in the artifact and in the manifest text, the signatures kept);
 * `corruptFile` flips the last byte of a feed's file.
 */
export type Mode = 'pass' | 'down' | 'status503' | 'badToken' | 'forge' | 'forgeManifest' | 'corruptFile';

/**
 * A proxy in front of the service for one driver: passes, refuses or forges as the scenario asks.
 * It stands where the service's public URL is (`target`): the URLs the service writes into its
 * answers (feeds, files) are rewritten to the proxy's, so they come through it too.
 */
export async function startProxy(target: string, checkId: string) {
  const proxy = { mode: 'pass' as Mode, requests: 0, paths: [] as string[], url: '', close: () => {} };
  const server = http.createServer((request, response) => {
    proxy.requests++;
    // The method and path, the token cut off at its first dot, so a scenario can count what was asked.
    proxy.paths.push(`${request.method} ${(request.url ?? '').replace(/\/(SVC[FG]1)\.[^/]*/, '/$1…').replace(/\?.*$/, '')}`);
    forward(request, response).catch((error: Error) => response.writeHead(502).end(JSON.stringify({ error: error.message })));
  });
  async function forward(request: http.IncomingMessage, response: http.ServerResponse) {
    if (proxy.mode === 'down') {
      request.socket.resetAndDestroy();
      return;
    }
    if (proxy.mode === 'status503') {
      response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"down for maintenance"}');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'content-type', 'accept']) if (request.headers[name]) headers[name] = String(request.headers[name]);
    if (proxy.mode === 'badToken') headers.authorization = `Bearer svcc_${checkId}_${'0'.repeat(64)}`;
    const upstream = await fetch(`${target}${request.url}`, { method: request.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const type = upstream.headers.get('content-type') ?? 'application/json';
    let body: string | Buffer = Buffer.from(await upstream.arrayBuffer());
    if (type.startsWith('application/json')) {
      body = body.toString('utf8').split(target).join(proxy.url);
      if (proxy.mode === 'forge' && upstream.status === 200) {
        // An answer an hour younger than the service signed: it would stretch the offline window.
        const answer = JSON.parse(body);
        answer.checkedAt = answer.serverTime = new Date(Date.parse(answer.checkedAt) + 3_600_000).toISOString();
        body = JSON.stringify(answer);
      }
      if (proxy.mode === 'forgeManifest' && upstream.status === 200 && request.url?.includes('/latest.json')) {
        // Another file in the update's place: its digest changed where it is listed and in the signed text.
        const answer = JSON.parse(body);
        const file = answer.update?.artifacts[0];
        if (file) {
          const forged = 'f'.repeat(64);
          answer.update.manifest = answer.update.manifest.split(file.sha256).join(forged);
          file.sha256 = forged;
        }
        body = JSON.stringify(answer);
      }
    } else if (proxy.mode === 'corruptFile' && upstream.status === 200 && request.url?.includes('/files/') && body.length > 0) {
      body[body.length - 1]! ^= 1;
    }
    // Retry-After too: a trial limit's 429 (DESIGN.md 18) carries it to the SDK.
    const retryAfter = upstream.headers.get('retry-after');
    response
      .writeHead(upstream.status, {
        'content-type': type,
        ...(retryAfter === null ? {} : { 'retry-after': retryAfter }),
      })
      .end(body);
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => {
    server.closeAllConnections();
    server.close();
  };
  return proxy;
}

export type Answer =
  | { ok: true; result: any }
  | { ok: false; error: { code: string; message: string; status?: number; reason?: string; matched?: string[]; retryAfterSeconds?: number } };

/** One driver process: requests are answered one line each, in order. */
export function startDriver(lang: string, command: string) {
  const child: ChildProcessWithoutNullStreams = spawn(command, [], {
    cwd: path.dirname(command),
    env: { ...process.env, GOPROXY: 'off', GOFLAGS: '-mod=readonly' },
  });
  let stderr = '';
  child.stderr.on('data', (data: Buffer) => (stderr = (stderr + data).slice(-20_000)));
  const waiting: Array<(line: string) => void> = [];
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(line));
  let exited = false;
  child.on('exit', () => {
    exited = true;
    for (const resolve of waiting.splice(0)) resolve('');
  });
  return {
    lang,
    /** Sends one request; the first may wait for the driver to build. */
    async send(request: Record<string, unknown>): Promise<Answer> {
      if (exited) throw new Error(`${lang} driver has exited:\n${stderr}`);
      const line = new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${lang} driver did not answer ${JSON.stringify(request.op)} within 240 s:\n${stderr}`)), 240_000);
        waiting.push((text) => {
          clearTimeout(timer);
          resolve(text);
        });
      });
      child.stdin.write(`${JSON.stringify(request)}\n`);
      const text = await line;
      try {
        return JSON.parse(text) as Answer;
      } catch {
        throw new Error(`${lang} driver answered ${JSON.stringify(text)} to ${JSON.stringify(request.op)}:\n${stderr}`);
      }
    },
    stop() {
      child.stdin.end();
      setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
    },
  };
}
