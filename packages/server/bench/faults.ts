/**
 * The world of the fault tests and of `npm run soak` (DESIGN.md 17): a PostgreSQL cluster and a
 * redis-server of their own, each on a free loopback port, that can be stopped and started
 * again; `licensor serve` as a process whose workers are known by pid; and an organisation
 * seeded through the API. Never the machine's own PostgreSQL or Redis; every process started
 * here is stopped by its pid.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { WORKER_TITLE } from '../src/workers.js';

export const CLI = path.resolve(import.meta.dirname, '../../../bin/licensor.js');

/** PostgreSQL's server programs: on the PATH, else Debian's versioned directory. */
function postgresBin(): string | null {
  const candidates = [
    ...(process.env.PATH ?? '').split(':'),
    ...(fs.existsSync('/usr/lib/postgresql')
      ? fs
          .readdirSync('/usr/lib/postgresql')
          .sort()
          .reverse()
          .map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
  ];
  return candidates.find((dir) => dir && fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'pg_ctl'))) ?? null;
}

const onPath = (name: string) => (process.env.PATH ?? '').split(':').some((dir) => dir && fs.existsSync(path.join(dir, name)));

/** Why the faults cannot be staged here (a missing program), or null when they can. */
export function faultToolsMissing(): string | null {
  if (!postgresBin()) return 'initdb and pg_ctl (PostgreSQL server) not found';
  if (!onPath('redis-server')) return 'redis-server not found';
  return null;
}

/** A free loopback port, found by letting the OS pick one. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function until<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/**
 * A PostgreSQL cluster in a temporary folder, made by initdb and run by pg_ctl on a free port.
 * As root the programs run as the `postgres` user (PostgreSQL refuses root), otherwise as the
 * current user. fsync is off: its faults are process restarts, which lose nothing the operating
 * system holds, and the machine's disk is shared.
 */
export class Postgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
  ) {}

  readonly url = () => `postgres://postgres@127.0.0.1:${this.port}/postgres`;

  static async create(): Promise<Postgres> {
    const bin = postgresBin();
    if (!bin) throw new Error('PostgreSQL server programs not found');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-faults-pg-'));
    if (process.getuid?.() === 0) {
      const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
      fs.chownSync(dir, id('-u'), id('-g'));
    }
    const postgres = new Postgres(dir, await freePort(), bin);
    await postgres.run('initdb', ['-D', postgres.data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    await postgres.start();
    return postgres;
  }

  private get data(): string {
    return path.join(this.dir, 'data');
  }

  /** Runs one of PostgreSQL's programs to completion (without blocking the event loop, which may be driving a load). */
  private async run(program: string, args: string[]): Promise<void> {
    const [command, all] =
      process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path.join(this.bin, program), ...args]] : [path.join(this.bin, program), args];
    await promisify(execFile)(command, all as string[], { cwd: this.dir });
  }

  /** Starts the server and returns once it accepts connections. */
  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=100`;
    await this.run('pg_ctl', ['-D', this.data, '-l', path.join(this.dir, 'log'), '-o', options, '-w', '-t', '60', 'start']);
  }

  /** Stops the server; `immediate` is a crash as far as its clients are concerned. */
  stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    return this.run('pg_ctl', ['-D', this.data, '-m', mode, '-w', '-t', '60', 'stop']);
  }

  /** The postmaster's pid while it runs (its pid file's first line). */
  pid(): number | null {
    try {
      return Number(fs.readFileSync(path.join(this.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return null;
    }
  }

  /** Signals the server to stop at once (SIGQUIT, an immediate shutdown) without waiting: for an exit in haste. */
  kill(): void {
    const pid = this.pid();
    if (pid) signal(pid, 'SIGQUIT');
  }

  /** Stops the server by its pid (SIGQUIT: an immediate shutdown), waits for it, and removes the folder. */
  async dispose(): Promise<void> {
    const pid = this.pid();
    if (pid) {
      signal(pid, 'SIGQUIT');
      await until(() => !fs.existsSync(`/proc/${pid}`), 'PostgreSQL to stop', 30_000).catch(() => {});
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A redis-server on a free port without persistence: stopping it loses its counts, as an outage would. */
export class RedisServer {
  private child: ChildProcess | null = null;
  private constructor(readonly port: number) {}

  readonly url = () => `redis://127.0.0.1:${this.port}`;

  static async create(): Promise<RedisServer> {
    const redis = new RedisServer(await freePort());
    await redis.start();
    return redis;
  }

  async start(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    this.child = child;
    await until(() => this.ping(), 'redis-server to answer PING', 10_000);
  }

  /** True when it answers PING on a fresh connection. */
  ping(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(this.port, '127.0.0.1');
      socket.setTimeout(500, () => socket.destroy());
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (data) => {
        resolve(data.toString().startsWith('+PONG'));
        socket.destroy();
      });
      socket.once('close', () => resolve(false));
      socket.once('error', () => resolve(false));
    });
  }

  /** Signals it to stop, without waiting: for an exit in haste. */
  kill(): void {
    if (this.child?.pid) signal(this.child.pid, 'SIGTERM');
  }

  /** Stops it by pid and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

/** Sends a signal to a process that may have exited already. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/** The worker processes of a primary (their parent pid), from /proc. */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command may hold spaces and parentheses: the fields after its closing one are fixed.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return children;
}

/** By its title: a child not yet past exec still shows the primary's command line. */
function isServingWorker(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(WORKER_TITLE);
  } catch {
    return false;
  }
}

/** `licensor serve` as a process of its own, its output kept (the last megabyte). */
export class Service {
  private log = '';
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
  ) {
    const keep = (d: Buffer) => (this.log = (this.log + d).slice(-1_000_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
  }

  /** Starts serve and returns once `workers` workers answer. */
  static async start(env: Record<string, string>): Promise<Service> {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', LICENSOR_WORKERS: '1', ...env, PORT: String(port), HOST: '127.0.0.1' },
    });
    const service = new Service(child, `http://127.0.0.1:${port}`);
    const workers = Number(env.LICENSOR_WORKERS ?? '1');
    try {
      await until(
        async () => {
          if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}:\n${service.output()}`);
          return service.workers().length === workers && (await service.get('/healthz').catch(() => null))?.status === 200;
        },
        'serve to answer',
        60_000,
      );
    } catch (err) {
      service.kill();
      throw err;
    }
    return service;
  }

  output(): string {
    return this.log;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The workers serving the port (not the standby, which waits to replace one). */
  workers(): number[] {
    return this.child.exitCode === null ? childrenOf(this.pid).filter(isServingWorker) : [];
  }

  /** Every child process, the standby included (to stop them all). */
  children(): number[] {
    return this.child.exitCode === null ? childrenOf(this.pid) : [];
  }

  get(pathname: string): Promise<Answer> {
    return request(this.url + pathname, 'GET');
  }

  /** SIGTERM, and the exit code once it has exited. */
  stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve(this.child.exitCode);
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.kill('SIGTERM');
    return exited;
  }

  /** Kills the primary and its workers by pid, for a run that failed. */
  kill(): void {
    for (const pid of [...this.children(), this.pid]) signal(pid, 'SIGKILL');
  }
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  data: any;
}

/** One request; `agent` false puts it on a connection of its own. A socket error rejects. */
export function request(
  url: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
  agent: http.Agent | false = false,
  timeoutMs = 15_000,
): Promise<Answer> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method,
      agent,
      timeout: timeoutMs,
      headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}) },
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (text += chunk));
      response.on('error', reject);
      response.on('end', () => {
        let data: unknown = text;
        try {
          data = text ? JSON.parse(text) : undefined;
        } catch {
          // Not JSON (metrics): kept as text.
        }
        resolve({ status: response.statusCode!, headers: response.headers, data });
      });
    });
    req.end(payload);
  });
}

export const BOOTSTRAP_PASSWORD = 'faults and soak admin password';

/** The environment of a service on the given PostgreSQL (and Redis): a data dir of its own, bootstrapped. */
export function serviceEnv(postgres: Postgres | null, redis: RedisServer | null, dataDir: string): Record<string, string> {
  return {
    LICENSOR_DATA_DIR: dataDir,
    LICENSOR_MASTER_KEY: randomBytes(32).toString('base64'),
    LICENSOR_BOOTSTRAP_PASSWORD: BOOTSTRAP_PASSWORD,
    ...(postgres ? { DATABASE_URL: postgres.url() } : {}),
    ...(redis ? { REDIS_URL: redis.url() } : {}),
  };
}

/** An ONLINE product with its check token, in organisation `default`, and a management token. */
export interface Seeded {
  token: string;
  product: { id: number; checkId: string; checkToken: string; publicKeyPem: string };
}

/** Signs in as the bootstrapped admin, makes a token and a product (through the API, as a vendor would). */
export async function seed(url: string): Promise<Seeded> {
  const api = `${url}/o/default/api`;
  const login = await request(`${api}/auth/login`, 'POST', { username: 'admin', password: BOOTSTRAP_PASSWORD });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.data)}`);
  const cookie = String(login.headers['set-cookie']![0]).split(';')[0]!;
  const made = await request(
    `${api}/tokens`,
    'POST',
    { name: 'faults', scopes: ['licenses:read', 'licenses:write', 'products:read', 'products:write'] },
    { cookie, origin: url },
  );
  if (made.status !== 201) throw new Error(`token failed: ${made.status} ${JSON.stringify(made.data)}`);
  const token = made.data.token as string;
  const auth = { authorization: `Bearer ${token}` };
  const product = await request(
    `${api}/products`,
    'POST',
    { productKey: `faults-${randomBytes(3).toString('hex')}`, name: 'Faults', licenceType: 'ONLINE' },
    auth,
  );
  if (product.status !== 201) throw new Error(`product failed: ${product.status} ${JSON.stringify(product.data)}`);
  const rotated = await request(`${api}/products/${product.data.id}/check-token`, 'POST', undefined, auth);
  if (rotated.status !== 200) throw new Error(`check token failed: ${rotated.status}`);
  return {
    token,
    product: { id: product.data.id, checkId: product.data.checkId, checkToken: rotated.data.checkToken, publicKeyPem: product.data.publicKeyPem },
  };
}
