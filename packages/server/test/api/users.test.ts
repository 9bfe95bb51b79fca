import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const secretish = /password|hash|scrypt/i;

describe('members', () => {
  it('creates a member with defaults and never shows a password or hash', async () => {
    const response = await h.admin('POST', '/users', {
      username: 'carol',
      email: 'carol@example.com',
      password: 'carol password 1',
      role: 'ISSUER',
    });
    expect(response.statusCode).toBe(201);
    expect(response.data).toEqual({
      id: expect.any(Number),
      username: 'carol',
      displayName: 'carol',
      email: 'carol@example.com',
      role: 'ISSUER',
      active: true,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      lastLoginAt: null,
      ssoLinkedAt: null,
      ssoSignedInAt: null,
    });
    const list = await h.admin('GET', '/users');
    expect(list.body).not.toMatch(secretish);
    expect(list.data.map((m: { username: string }) => m.username)).toEqual(['admin', 'carol']);
    const trail = await h.admin('GET', '/dashboard/activity');
    expect(trail.data.items[0]).toMatchObject({ action: 'user.created', actor: 'admin', subjectType: 'user', subjectId: String(response.data.id) });
    expect(JSON.stringify(trail.data)).not.toContain('carol password 1');
  });

  it.each([
    [{ username: 'dave', role: 'ISSUER', password: 'too short' }, /^Password \(password\): text of 12 to 1,024 characters$/],
    [{ username: 'dave', role: 'SUPERUSER' }, /^Role \(role\): one of VIEWER, ISSUER or ORG_ADMIN$/],
    [{ username: 'dave', role: 'VIEWER', email: 'not-an-email' }, /^Email \(email\): an email address$/],
    [{ username: 'has space', role: 'VIEWER' }, /^Username \(username\): letters, digits, dot, dash, underscore and @, at most 64 characters$/],
    [{ role: 'VIEWER' }, /^Username \(username\) is required$/],
    [{ username: 'dave', role: 'VIEWER', extra: 1 }, /^Unknown field "extra"$/],
  ])('refuses %j with 400 naming the field, creating nothing', async (body, field) => {
    const response = await h.admin('POST', '/users', body);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(field);
    expect((await h.admin('GET', '/users')).data.some((m: { username: string }) => m.username === 'dave')).toBe(false);
  });

  it('refuses a duplicate username with 409', async () => {
    await h.admin('POST', '/users', { username: 'erin', role: 'VIEWER' });
    const again = await h.admin('POST', '/users', { username: 'erin', role: 'ISSUER' });
    expect(again.statusCode).toBe(409);
    expect(again.data.error).toMatch(/erin/);
  });

  it('edits only the fields sent', async () => {
    const created = await h.admin('POST', '/users', { username: 'frank', role: 'VIEWER', email: 'f@example.com' });
    const edited = await h.admin('PUT', `/users/${created.data.id}`, { displayName: 'Frank F.' });
    expect(edited.statusCode).toBe(200);
    expect(edited.data).toMatchObject({ username: 'frank', displayName: 'Frank F.', email: 'f@example.com', role: 'VIEWER' });
    expect((await h.admin('PUT', `/users/${created.data.id}`, {})).statusCode).toBe(400);
    expect((await h.admin('PUT', '/users/999999', { displayName: 'x' })).statusCode).toBe(404);
  });

  it('reads role on every request: a demoted issuer loses write access at once', async () => {
    const member = await h.createMember('ISSUER');
    const me = h.as({ cookie: member.cookie });
    expect((await me('GET', '/users')).statusCode).toBe(200);
    await h.admin('PUT', `/users/${member.id}`, { role: 'VIEWER' });
    expect((await me('GET', '/auth/me')).data.role).toBe('VIEWER');
  });

  it('ends sessions on deactivation, deletion and a new password', async () => {
    for (const change of ['deactivate', 'delete', 'password'] as const) {
      const member = await h.createMember('VIEWER');
      const me = h.as({ cookie: member.cookie });
      expect((await me('GET', '/auth/me')).statusCode).toBe(200);
      if (change === 'deactivate') await h.admin('PUT', `/users/${member.id}`, { active: false });
      if (change === 'delete') expect((await h.admin('DELETE', `/users/${member.id}`)).statusCode).toBe(204);
      if (change === 'password') await h.admin('PUT', `/users/${member.id}`, { password: 'a brand new password' });
      expect((await me('GET', '/auth/me')).statusCode).toBe(401);
    }
  });

  it('never leaves the organisation without an active ORG_ADMIN (409)', async () => {
    const admins = (await h.admin('GET', '/users')).data.filter((m: { role: string }) => m.role === 'ORG_ADMIN');
    expect(admins).toHaveLength(1);
    const id = admins[0].id;
    expect((await h.admin('PUT', `/users/${id}`, { role: 'ISSUER' })).statusCode).toBe(409);
    expect((await h.admin('PUT', `/users/${id}`, { active: false })).statusCode).toBe(409);
    expect((await h.admin('DELETE', `/users/${id}`)).statusCode).toBe(409);
    expect((await h.admin('GET', '/auth/me')).data.role).toBe('ORG_ADMIN');
    // With a second administrator the first may step down.
    const second = await h.admin('POST', '/users', { username: 'second-admin', role: 'ORG_ADMIN', password: 'second admin pass' });
    const secondAdmin = h.as({ cookie: await h.signIn('second-admin', 'second admin pass') });
    expect((await secondAdmin('PUT', `/users/${id}`, { role: 'ISSUER' })).statusCode).toBe(200);
    expect((await h.admin('DELETE', `/users/${second.data.id}`)).statusCode).toBe(403);
    expect((await secondAdmin('PUT', `/users/${id}`, { role: 'ORG_ADMIN' })).statusCode).toBe(200);
  });

  it('does not count an administrator who cannot sign in as the one left', async () => {
    const other = await h.otherOrg();
    const token = await h.createToken(['users:write'], other.slug);
    const bot = await h.as({ token }, other.slug)('POST', '/users', { username: 'no-password-admin', role: 'ORG_ADMIN' });
    expect(bot.statusCode).toBe(201);
    const myId = (await other.admin('GET', '/users')).data.find((m: { username: string }) => m.username === 'admin').id;
    for (const change of [{ role: 'ISSUER' }, { active: false }]) {
      const response = await other.admin('PUT', `/users/${myId}`, change);
      expect(response.statusCode).toBe(409);
      expect(response.data.error).toMatch(/can sign in/);
    }
    expect((await other.admin('DELETE', `/users/${myId}`)).statusCode).toBe(409);
    // Editing the one without a password is not blocked by the rule it never satisfied.
    expect((await other.admin('PUT', `/users/${bot.data.id}`, { displayName: 'Robot' })).statusCode).toBe(200);
    expect((await other.admin('DELETE', `/users/${bot.data.id}`)).statusCode).toBe(204);
  });

  it('lets a token create members (an ORG_ADMIN included) but never set a password', async () => {
    const token = await h.createToken(['users:write']);
    const bot = h.as({ token });
    const created = await bot('POST', '/users', { username: 'bot-made-admin', role: 'ORG_ADMIN' });
    expect(created.statusCode).toBe(201);
    expect((await bot('POST', '/users', { username: 'with-pass', role: 'VIEWER', password: 'long enough pass' })).statusCode).toBe(403);
    expect((await bot('PUT', `/users/${created.data.id}`, { password: 'long enough pass' })).statusCode).toBe(403);
    // Such a member cannot sign in until someone sets a password.
    const login = await h.anonymous('POST', '/auth/login', { username: 'bot-made-admin', password: 'long enough pass' });
    expect(login.statusCode).toBe(401);
    expect((await h.admin('PUT', `/users/${created.data.id}`, { password: 'long enough pass' })).statusCode).toBe(200);
    expect((await h.anonymous('POST', '/auth/login', { username: 'bot-made-admin', password: 'long enough pass' })).statusCode).toBe(200);
  });

  it('lets a VIEWER list members but not change them', async () => {
    const viewer = await h.createMember('VIEWER');
    const me = h.as({ cookie: viewer.cookie });
    expect((await me('GET', '/users')).statusCode).toBe(200);
    const refused = await me('POST', '/users', { username: 'nope', role: 'VIEWER' });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toMatch(/users:write/);
  });
});
