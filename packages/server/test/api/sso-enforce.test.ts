import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { ADMIN_PASSWORD, startHarness, type Harness } from '../harness.js';
import { sessionCookie, signInWithSso, ssoSetup, startIdp, type TestIdp } from '../sso-helpers.js';

let h: Harness;
let idp: TestIdp;
beforeAll(async () => {
  h = await startHarness({ LICENSOR_SSO_ALLOW_NETWORKS: '127.0.0.0/8' });
  idp = await startIdp(`${h.config.ssoBase}/o/${h.slug}/api/sso/callback`);
});
afterAll(async () => {
  await h?.close();
  await idp?.close();
});

const login = (username: string, password: string) => h.anonymous('POST', '/auth/login', { username, password });
const failures = async () => (await h.database.db.selectFrom('login_failures').select('id').execute()).length;

describe('required single sign-on', () => {
  // One story, step by step: a loaded machine needs more than the default 30 s for its sign-ins and CLI runs.
  it('holds only after an ORG_ADMIN signed in with it, shuts out passwords but break-glass ones, and the CLI turns it off', { timeout: 120_000 }, async () => {
    await h.admin(
      'PUT',
      '/sso',
      ssoSetup(idp, {
        scopes: ['openid', 'email', 'profile', 'groups'],
        roleClaim: 'groups',
        roleRules: [{ value: 'admins', role: 'ORG_ADMIN' }],
        jitProvisioning: true,
      }),
    );
    const member = await h.createMember('ISSUER');
    const second = await h.createMember('ORG_ADMIN');
    expect((await h.admin('PUT', '/sso', { enforce: true, breakGlass: ['admin'] })).data.reason).toBe('SSO_NOT_VERIFIED');

    // A VIEWER's sign-in verifies nothing; an ORG_ADMIN's does.
    idp.account = { sub: 'viewer', email: 'viewer@example.com', email_verified: true, groups: [] };
    await signInWithSso(h);
    expect((await h.admin('GET', '/sso')).data.verifiedAt).toBeNull();
    idp.account = { sub: 'boss', email: 'boss@example.com', email_verified: true, groups: ['admins'] };
    const sso = sessionCookie((await signInWithSso(h)).callback)!;
    expect((await h.admin('GET', '/sso')).data.verifiedAt).not.toBeNull();

    expect((await h.admin('PUT', '/sso', { enforce: true, breakGlass: [] })).statusCode).toBe(400);
    const enforced = await h.admin('PUT', '/sso', { enforce: true, breakGlass: ['admin'] });
    expect(enforced.statusCode).toBe(200);
    expect(enforced.data).toMatchObject({ enforce: true, breakGlass: ['admin'] });
    expect((await h.anonymous('GET', '/auth/methods')).data.sso.enforced).toBe(true);

    // The member's password session ends at its next request; its password answers as a wrong one would, and counts.
    expect((await h.as({ cookie: member.cookie })('GET', '/auth/me')).statusCode).toBe(401);
    const before = await failures();
    const right = await login(member.username, 'a member password');
    const wrong = await login(member.username, 'not the password');
    expect([right.statusCode, right.body]).toEqual([wrong.statusCode, wrong.body]);
    expect(right.statusCode).toBe(401);
    expect(await failures()).toBe(before + 2);

    // The break-glass administrator signs in with a password (audited); its session and the SSO one go on.
    expect((await login('admin', ADMIN_PASSWORD)).statusCode).toBe(200);
    const entry = (await h.admin('GET', '/dashboard/activity?limit=1')).data.items[0];
    expect(entry).toMatchObject({ action: 'auth.break_glass_login', actor: 'admin', details: { method: 'password' } });
    expect((await h.as({ cookie: sso })('GET', '/auth/me')).data.username).toBe('boss@example.com');

    // Nobody can leave the organisation without a way in: another administrator with a password is not break-glass.
    expect((await h.admin('PUT', '/sso', { issuer: `${idp.issuer}/other` })).data.reason).toBe('SSO_ENFORCED');
    const admin = (await h.admin('GET', '/users')).data.find((u: any) => u.username === 'admin');
    const demoted = await h.admin('PUT', `/users/${admin.id}`, { role: 'VIEWER' });
    expect(demoted.statusCode).toBe(409);
    expect(demoted.data.error).toContain('break-glass');
    expect((await h.admin('PUT', `/users/${second.id}`, { role: 'VIEWER' })).statusCode).toBe(200);
    expect((await h.as({ cookie: sso })('DELETE', `/users/${admin.id}`)).statusCode).toBe(409);

    const off = await runCli(['sso', 'disable', '--org', h.slug], h.env);
    expect(off.code).toBe(0);
    expect(JSON.parse(off.stdout)).toEqual({ organisation: h.slug, enabled: false, enforce: false });
    expect((await login(member.username, 'a member password')).statusCode).toBe(200);
    expect((await h.admin('GET', '/dashboard/activity?limit=1')).data.items[0]).toMatchObject({ action: 'sso.disabled', actor: 'cli' });
    const config = (await h.admin('GET', '/sso')).data;
    expect(config).toMatchObject({ enabled: false, enforce: false });
    expect(config.verifiedAt).not.toBeNull();
    expect((await h.admin('PUT', '/sso', { enabled: true })).data).toMatchObject({ enabled: true, enforce: false });

    const unknown = await runCli(['sso', 'disable', '--org', 'nowhere'], h.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no organisation "nowhere"');
    const other = await h.otherOrg();
    const none = await runCli(['sso', 'disable', '--org', other.slug], h.env);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('has no single sign-on');

    // Removing single sign-on ends its sessions.
    expect((await h.admin('DELETE', '/sso')).statusCode).toBe(204);
    expect((await h.as({ cookie: sso })('GET', '/auth/me')).statusCode).toBe(401);
  });
});
