import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, stopServe } from '../cli.js';
import { sql } from 'kysely';
import { freshDatabaseEnv, startHarness, type Harness } from '../harness.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, sqliteFileIn } from '../../src/db/database.js';
import { bootstrap } from '../../src/orgs/service.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe('operator CLI', () => {
  it('migrates, reporting what it applied (nothing the second time)', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const first = await runCli(['migrate'], env);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).migrated).toContain('0001_foundation');
    const second = await runCli(['migrate'], env);
    expect(JSON.parse(second.stdout)).toEqual({ migrated: [] });
    await dispose();
  });

  it('creates an organisation, refusing a duplicate slug with a clear message and exit 1', async () => {
    const created = await runCli(['org', 'create', '--slug', 'globex', '--name', 'Globex Corp', '--plan-limit', '100'], h.env);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ slug: 'globex', name: 'Globex Corp', planLimit: 100, timezone: 'UTC' });
    const again = await runCli(['org', 'create', '--slug', 'globex', '--name', 'Again'], h.env);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe('licensor: an organisation with slug "globex" already exists');
    expect(again.stdout).toBe('');
    const bad = await runCli(['org', 'create', '--slug', 'Not A Slug', '--name', 'x'], h.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/slug/);
  });

  it('creates a user with a password from standard input, who can then sign in', async () => {
    const created = await runCli(
      ['user', 'create', '--org', 'acme', '--username', 'ops', '--password-stdin', '--role', 'ISSUER', '--email', 'ops@example.com', '--display-name', 'Ops'],
      h.env,
      'stdin password 123\n',
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ username: 'ops', role: 'ISSUER', displayName: 'Ops', email: 'ops@example.com', active: true });
    expect(created.stdout).not.toMatch(/password|scrypt/);
    await expect(h.signIn('ops', 'stdin password 123')).resolves.toBeTruthy();
    const trail = await h.admin('GET', '/dashboard/activity?limit=1');
    expect(trail.data.items[0]).toMatchObject({ action: 'user.created', actor: 'cli' });
  });

  // Refusals change nothing, so they run side by side (each is a process start).
  it.concurrent.for([
    [['--role', 'WIZARD', '--password', 'long enough password'], /role/],
    [['--role', 'VIEWER', '--password', 'short'], /password/],
    [['--role', 'VIEWER'], /--password/],
    [['--role', 'VIEWER', '--password', 'long enough password', '--email', 'nope'], /email/],
  ] as const)('refuses user create %j with exit 1 and a clear message', async ([extra, message], { expect }) => {
    const result = await runCli(['user', 'create', '--org', 'acme', '--username', 'bad', ...extra], h.env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a duplicate username and an unknown organisation', async () => {
    const dup = await runCli(['user', 'create', '--org', 'acme', '--username', 'admin', '--password', 'long enough password', '--role', 'VIEWER'], h.env);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already taken/);
    const org = await runCli(['user', 'create', '--org', 'nowhere', '--username', 'x', '--password', 'long enough password', '--role', 'VIEWER'], h.env);
    expect(org.code).toBe(1);
    expect(org.stderr).toMatch(/no organisation "nowhere"/);
  });

  it('sets a password, ending the member sessions', async () => {
    const member = await h.createMember('VIEWER', 'old member password');
    const result = await runCli(['user', 'set-password', '--org', 'acme', '--username', member.username, '--password-stdin'], h.env, 'new member password');
    expect(result.code).toBe(0);
    expect((await h.as({ cookie: member.cookie })('GET', '/auth/me')).statusCode).toBe(401);
    await expect(h.signIn(member.username, 'new member password')).resolves.toBeTruthy();
    const unknown = await runCli(['user', 'set-password', '--org', 'acme', '--username', 'ghost', '--password', 'long enough password'], h.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no user "ghost"/);
  });

  it.concurrent.for([
    [{ PORT: 'eighty' }, /^licensor: PORT must be an integer/],
    [{ PORT: '70000' }, /^licensor: PORT must be/],
    [{ LICENSOR_MASTER_KEY: 'dG9vIHNob3J0' }, /^licensor: LICENSOR_MASTER_KEY must be the base64 encoding of exactly 32 bytes$/],
    [{ LICENSOR_LOGIN_FAILURES: '-1' }, /^licensor: LICENSOR_LOGIN_FAILURES/],
    [{ DATABASE_URL: 'mysql://x' }, /^licensor: DATABASE_URL must start with postgres/],
    [{ LICENSOR_PKCS11_MODULE: '/usr/lib/softhsm/libsofthsm2.so' }, /^licensor: LICENSOR_PKCS11_MODULE and LICENSOR_PKCS11_TOKENS go together$/],
  ] as const)('stops start-up on bad configuration %j with one line', async ([bad, message], { expect }) => {
    const result = await runCli(['serve'], { ...h.env, ...bad });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr.trim()).toMatch(message);
  });

  it('prints its usage for --help and help with exit 0, and one line for a mistake', async () => {
    const helps = [['--help'], ['help'], ['user', 'create', '-h']];
    const mistakes = [['user', 'create', '--org', 'acme', '--username', 'u1', '--role', 'WIZARD', '--password', 'long enough password'], ['frobnicate'], ['migrate', '--bogus']];
    const [helped, refused] = await Promise.all([Promise.all(helps.map((args) => runCli(args, h.env))), Promise.all(mistakes.map((args) => runCli(args, h.env)))]);
    for (const result of helped) {
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^usage: licensor <command>/);
      expect(result.stderr).toBe('');
    }
    for (const result of refused) {
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(/^licensor: .*see licensor --help/);
    }
  });
});

describe('first start', () => {
  it('refuses a bootstrap password shorter than 12 characters with one line', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const result = await runCli(['serve'], { ...env, LICENSOR_BOOTSTRAP_PASSWORD: 'too short' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('licensor: LICENSOR_BOOTSTRAP_PASSWORD must be at least 12 characters\n');
    await dispose();
  });

  it('creates the organisation and its administrator together or not at all', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const config = loadConfig(env);
    const database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) });
    try {
      // A member that cannot be written stands for a crash between the two inserts.
      await sql`alter table users rename to users_gone`.execute(database.db);
      await expect(bootstrap(database, { dataDir: config.dataDir, bootstrapPassword: 'a long bootstrap pw' })).rejects.toThrow();
      expect(await database.db.selectFrom('organisations').select('id').execute()).toEqual([]);
    } finally {
      await database.close();
      await dispose();
    }
  });

  it('bootstraps organisation default and admin once, showing the password on the console only', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const serveEnv = { ...env, LOG_LEVEL: 'info' };
    const [first, second] = await Promise.all([startServe(serveEnv), startServe(serveEnv)]);
    try {
      const file = path.join(env.LICENSOR_DATA_DIR!, 'initial-admin-password');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const password = fs.readFileSync(file, 'utf8').trim();
      expect(password.length).toBeGreaterThanOrEqual(16);
      const printed = [first, second].filter((s) => s.output().includes(password));
      expect(printed).toHaveLength(1);
      for (const line of printed[0]!.output().split('\n').filter((l) => l.startsWith('{'))) {
        expect(line).not.toContain(password);
      }
      const login = await fetch(`${first.url}/o/default/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password }),
      });
      expect(login.status).toBe(200);
      expect(await login.json()).toMatchObject({ role: 'ORG_ADMIN', tenant: 'default' });
      const users = await fetch(`${second.url}/o/default/api/users`, { headers: { cookie: login.headers.get('set-cookie')!.split(';')[0]! } });
      expect(((await users.json()) as Array<{ username: string }>).map((u: { username: string }) => u.username)).toEqual(['admin']);
    } finally {
      for (const s of [first, second]) {
        const exited = new Promise((resolve) => s.child.once('exit', resolve));
        s.child.kill('SIGTERM');
        expect(await exited).toBe(0);
      }
      await dispose();
    }
  });

  it('uses LICENSOR_BOOTSTRAP_PASSWORD when set, printing and writing nothing', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const s = await startServe({ ...env, LOG_LEVEL: 'info', LICENSOR_BOOTSTRAP_PASSWORD: 'chosen bootstrap pw' });
    try {
      expect(fs.existsSync(path.join(env.LICENSOR_DATA_DIR!, 'initial-admin-password'))).toBe(false);
      expect(s.output()).not.toContain('chosen bootstrap pw');
      const login = await fetch(`${s.url}/o/default/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'chosen bootstrap pw' }),
      });
      expect(login.status).toBe(200);
    } finally {
      await stopServe(s.child);
      await dispose();
    }
  });
});
