import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { sessionCookie, signInWithSso, ssoError, ssoSetup, startIdp, startSso, throughIdp, type TestIdp } from '../sso-helpers.js';

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
  await h.admin('DELETE', '/sso');
  const put = await h.admin(
    'PUT',
    '/sso',
    ssoSetup(idp, {
      scopes: ['openid', 'email', 'profile', 'groups'],
      roleClaim: 'groups',
      roleRules: [{ value: 'licensor-admins', role: 'ORG_ADMIN' }],
      defaultRole: 'VIEWER',
      jitProvisioning: true,
    }),
  );
  expect(put.statusCode).toBe(201);
  idp.forge = null;
  idp.account = { sub: `user-${++n}`, email: `person${n}@example.com`, email_verified: true, name: `Person ${n}`, groups: ['staff'] };
});

const lastEntry = async () => (await h.admin('GET', '/dashboard/activity?limit=1')).data.items[0];
const me = (cookie: string) => h.as({ cookie })('GET', '/auth/me');

describe('single sign-on', () => {
  it('starts with PKCE S256, a state kept hashed and a browser binding', async () => {
    const start = await startSso(h, { returnTo: `/o/${h.slug}/licences?q=x` });
    expect(start.statusCode).toBe(302);
    expect(start.headers['cache-control']).toBe('no-store');
    const location = new URL(String(start.headers.location));
    expect(`${location.origin}${location.pathname}`).toBe(`${idp.issuer}/auth`);
    const q = location.searchParams;
    expect(Object.fromEntries([...q].filter(([k]) => !['state', 'nonce', 'code_challenge'].includes(k)))).toEqual({
      response_type: 'code',
      client_id: 'licensor-console',
      redirect_uri: `http://localhost:8080/o/${h.slug}/api/sso/callback`,
      scope: 'openid email profile groups',
      code_challenge_method: 'S256',
    });
    for (const k of ['state', 'nonce', 'code_challenge']) expect(q.get(k)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = start.cookies.find((c) => c.name === 'svc_sso')!;
    expect(cookie).toMatchObject({ path: `/o/${h.slug}/api/sso/`, httpOnly: true, sameSite: 'Lax', maxAge: 600 });
    const rows = await h.database.db.selectFrom('sso_states').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(q.get('state')!);
    // A well-formed svc_sso is reused (two tabs); another host is sent to {base} first.
    expect((await startSso(h, { ssoCookie: cookie.value })).cookies.find((c) => c.name === 'svc_sso')!.value).toBe(cookie.value);
    const elsewhere = await h.request('GET', `/o/${h.slug}/api/sso/start?prompt=login`, { headers: { host: '127.0.0.1:8080' } });
    expect(elsewhere.headers.location).toBe(`http://localhost:8080/o/${h.slug}/api/sso/start?prompt=login`);
    for (const query of ['?returnTo=/o/other/', `?returnTo=/o/${h.slug}/api/tokens`, `?returnTo=/o/${h.slug}//evil.example`, '?prompt=none']) {
      const bad = await startSso(h, { query });
      expect(bad.statusCode, query).toBe(400);
    }
  });

  it('provisions a member at the first sign-in, maps its role, and re-applies it at each sign-in', async () => {
    idp.account.groups = ['licensor-admins'];
    const { callback } = await signInWithSso(h, { returnTo: `/o/${h.slug}/licences` });
    expect(callback.statusCode).toBe(302);
    expect(callback.headers.location).toBe(`http://localhost:8080/o/${h.slug}/licences`);
    expect(callback.headers['referrer-policy']).toBe('no-referrer');
    const cookie = callback.cookies.find((c) => c.name === 'svc_session')!;
    expect(cookie).toMatchObject({ path: `/o/${h.slug}/`, httpOnly: true, sameSite: 'Strict' });
    const who = await me(cookie.value);
    expect(who.data).toMatchObject({ username: `person${n}@example.com`, displayName: `Person ${n}`, role: 'ORG_ADMIN' });
    const config = (await h.admin('GET', '/sso')).data;
    expect(config.verifiedAt).not.toBeNull();
    expect((await h.request('GET', '/metrics')).body).toMatch(/^licensor_sso_sign_ins_total\{outcome="SIGNED_IN"\} [1-9]/m);
    expect(config.lastAttempt).toMatchObject({
      outcome: 'SIGNED_IN',
      member: `person${n}@example.com`,
      emailDomain: 'example.com',
      roleClaimValues: ['licensor-admins'],
      role: 'ORG_ADMIN',
    });
    const entries = (await h.admin('GET', '/dashboard/activity?limit=2')).data.items;
    expect(entries.map((e: any) => [e.action, e.actor])).toEqual([
      ['auth.sso_login', `person${n}@example.com`],
      ['user.created', 'sso'],
    ]);
    expect(entries[0].details).toEqual({ provisioned: true, linked: false, roleFrom: null, roleTo: 'ORG_ADMIN' });

    // The groups claim changed at the IdP: the same member (by `sub`) signs in with the new role.
    idp.account.groups = ['staff'];
    const second = await signInWithSso(h);
    expect((await me(sessionCookie(second.callback)!)).data).toMatchObject({ username: `person${n}@example.com`, role: 'VIEWER' });
    expect((await lastEntry()).details).toEqual({ provisioned: false, linked: false, roleFrom: 'ORG_ADMIN', roleTo: 'VIEWER' });
    const members = (await h.admin('GET', '/users')).data.filter((u: any) => u.username === `person${n}@example.com`);
    expect(members).toHaveLength(1);
    expect(members[0].ssoLinkedAt).not.toBeNull();
    expect(members[0].ssoSignedInAt).not.toBeNull();

    // Unlinked: its single sign-on sessions end at once.
    const session = sessionCookie(second.callback)!;
    expect((await h.admin('DELETE', `/users/${members[0].id}/sso-link`)).statusCode).toBe(204);
    expect((await me(session)).statusCode).toBe(401);
    expect((await h.admin('DELETE', `/users/${members[0].id}/sso-link`)).statusCode).toBe(404);
    expect(await lastEntry()).toMatchObject({ action: 'sso.unlinked', actor: 'admin' });
    expect((await h.admin('GET', '/users')).data.find((u: any) => u.id === members[0].id).ssoLinkedAt).toBeNull();
  });

  it('refuses a replayed, missing or foreign state without auditing it, and never makes a session', async () => {
    const { callback, query, ssoCookie } = await signInWithSso(h);
    expect(sessionCookie(callback)).toBeDefined();
    const replay = await h.request('GET', `/o/${h.slug}/api/sso/callback?${query}`, { cookies: { svc_sso: ssoCookie } });
    expect(ssoError(replay)).toBe('STATE_INVALID');
    expect(sessionCookie(replay)).toBeUndefined();
    expect((await h.request('GET', `/o/${h.slug}/api/sso/callback?code=x`, { cookies: { svc_sso: ssoCookie } })).headers.location).toBe(
      `http://localhost:8080/o/${h.slug}/sign-in?ssoError=STATE_INVALID`,
    );
    // Another browser's cookie: the state is spent, the sign-in refused.
    const start = await startSso(h);
    const state = new URL(String(start.headers.location)).searchParams.get('state')!;
    const foreign = await h.request('GET', `/o/${h.slug}/api/sso/callback?state=${state}&code=x`, { cookies: { svc_sso: 'A'.repeat(43) } });
    expect(ssoError(foreign)).toBe('STATE_INVALID');
    expect((await lastEntry()).action).toBe('auth.sso_login');
    // Another organisation's state is not found there, and not spent.
    const other = await h.otherOrg();
    const answer = await h.request('GET', `/o/${other.slug}/api/sso/callback?state=${state}&error=access_denied`, {
      cookies: { svc_sso: start.cookies.find((c) => c.name === 'svc_sso')!.value },
    });
    expect(ssoError(answer)).toBe('STATE_INVALID');
    const fresh = await startSso(h);
    const freshState = new URL(String(fresh.headers.location)).searchParams.get('state')!;
    const idpError = await h.request('GET', `/o/${h.slug}/api/sso/callback?state=${freshState}&error=access_denied&session_state=abc`, {
      cookies: { svc_sso: fresh.cookies.find((c) => c.name === 'svc_sso')!.value },
    });
    expect(ssoError(idpError)).toBe('IDP_ERROR');
    expect(await lastEntry()).toMatchObject({ action: 'auth.sso_refused', actor: 'sso', details: { reason: 'IDP_ERROR', emailDomain: null, memberId: null } });
  });

  it('lets exactly one of several callbacks presenting one state go on', async () => {
    // The IdP's answer for one state, presented by several requests at once.
    const { query, ssoCookie } = await throughIdp(h);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => h.request('GET', `/o/${h.slug}/api/sso/callback?${query}`, { cookies: { svc_sso: ssoCookie } })),
    );
    expect(answers.filter((a) => ssoError(a) === 'STATE_INVALID')).toHaveLength(4);
    expect(answers.filter((a) => sessionCookie(a) !== undefined)).toHaveLength(1);
  });

  it('refuses an ID token from the wrong issuer, for the wrong audience, with another nonce, unsigned, or expired', async () => {
    const wrongIss = await signInWithSso(h, { changeCallback: (q) => q.set('iss', 'http://127.0.0.1:1') });
    expect(ssoError(wrongIss.callback)).toBe('ID_TOKEN_INVALID');
    const forgeries: Array<[string, TestIdp['forge']]> = [
      ['audience', (c) => ({ claims: { ...c, aud: 'someone-else' } })],
      ['issuer', (c) => ({ claims: { ...c, iss: 'http://127.0.0.1:1' } })],
      ['nonce', (c) => ({ claims: { ...c, nonce: 'another nonce' } })],
      ['expired', (c) => ({ claims: { ...c, exp: Math.floor(Date.now() / 1000) - 120 } })],
      ['unsigned', (c) => ({ claims: c, alg: 'none' })],
      ['symmetric', (c) => ({ claims: c, alg: 'HS256' })],
    ];
    for (const [what, forge] of forgeries) {
      idp.forge = forge;
      const { callback } = await signInWithSso(h);
      expect(ssoError(callback), what).toBe('ID_TOKEN_INVALID');
      expect(sessionCookie(callback), what).toBeUndefined();
      expect((await lastEntry()).details, what).toMatchObject({ reason: 'ID_TOKEN_INVALID' });
    }
    // The forging IdP's honest token signs in: the refusals above were the forgeries'.
    idp.forge = (c) => ({ claims: c });
    expect(sessionCookie((await signInWithSso(h)).callback)).toBeDefined();
  });

  it('refuses an unverified email and a domain not allowed, keeping only the domain', async () => {
    idp.account.email_verified = false;
    expect(ssoError((await signInWithSso(h)).callback)).toBe('EMAIL_NOT_VERIFIED');
    idp.account = { ...idp.account, sub: 'outsider', email: 'someone@other.example.org', email_verified: true };
    expect(ssoError((await signInWithSso(h)).callback)).toBe('DOMAIN_NOT_ALLOWED');
    const entry = await lastEntry();
    expect(entry.details).toEqual({ reason: 'DOMAIN_NOT_ALLOWED', emailDomain: 'other.example.org', memberId: null });
    const config = (await h.admin('GET', '/sso')).data;
    expect(config.lastAttempt).toMatchObject({ outcome: 'DOMAIN_NOT_ALLOWED', member: null, emailDomain: 'other.example.org' });
    expect(JSON.stringify([entry, config])).not.toContain('someone@');
    // A subdomain of an allowed domain is another domain.
    idp.account.email = 'someone@sub.example.com';
    expect(ssoError((await signInWithSso(h)).callback)).toBe('DOMAIN_NOT_ALLOWED');
  });

  it('links a lone member without credentials by its verified email, never one with a password', async () => {
    const token = h.as({ token: await h.createToken(['users:write']) });
    const bare = await token('POST', '/users', { username: `bare${n}`, role: 'ISSUER', email: idp.account.email!.toUpperCase() });
    expect(bare.statusCode).toBe(201);
    const linked = await signInWithSso(h);
    expect((await me(sessionCookie(linked.callback)!)).data).toMatchObject({ username: `bare${n}`, role: 'VIEWER' });
    const actions = (await h.admin('GET', '/dashboard/activity?limit=2')).data.items.map((e: any) => e.action);
    expect(actions).toEqual(['auth.sso_login', 'sso.linked']);

    idp.account = { sub: `other-${n}`, email: `held${n}@example.com`, email_verified: true };
    await h.admin('POST', '/users', { username: `held${n}`, role: 'VIEWER', email: `held${n}@example.com`, password: 'a member password' });
    const refused = await signInWithSso(h);
    expect(ssoError(refused.callback)).toBe('ACCOUNT_NOT_LINKED');
    expect((await lastEntry()).details.memberId).toBeTypeOf('number');

    await h.admin('PUT', '/sso', { jitProvisioning: false });
    idp.account = { sub: `new-${n}`, email: `new${n}@example.com`, email_verified: true };
    expect(ssoError((await signInWithSso(h)).callback)).toBe('NOT_PROVISIONED');

    await h.admin('PUT', `/users/${bare.data.id}`, { active: false });
    idp.account = { sub: `user-${n}`, email: `person${n}@example.com`, email_verified: true };
    expect(ssoError((await signInWithSso(h)).callback)).toBe('MEMBER_INACTIVE');
  });

  it('offers itself on the sign-in page while enabled, and refuses a start while disabled', async () => {
    expect((await h.anonymous('GET', '/auth/methods')).data).toEqual({
      sso: { displayName: 'Test IdP', enforced: false, startUrl: `http://localhost:8080/o/${h.slug}/api/sso/start` },
    });
    await h.admin('PUT', '/sso', { enabled: false });
    expect((await h.anonymous('GET', '/auth/methods')).data).toEqual({ sso: null });
    expect(ssoError(await startSso(h))).toBe('SSO_DISABLED');
    expect((await h.request('GET', '/o/nowhere/api/sso/start')).statusCode).toBe(404);
  });

  it('logs neither the state nor the code', async () => {
    const { app, lines } = await h.loggedApp();
    try {
      const start = await h.request('GET', `/o/${h.slug}/api/sso/start`, { app, headers: { host: 'localhost:8080' } });
      const state = new URL(String(start.headers.location)).searchParams.get('state')!;
      await h.request('GET', `/o/${h.slug}/api/sso/callback?state=${state}&code=secret-code-value`, { app, cookies: { svc_sso: start.cookies[0]!.value } });
      const log = lines.join('');
      expect(log).toContain('/api/sso/callback');
      expect(log).not.toContain(state);
      expect(log).not.toContain('secret-code-value');
    } finally {
      await app.close();
    }
  });
});
