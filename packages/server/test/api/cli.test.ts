import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli, startServe, stopServe } from '../cli.js';
import { sql } from 'kysely';
import { freshDatabaseEnv, startHarness, type Harness } from '../harness.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, sqliteFileIn } from '../../src/db/database.js';
import { bootstrap } from '../../src/orgs/service.js';
import { writeInitialPassword } from '../../src/users/initial-password.js';
import { buildApp } from '../../src/app.js';
import { loadMasterKey } from '../../src/keys/master-key.js';

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
    expect(bad.stderr).toMatch(/Slug \(slug\): lower-case letters/);
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
    [['--role', 'WIZARD', '--password', 'long enough password'], /^licensor: Role: one of VIEWER, ISSUER or ORG_ADMIN/],
    [['--role', 'VIEWER', '--password', 'short'], /^licensor: Password: text of 12 to 1,024 characters/],
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
    const mistakes = [
      ['user', 'create', '--org', 'acme', '--username', 'u1', '--role', 'WIZARD', '--password', 'long enough password'],
      ['frobnicate'],
      ['migrate', '--bogus'],
    ];
    const [helped, refused] = await Promise.all([
      Promise.all(helps.map((args) => runCli(args, h.env))),
      Promise.all(mistakes.map((args) => runCli(args, h.env))),
    ]);
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
      // Beside the password: where it is kept until it changes, and what to open.
      expect(printed[0]!.output()).toContain(
        `Its password is: ${password}\n(also saved to ${file}, readable only by this user; that file is removed once the password is changed)\n` +
          'Open the console at http://localhost:0/ and sign in to organisation "default" as "admin".\n',
      );
      for (const line of printed[0]!
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))) {
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

  it('removes the initial password file once that password is changed: by the member, by another administrator, or by user set-password', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const config = loadConfig(env);
    const database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) });
    const app = await buildApp({ config, database, masterKey: loadMasterKey(config, () => {}) });
    try {
      const first = (await bootstrap(database, { dataDir: config.dataDir, bootstrapPassword: null }))!;
      const file = first.passwordFile!;
      const call = async (method: 'POST' | 'PUT', url: string, body: unknown, cookie?: string) => {
        const response = await app.inject({ method, url: `/o/default/api${url}`, payload: body as object, headers: cookie ? { cookie } : {} });
        return {
          status: response.statusCode,
          data: response.body ? JSON.parse(response.body) : null,
          cookie: response.cookies.find((c) => c.name === 'svc_session'),
        };
      };
      const signIn = async (username: string, password: string) => `svc_session=${(await call('POST', '/auth/login', { username, password })).cookie!.value}`;
      const admin = await signIn('admin', first.generatedPassword!);
      const colleague = await call('POST', '/users', { username: 'colleague', role: 'ORG_ADMIN', password: 'colleague password' }, admin);
      // Another member's new password, or a wrong current password, leaves the file alone.
      expect((await call('PUT', `/users/${colleague.data.id}`, { password: 'colleague password 2' }, admin)).status).toBe(200);
      expect((await call('PUT', '/auth/password', { currentPassword: 'not the password', newPassword: 'admin password 1' }, admin)).status).toBe(400);
      expect(fs.readFileSync(file, 'utf8').trim()).toBe(first.generatedPassword);

      expect((await call('PUT', '/auth/password', { currentPassword: first.generatedPassword, newPassword: 'admin password 1' }, admin)).status).toBe(204);
      expect(fs.existsSync(file)).toBe(false);

      // The same for a file that holds the password another administrator replaces, and one the CLI replaces.
      writeInitialPassword(config.dataDir, 'admin password 1');
      const adminId = (await database.db.selectFrom('users').select('id').where('username', '=', 'admin').executeTakeFirstOrThrow()).id;
      const theirs = await signIn('colleague', 'colleague password 2');
      expect((await call('PUT', `/users/${adminId}`, { password: 'admin password 2' }, theirs)).status).toBe(200);
      expect(fs.existsSync(file)).toBe(false);
      writeInitialPassword(config.dataDir, 'admin password 2');
      const cli = await runCli(['user', 'set-password', '--org', 'default', '--username', 'admin', '--password', 'admin password 3'], env);
      expect(cli.code).toBe(0);
      expect(fs.existsSync(file)).toBe(false);
      expect((await call('POST', '/auth/login', { username: 'admin', password: 'admin password 3' })).status).toBe(200);
    } finally {
      await app.close();
      await database.close();
      await dispose();
    }
  });

  it('uses LICENSOR_BOOTSTRAP_PASSWORD when set, printing and writing nothing', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const publicUrl = 'http://licences.test:8080';
    const s = await startServe({
      ...env,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'pretty',
      LICENSOR_PUBLIC_URL: publicUrl,
      LICENSOR_BOOTSTRAP_PASSWORD: 'chosen bootstrap pw',
    });
    try {
      expect(fs.existsSync(path.join(env.LICENSOR_DATA_DIR!, 'initial-admin-password'))).toBe(false);
      expect(s.output()).not.toContain('chosen bootstrap pw');
      expect(s.output()).toContain(`Its password is the one LICENSOR_BOOTSTRAP_PASSWORD gave.\nOpen the console at ${publicUrl}/ and sign in`);
      const login = await fetch(`${s.url}/o/default/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'chosen bootstrap pw' }),
      });
      expect(login.status).toBe(200);
      // LOG_FORMAT=pretty: one short line for the request, and no JSON line anywhere.
      await vi.waitFor(() => expect(s.output()).toMatch(/^\d\d:\d\d:\d\d POST \/o\/default\/api\/auth\/login 200 \d+ ms$/m));
      expect(s.output()).toMatch(/^\d\d:\d\d:\d\d INFO {2}the console is at http:\/\/licences\.test:8080\/$/m);
      expect(
        s
          .output()
          .split('\n')
          .filter((line) => line.startsWith('{')),
      ).toEqual([]);
    } finally {
      await stopServe(s.child);
      await dispose();
    }
  });
});
