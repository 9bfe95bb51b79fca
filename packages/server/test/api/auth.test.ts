import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ LICENSOR_LOGIN_FAILURES: '3' });
});
afterAll(() => h?.close());

describe('sign-in', () => {
  it('sets an HttpOnly, SameSite=Strict session cookie and answers the identity', async () => {
    const response = await h.anonymous('POST', '/auth/login', { username: 'admin', password: ADMIN_PASSWORD });
    expect(response.statusCode).toBe(200);
    expect(response.data).toMatchObject({
      username: 'admin',
      role: 'ORG_ADMIN',
      platform: false,
      organization: { slug: 'acme', name: 'Org acme' },
      tenant: 'acme',
    });
    expect(response.data.version).toMatch(/^\d+\.\d+\.\d+/);
    const cookie = response.cookies.find((c) => c.name === 'svc_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/o/acme/' });
    expect(cookie.secure).toBeFalsy();
    expect(cookie.maxAge).toBe(12 * 3600);
  });

  it('gives one and the same 401 for a missing user, a wrong password and a disabled account', async () => {
    const disabled = await h.createMember('VIEWER', 'disabled password');
    await h.admin('PUT', `/users/${disabled.id}`, { active: false });
    const answers = await Promise.all([
      h.anonymous('POST', '/auth/login', { username: 'nobody', password: 'whatever password' }, { 'x-forwarded-for': '1' }),
      h.anonymous('POST', '/auth/login', { username: 'admin', password: 'wrong password!' }),
      h.anonymous('POST', '/auth/login', { username: disabled.username, password: 'disabled password' }),
    ]);
    for (const a of answers) {
      expect(a.statusCode).toBe(401);
      expect(a.data).toEqual({ error: 'wrong username or password' });
    }
  });

  it('refuses a malformed sign-in body with 400 naming the field', async () => {
    const response = await h.anonymous('POST', '/auth/login', { username: 'admin' });
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toBe('Password (password) is required');
  });

  it('answers /auth/me for a session and for a token', async () => {
    expect((await h.admin('GET', '/auth/me')).data).toMatchObject({ username: 'admin', role: 'ORG_ADMIN', tenant: 'acme' });
    const token = await h.createToken(['users:read']);
    const me = await h.as({ token })('GET', '/auth/me');
    expect(me.statusCode).toBe(200);
    expect(me.data).toMatchObject({ role: 'TOKEN', platform: false, tenant: 'acme' });
    expect(me.data.username).toMatch(/^token\/t\d+$/);
    expect(me.data.displayName).toBe(me.data.username.slice('token/'.length));
  });

  it('ends the session on logout', async () => {
    const cookie = await h.signIn('admin', ADMIN_PASSWORD);
    const caller = h.as({ cookie });
    expect((await caller('POST', '/auth/logout')).statusCode).toBe(204);
    expect((await caller('GET', '/auth/me')).statusCode).toBe(401);
  });

  it('judges an Authorization header alone: a bad token is 401 beside a good cookie', async () => {
    const response = await h.admin('GET', '/auth/me', undefined, { authorization: 'Bearer svc_nope' });
    expect(response.statusCode).toBe(401);
    expect(response.data.error).toBeTruthy();
  });

  it('refuses a cookie-authenticated unsafe request from a foreign Origin, allows our own', async () => {
    const foreign = await h.admin('POST', '/users', { username: 'x1', role: 'VIEWER' }, { origin: 'https://evil.example' });
    expect(foreign.statusCode).toBe(403);
    expect((await h.admin('GET', '/users')).statusCode).toBe(200);
    const own = await h.admin('POST', '/users', { username: 'x1', role: 'VIEWER' }, { origin: h.config.publicUrl });
    expect(own.statusCode).toBe(201);
    const listed = await h.admin('GET', '/users', undefined, { origin: 'https://evil.example' });
    expect(listed.statusCode).toBe(200);
  });

  it('accepts both loopback names as its own origin when no public URL is set (DESIGN 9)', async () => {
    const port = h.config.port;
    for (const [origin, username] of [
      [`http://localhost:${port}`, 'x2'],
      [`http://127.0.0.1:${port}`, 'x3'],
    ] as const) {
      const response = await h.admin('POST', '/users', { username, role: 'VIEWER' }, { origin });
      expect(response.statusCode).toBe(201);
    }
    expect((await h.admin('POST', '/users', { username: 'x4', role: 'VIEWER' }, { origin: `http://localhost:${port + 1}` })).statusCode).toBe(403);
  });

  it('scopes each session cookie to its organisation, so one browser holds several side by side', async () => {
    const other = await h.otherOrg();
    const logins = await Promise.all([
      h.anonymous('POST', '/auth/login', { username: 'admin', password: ADMIN_PASSWORD }),
      h.as({}, other.slug)('POST', '/auth/login', { username: 'admin', password: ADMIN_PASSWORD }),
    ]);
    const [mine, theirs] = logins.map((r) => r.cookies.find((c) => c.name === 'svc_session')!);
    expect(mine!.path).toBe('/o/acme/');
    expect(theirs!.path).toBe(`/o/${other.slug}/`);
    // A browser sends each organisation only the cookie whose path it falls under.
    expect((await h.as({ cookie: mine!.value })('GET', '/auth/me')).data.tenant).toBe('acme');
    expect((await h.as({ cookie: theirs!.value }, other.slug)('GET', '/auth/me')).data.tenant).toBe(other.slug);
    const logout = await h.as({ cookie: mine!.value })('POST', '/auth/logout');
    expect(logout.cookies.find((c) => c.name === 'svc_session')!.path).toBe('/o/acme/');
    expect((await h.as({ cookie: theirs!.value }, other.slug)('GET', '/auth/me')).statusCode).toBe(200);
  });
});

describe('login throttling', () => {
  const attempt = (username: string, password: string, address: string) =>
    h.app.inject({
      method: 'POST',
      url: '/o/acme/api/auth/login',
      payload: { username, password },
      remoteAddress: address,
    });

  it('after the limit of failures, refuses even the right password with 429 and Retry-After, from that address only', async () => {
    const member = await h.createMember('VIEWER', 'the member password');
    for (let i = 0; i < 3; i++) expect((await attempt(member.username, 'wrong password', '10.0.0.1')).statusCode).toBe(401);
    const blocked = await attempt(member.username, 'the member password', '10.0.0.1');
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(800);
    expect(JSON.parse(blocked.body).error).toMatch(/too many/);
    // A stranger elsewhere cannot lock the account out.
    expect((await attempt(member.username, 'the member password', '10.0.0.2')).statusCode).toBe(200);
  });

  it('counts only failures: successful sign-ins never approach the limit', async () => {
    const member = await h.createMember('VIEWER', 'the member password');
    for (let i = 0; i < 5; i++) expect((await attempt(member.username, 'the member password', '10.0.0.3')).statusCode).toBe(200);
  });

  it('limits an address across usernames at ten times the pair limit', async () => {
    for (let i = 0; i < 30; i++) expect((await attempt(`ghost${i % 10}`, 'wrong', '10.0.0.4')).statusCode).toBe(401);
    expect((await attempt('admin', ADMIN_PASSWORD, '10.0.0.4')).statusCode).toBe(429);
    expect((await attempt('admin', ADMIN_PASSWORD, '10.0.0.5')).statusCode).toBe(200);
  });

  it('lets failures age out of the 15-minute window', async () => {
    const member = await h.createMember('VIEWER', 'the member password');
    for (let i = 0; i < 3; i++) await attempt(member.username, 'wrong password', '10.0.0.6');
    expect((await attempt(member.username, 'the member password', '10.0.0.6')).statusCode).toBe(429);
    // Age the recorded failures rather than sleeping through the window.
    await h.database.db
      .updateTable('login_failures')
      .set({ at: Date.now() - 16 * 60 * 1000 })
      .where('address', '=', '10.0.0.6')
      .execute();
    expect((await attempt(member.username, 'the member password', '10.0.0.6')).statusCode).toBe(200);
  });
});

describe('own password', () => {
  it('changes the password, keeps this session and ends the others', async () => {
    const member = await h.createMember('ISSUER', 'first password!');
    const other = await h.signIn(member.username, 'first password!');
    const me = h.as({ cookie: member.cookie });
    expect((await me('PUT', '/auth/password', { currentPassword: 'wrong', newPassword: 'second password!' })).statusCode).toBe(400);
    expect((await me('PUT', '/auth/password', { currentPassword: 'first password!', newPassword: 'short' })).statusCode).toBe(400);
    expect((await me('PUT', '/auth/password', { currentPassword: 'first password!', newPassword: 'second password!' })).statusCode).toBe(204);
    expect((await me('GET', '/auth/me')).statusCode).toBe(200);
    expect((await h.as({ cookie: other })('GET', '/auth/me')).statusCode).toBe(401);
    await expect(h.signIn(member.username, 'second password!')).resolves.toBeTruthy();
    const trail = await h.admin('GET', '/dashboard/activity');
    expect(trail.data.items[0]).toMatchObject({ action: 'user.password_changed', actor: member.username });
  });

  it('is closed to tokens', async () => {
    const token = await h.createToken(['users:write']);
    const response = await h.as({ token })('PUT', '/auth/password', { currentPassword: 'x', newPassword: 'long enough password' });
    expect(response.statusCode).toBe(403);
  });
});
