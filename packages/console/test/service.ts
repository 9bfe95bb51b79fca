import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const PASSWORD = 'console test password';
const CLI = path.resolve(import.meta.dirname, '../../../bin/licensor.js');

/** STACK.md: Debian's Chromium, never a downloaded browser. */
export const CHROMIUM = process.env.LICENSOR_CHROMIUM ?? '/usr/bin/chromium';
export const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * A real service process (`serve`) on a fresh SQLite data directory and a free port, reached as
 * `http://localhost:PORT` (DESIGN.md 9: its own origin by default).
 */
export async function startService(options: { dataDir?: string; env?: Record<string, string>; password?: string } = {}) {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-console-'));
  const password = options.password ?? PASSWORD;
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      LICENSOR_DATA_DIR: dataDir,
      PORT: String(port),
      LICENSOR_BOOTSTRAP_PASSWORD: password,
      LOG_LEVEL: 'info',
      ...options.env,
    },
  });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${output}`)), 30_000);
    const onData = (d: Buffer) => {
      output += d;
      if (output.includes('Server listening')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}:\n${output}`)));
  });
  return {
    url,
    /** Runs an operator CLI command against this service's data directory; answers its JSON. */
    cli(args: string[]): Promise<unknown> {
      return new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          [CLI, ...args],
          { env: { PATH: process.env.PATH ?? '', LICENSOR_DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...options.env } },
          (error, stdout, stderr) => (error ? reject(new Error(`licensor ${args.join(' ')}: ${stderr}`)) : resolve(JSON.parse(stdout))),
        );
      });
    },
    /** Signs the bootstrap administrator in through the API: the `svc_session=...` cookie. */
    async signIn(): Promise<string> {
      const login = await fetch(`${url}/o/default/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password }),
      });
      return login.headers.get('set-cookie')!.split(';')[0]!;
    },
    stop() {
      child.kill('SIGTERM');
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
