import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { ADMIN_PASSWORD, startHarness, type Harness, type Response } from '../harness.js';
import { SoftAuthenticator } from '../passkey-helpers.js';
import { followIdp, sessionCookie, signInWithSso, ssoError, ssoSetup, startIdp, type TestIdp } from '../sso-helpers.js';

let h: Harness;
let idp: TestIdp;
let n = 0;
beforeAll(async () => {
  h = await startHarness({ LICENSOR_SSO_ALLOW_NETWORKS: '127.0.0.0/8' });
  idp = await startIdp(`${h.config.ssoBase}/o/${h.slug}/api/sso/callback`);
});
afterAll(async () => {
  await h?.close();
  await idp?.close();
});
beforeEach(async () => {
  await h.admin('PUT', '/sso', { enforce: false });
  await h.admin('DELETE', '/sso');
  const put = await h.admin(
    'PUT',
    '/sso',
    ssoSetup(idp, {
      scopes: ['openid', 'email', 'profile', 'groups'],
      roleClaim: 'groups',
      roleRules: [{ value: 'admins', role: 'ORG_ADMIN' }],
      defaultRole: 'VIEWER',
      jitProvisioning: true,
    }),
  );
  expect(put.statusCode, put.body).toBe(201);
  idp.account = { sub: `person-${++n}`, email: `person${n}@example.com`, email_verified: true, name: `Person ${n}`, groups: ['staff'] };
});

const me = (cookie: string) => h.as({ cookie })('GET', '/auth/me');
const entries = async (count: number) => (await h.admin('GET', `/dashboard/activity?limit=${count}`)).data.items;
const link = (cookie: string, body?: unknown) => h.as({ cookie })('POST', '/auth/sso/link', body);

/** A member's link: the service's answer, then the browser through the IdP and back to the callback. */
async function linkThroughIdp(cookie: string, returnTo?: string): Promise<Response> {
  const started = await link(cookie, returnTo ? { returnTo } : {});
  expect(started.statusCode, started.body).toBe(200);
  const ssoCookie = started.cookies.find((c) => c.name === 'svc_sso')!;
  expect(ssoCookie).toMatchObject({ path: `/o/${h.slug}/api/sso/`, httpOnly: true, sameSite: 'Lax', maxAge: 600 });
  const back = await followIdp(started.data.authorizationUrl);
  return h.request('GET', `${back.pathname}${back.search}`, { cookies: { svc_sso: ssoCookie.value } });
}

// Passkeys, as a browser on {base} would make and use them.
const passkeyOptions = (cookie: string, body: unknown = {}) =>
  h.request('POST', `/o/${h.slug}/api/auth/passkeys/options`, { cookies: { svc_session: cookie }, body });
async function enrol(cookie: string, body: unknown = {}) {
  const authenticator = new SoftAuthenticator(h.config.passkeyOrigin);
  const options = await passkeyOptions(cookie, body);
  expect(options.statusCode, options.body).toBe(200);
  const created = await h.request('POST', `/o/${h.slug}/api/auth/passkeys`, {
    cookies: { svc_session: cookie },
    body: { name: 'Laptop', response: authenticator.register(options.data) },
  });
  expect(created.statusCode, created.body).toBe(201);
  return authenticator;
}
async function passkeySignIn(authenticator: SoftAuthenticator, tamper = false) {
  const options = await h.request('POST', `/o/${h.slug}/api/auth/passkey/options`);
  return h.request('POST', `/o/${h.slug}/api/auth/passkey/login`, { body: { response: authenticator.assert(options.data, { tamper }) } });
}

describe('linking one’s own account (DESIGN 21)', () => {
  it('links a member with a password to the identity, replaces an older link, and refuses another member’s identity', async () => {
    const member = await h.createMember('ISSUER');
    await h.admin('PUT', `/users/${member.id}`, { email: idp.account.email });
    // Its email alone never links a member who has a password.
    expect(ssoError((await signInWithSso(h)).callback)).toBe('ACCOUNT_NOT_LINKED');

    const callback = await linkThroughIdp(member.cookie, `/o/${h.slug}/settings`);
    expect(callback.statusCode).toBe(302);
    expect(callback.headers.location).toBe(`${h.config.ssoBase}/o/${h.slug}/settings`);
    const session = sessionCookie(callback)!;
    expect((await me(session)).data).toMatchObject({ username: member.username, role: 'VIEWER' });
    const [login, linked] = await entries(2);
    expect(linked).toMatchObject({ action: 'sso.linked', actor: member.username, subjectId: String(member.id), details: { replaced: false } });
    expect(login).toMatchObject({ action: 'auth.sso_login', actor: member.username, details: { linked: true } });
    const listed = (await h.admin('GET', '/users')).data.find((u: any) => u.id === member.id);
    expect(listed.ssoLinkedAt).not.toBeNull();
    expect(listed.ssoSignedInAt).not.toBeNull();

    // From now on the identity signs that member in.
    const again = await signInWithSso(h);
    expect((await me(sessionCookie(again.callback)!)).data.username).toBe(member.username);

    // Another member cannot take the identity: refused, audited, no session, the link kept.
    const other = await h.createMember('VIEWER');
    const taken = await linkThroughIdp(other.cookie);
    expect(ssoError(taken)).toBe('ALREADY_LINKED');
    expect(sessionCookie(taken)).toBeUndefined();
    expect((await entries(1))[0]).toMatchObject({ action: 'auth.sso_refused', actor: 'sso', details: { reason: 'ALREADY_LINKED', memberId: other.id } });
    expect((await h.admin('GET', '/sso')).data.lastAttempt).toMatchObject({ outcome: 'ALREADY_LINKED', member: null, emailDomain: 'example.com' });
    expect((await me(sessionCookie((await signInWithSso(h)).callback)!)).data.username).toBe(member.username);

    // Linking to another identity replaces the older link: the old one no longer signs that member in.
    const oldSub = idp.account.sub;
    idp.account = { ...idp.account, sub: `${oldSub}-new` };
    expect((await linkThroughIdp(member.cookie)).statusCode).toBe(302);
    expect((await entries(2))[1]).toMatchObject({ action: 'sso.linked', details: { replaced: true } });
    idp.account = { ...idp.account, sub: oldSub };
    expect(ssoError((await signInWithSso(h)).callback)).toBe('ACCOUNT_NOT_LINKED');
  });

  it('needs the member’s own session, a returnTo of its console, and single sign-on turned on', async () => {
    const member = await h.createMember('VIEWER');
    const token = await h.createToken(['users:write']);
    expect((await h.as({ token })('POST', '/auth/sso/link', {})).statusCode).toBe(403);
    await createPlatformAccount(h.database, { username: `ops${n}`, password: 'platform password 1', role: 'PLATFORM_ADMIN' });
    const platform = (await h.request('POST', '/platform/api/auth/login', { body: { username: `ops${n}`, password: 'platform password 1' } })).cookies.find(
      (c) => c.name === 'svc_platform',
    )!.value;
    const byPlatform = await h.request('POST', `/o/${h.slug}/api/auth/sso/link`, { cookies: { svc_platform: platform }, body: {} });
    expect(byPlatform.statusCode).toBe(403);
    expect((await h.anonymous('POST', '/auth/sso/link', {})).statusCode).toBe(401);

    for (const returnTo of ['/o/other/', `/o/${h.slug}/api/tokens`, `/o/${h.slug}//evil.example`, 'https://evil.example/']) {
      const bad = await link(member.cookie, { returnTo });
      expect([bad.statusCode, bad.data.error], returnTo).toEqual([400, expect.stringContaining('returnTo')]);
    }
    expect((await link(member.cookie, { returnTo: 'x'.repeat(1025) })).statusCode).toBe(400);
    expect((await link(member.cookie, { other: true })).statusCode).toBe(400);
    // No body at all is a link back to the console's home.
    const bare = await h.as({ cookie: member.cookie })('POST', '/auth/sso/link');
    expect(bare.statusCode, bare.body).toBe(200);
    expect(new URL(bare.data.authorizationUrl).origin).toBe(idp.issuer);
    expect(bare.headers['cache-control']).toBe('no-store');
    const pending = await h.database.db.selectFrom('sso_states').select(['link_user_id', 'return_to']).orderBy('id', 'desc').executeTakeFirstOrThrow();
    expect(pending).toEqual({ link_user_id: member.id, return_to: `/o/${h.slug}/` });

    await h.admin('PUT', '/sso', { enabled: false });
    expect((await link(member.cookie, {})).statusCode).toBe(404);
    await h.admin('DELETE', '/sso');
    expect((await link(member.cookie, {})).statusCode).toBe(404);
  });

  it('answers 502 IDP_UNAVAILABLE when the identity provider cannot be reached', async () => {
    const gone = await startIdp(`${h.config.ssoBase}/o/${h.slug}/api/sso/callback`);
    expect((await h.admin('PUT', '/sso', { issuer: gone.issuer })).statusCode).toBe(200);
    await gone.close();
    const member = await h.createMember('VIEWER');
    const answer = await link(member.cookie, {});
    expect([answer.statusCode, answer.data.reason]).toEqual([502, 'IDP_UNAVAILABLE']);
    expect(answer.data.error).not.toContain(gone.issuer);
  });
});

describe('passkeys and single sign-on (DESIGN 21)', () => {
  it('lets a member without a password add a passkey only within 5 minutes of its single sign-on', async () => {
    const signedIn = sessionCookie((await signInWithSso(h)).callback)!;
    const authenticator = await enrol(signedIn);
    // The passkey signs that member in, as a password would.
    const bySigned = await passkeySignIn(authenticator);
    expect(bySigned.statusCode, bySigned.body).toBe(200);
    expect(bySigned.data.username).toBe(`person${n}@example.com`);

    // Later, or from a session no single sign-on opened, a stolen session cannot plant one.
    const reauth = { error: expect.stringContaining('sign in again'), reason: 'REAUTH_REQUIRED' };
    const passkeySession = sessionCookie(bySigned)!;
    const fromPasskey = await passkeyOptions(passkeySession);
    expect([fromPasskey.statusCode, fromPasskey.data]).toEqual([403, reauth]);
    await h.database.db
      .updateTable('sessions')
      .set({ sso_at: Date.now() - 5 * 60_000 - 1_000 })
      .where('method', '=', 'sso')
      .execute();
    const late = await passkeyOptions(signedIn);
    expect([late.statusCode, late.data]).toEqual([403, reauth]);
    const planted = await h.request('POST', `/o/${h.slug}/api/auth/passkeys`, {
      cookies: { svc_session: signedIn },
      body: { name: 'Planted', response: new SoftAuthenticator(h.config.passkeyOrigin).register({ challenge: 'AAAA' }) },
    });
    expect([planted.statusCode, planted.data.reason]).toEqual([403, 'REAUTH_REQUIRED']);
    expect((await h.as({ cookie: signedIn })('GET', '/auth/passkeys')).data).toHaveLength(1);

    // A fresh sign-in (the console asks the IdP with prompt=login) opens the window again.
    expect((await passkeyOptions(sessionCookie((await signInWithSso(h)).callback)!)).statusCode).toBe(200);
  });

  it(`refuses a linked member's passkey once its last single sign-on is older than LICENSOR_SSO_PASSKEY_DAYS`, async () => {
    expect(h.config.ssoPasskeyDays).toBe(30);
    for (const bad of ['0', '3651', 'ten', '-1'])
      expect(() => loadConfig({ ...h.env, LICENSOR_SSO_PASSKEY_DAYS: bad }), bad).toThrow(/LICENSOR_SSO_PASSKEY_DAYS/);
    expect(loadConfig({ ...h.env, LICENSOR_SSO_PASSKEY_DAYS: '3650' }).ssoPasskeyDays).toBe(3650);

    const signedIn = sessionCookie((await signInWithSso(h)).callback)!;
    const authenticator = await enrol(signedIn);
    const id = (await me(signedIn)).data.username;
    const setLast = (days: number) =>
      h.database.db
        .updateTable('users')
        .set({ sso_signed_in_at: Date.now() - days * 86_400_000 })
        .where('username', '=', id)
        .execute();
    await setLast(29.9);
    expect((await passkeySignIn(authenticator)).statusCode).toBe(200);
    await setLast(30.1);
    const refused = await passkeySignIn(authenticator);
    const tampered = await passkeySignIn(authenticator, true);
    expect([refused.statusCode, refused.body]).toEqual([tampered.statusCode, tampered.body]);
    expect(refused.statusCode).toBe(401);
    // Another sign-in through the IdP lets the passkey work again; so does single sign-on turned off.
    await signInWithSso(h);
    expect((await passkeySignIn(authenticator)).statusCode).toBe(200);
    await setLast(400);
    await h.admin('PUT', '/sso', { enabled: false });
    expect((await passkeySignIn(authenticator)).statusCode).toBe(200);
  });

  it('signs a break-glass administrator in with a passkey while single sign-on is required, and no one else', async () => {
    const adminPasskey = await enrol(await h.signIn('admin', ADMIN_PASSWORD), { currentPassword: ADMIN_PASSWORD });
    const second = await h.createMember('ORG_ADMIN');
    const secondPasskey = await enrol(second.cookie, { currentPassword: 'a member password' });
    idp.account.groups = ['admins'];
    await signInWithSso(h);
    expect((await h.admin('PUT', '/sso', { enforce: true, breakGlass: ['admin'] })).statusCode).toBe(200);

    const shut = await passkeySignIn(secondPasskey);
    const tampered = await passkeySignIn(secondPasskey, true);
    expect(shut.statusCode).toBe(401);
    expect([shut.statusCode, shut.body]).toEqual([tampered.statusCode, tampered.body]);
    expect(sessionCookie(shut)).toBeUndefined();

    const breakGlass = await passkeySignIn(adminPasskey);
    expect(breakGlass.statusCode, breakGlass.body).toBe(200);
    expect(breakGlass.data).toMatchObject({ username: 'admin', role: 'ORG_ADMIN' });
    expect((await entries(1))[0]).toMatchObject({ action: 'auth.break_glass_login', actor: 'admin', details: { method: 'passkey' } });
    const session = sessionCookie(breakGlass)!;
    expect((await me(session)).statusCode).toBe(200);
    // The passkey's session keeps its way in only while its member stays break-glass.
    expect((await h.admin('PUT', '/sso', { breakGlass: [second.username] })).statusCode).toBe(200);
    expect((await me(session)).statusCode).toBe(401);
    expect((await passkeySignIn(secondPasskey)).statusCode).toBe(200);
    expect((await passkeySignIn(adminPasskey)).statusCode).toBe(401);
    expect((await h.as({ cookie: second.cookie })('PUT', '/sso', { enforce: false })).statusCode).toBe(200);
  });
});

describe('link limits (DESIGN 21)', () => {
  it('counts links with the starts, 60 a minute per address, then 429 with Retry-After', async () => {
    const member = await h.createMember('VIEWER');
    let answer: Response | undefined;
    for (let i = 0; i < 61; i++) {
      answer = await link(member.cookie, {});
      if (answer.statusCode !== 200) break;
    }
    expect(answer!.statusCode).toBe(429);
    expect(Number(answer!.headers['retry-after'])).toBeGreaterThan(0);
  });
});
