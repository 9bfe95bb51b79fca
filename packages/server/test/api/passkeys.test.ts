import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { ADMIN_PASSWORD, startHarness, type Harness, type Response } from '../harness.js';
import { SoftAuthenticator } from '../passkey-helpers.js';

let h: Harness;
const call = (...args: Parameters<Harness['request']>) => h.request(...args);

const org = (slug = 'acme') => ({
  options: (cookie: string, currentPassword = ADMIN_PASSWORD) =>
    call('POST', `/o/${slug}/api/auth/passkeys/options`, { cookies: { svc_session: cookie }, body: { currentPassword } }),
  register: (cookie: string, name: string, response: unknown) =>
    call('POST', `/o/${slug}/api/auth/passkeys`, { cookies: { svc_session: cookie }, body: { name, response } }),
  signInOptions: () => call('POST', `/o/${slug}/api/auth/passkey/options`),
  signIn: (response: unknown) => call('POST', `/o/${slug}/api/auth/passkey/login`, { body: { response } }),
});

/** Registers a passkey for the member behind `cookie` and answers its authenticator. */
async function enrol(cookie: string, password = ADMIN_PASSWORD, slug = 'acme') {
  const authenticator = new SoftAuthenticator(h.config.passkeyOrigin);
  const options = await org(slug).options(cookie, password);
  expect(options.statusCode, options.body).toBe(200);
  const created = await org(slug).register(cookie, 'Laptop', authenticator.register(options.data));
  expect(created.statusCode, created.body).toBe(201);
  return { authenticator, passkey: created.data };
}

const countSessions = async () =>
  Number(
    (
      await h.database.db
        .selectFrom('sessions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe('passkeys for members (DESIGN 9)', () => {
  it('registers with the current password, then signs in with it as a password sign-in would', async () => {
    const cookie = await h.signIn('admin', ADMIN_PASSWORD);
    expect(h.config.passkeyOrigin).toMatch(/^http:\/\/localhost:\d+$/);
    const options = await org().options(cookie);
    expect(options.data).toMatchObject({
      rp: { id: 'localhost' },
      attestation: 'none',
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    });
    const { authenticator, passkey } = await enrol(cookie);
    expect(passkey).toEqual({ id: expect.any(Number), name: 'Laptop', createdAt: expect.any(String), lastUsedAt: null });

    const signIn = await org().signIn(authenticator.assert((await org().signInOptions()).data));
    expect(signIn.statusCode, signIn.body).toBe(200);
    expect(signIn.data).toMatchObject({ username: 'admin', role: 'ORG_ADMIN', tenant: 'acme' });
    const session = signIn.cookies.find((c) => c.name === 'svc_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/o/acme/' });
    expect((await h.as({ cookie: session.value })('GET', '/auth/me')).data.username).toBe('admin');
    const [listed] = (await h.admin('GET', '/auth/passkeys')).data;
    expect(listed.lastUsedAt).not.toBeNull();
    const audit = (await h.admin('GET', '/dashboard/activity?action=passkey.registered')).data.items;
    expect(audit).toMatchObject([{ actor: 'admin' }]);
  });

  it('refuses registration without the right password, to tokens and to platform sessions', async () => {
    const member = await h.createMember('ISSUER', 'issuer password 1');
    expect((await org().options(member.cookie, 'wrong password')).statusCode).toBe(400);
    const token = await h.createToken(['users:write']);
    expect(
      (await call('POST', '/o/acme/api/auth/passkeys/options', { headers: { authorization: `Bearer ${token}` }, body: { currentPassword: ADMIN_PASSWORD } }))
        .statusCode,
    ).toBe(403);
    expect((await call('GET', '/o/acme/api/auth/passkeys', { headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(403);
    await createPlatformAccount(h.database, { username: 'ops', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
    const login = await call('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'platform password 1' } });
    const platform = login.cookies.find((c) => c.name === 'svc_platform')!.value;
    expect(
      (await call('POST', '/o/acme/api/auth/passkeys/options', { cookies: { svc_platform: platform }, body: { currentPassword: 'platform password 1' } }))
        .statusCode,
    ).toBe(403);
  });

  it('answers the same 401 and changes nothing for every kind of failure', async () => {
    const member = await h.createMember('VIEWER', 'viewer password 1');
    const { authenticator } = await enrol(member.cookie, 'viewer password 1');
    const refused = async (response: unknown) => {
      const before = await countSessions();
      const answer = await org().signIn(response);
      expect([answer.statusCode, answer.data.error]).toEqual([401, 'passkey not accepted']);
      expect(answer.cookies.find((c) => c.name === 'svc_session')).toBeUndefined();
      expect(await countSessions()).toBe(before);
    };
    // A challenge is single-use.
    const options = (await org().signInOptions()).data;
    expect((await org().signIn(authenticator.assert(options))).statusCode).toBe(200);
    await refused(authenticator.assert(options));
    // Expired.
    const stale = (await org().signInOptions()).data;
    await h.database.db
      .updateTable('webauthn_challenges')
      .set({ expires_at: Date.now() - 1 })
      .where('challenge', '=', stale.challenge)
      .execute();
    await refused(authenticator.assert(stale));
    // Another organisation's challenge.
    const other = await h.otherOrg();
    await refused(authenticator.assert((await org(other.slug).signInOptions()).data));
    // A wrong signature, and a counter that goes backwards.
    await refused(authenticator.assert((await org().signInOptions()).data, { tamper: true }));
    const counterBefore = authenticator.counter;
    expect((await org().signIn(authenticator.assert((await org().signInOptions()).data))).statusCode).toBe(200);
    await refused(authenticator.assert((await org().signInOptions()).data, { counter: counterBefore }));
    // An unknown credential.
    await refused(new SoftAuthenticator(h.config.passkeyOrigin).assert((await org().signInOptions()).data));
    // An inactive member.
    await h.admin('PUT', `/users/${member.id}`, { active: false });
    await refused(authenticator.assert((await org().signInOptions()).data));
    // Counted in the address's sign-in limits: the three since the last success.
    const failures = await h.database.db.selectFrom('login_failures').select('id').where('username', '=', '').execute();
    expect(failures.length).toBe(3);
    await h.admin('PUT', `/users/${member.id}`, { active: true });
    expect((await org().signIn(authenticator.assert((await org().signInOptions()).data))).statusCode).toBe(200);
  });

  it('deletes one’s own passkey, audited; a deleted member’s passkeys go with them', async () => {
    const member = await h.createMember('ISSUER', 'deleted password 1');
    const { authenticator, passkey } = await enrol(member.cookie, 'deleted password 1');
    const caller = h.as({ cookie: member.cookie });
    expect((await caller('DELETE', `/auth/passkeys/${passkey.id}`)).statusCode).toBe(204);
    expect((await caller('GET', '/auth/passkeys')).data).toEqual([]);
    expect((await org().signIn(authenticator.assert((await org().signInOptions()).data))).statusCode).toBe(401);
    expect((await h.admin('GET', '/dashboard/activity?action=passkey.deleted')).data.items[0].actor).toBe(member.username);

    const second = await h.createMember('VIEWER', 'second password 1');
    const enrolled = await enrol(second.cookie, 'second password 1');
    expect((await h.admin('DELETE', `/users/${second.id}`)).statusCode).toBe(204);
    expect(await h.database.db.selectFrom('passkeys').select('id').where('id', '=', enrolled.passkey.id).executeTakeFirst()).toBeUndefined();
  });
});

/** Creates a platform account and registers a passkey for it. */
async function enrolPlatform(username: string, password: string) {
  await createPlatformAccount(h.database, { username, password, role: 'PLATFORM_SUPPORT' });
  const login = await call('POST', '/platform/api/auth/login', { body: { username, password } });
  const cookie = login.cookies.find((c) => c.name === 'svc_platform')!.value;
  const authenticator = new SoftAuthenticator(h.config.passkeyOrigin);
  const options = await call('POST', '/platform/api/auth/passkeys/options', { cookies: { svc_platform: cookie }, body: { currentPassword: password } });
  const created = await call('POST', '/platform/api/auth/passkeys', {
    cookies: { svc_platform: cookie },
    body: { name: 'Desk', response: authenticator.register(options.data) },
  });
  expect(created.statusCode, created.body).toBe(201);
  return authenticator;
}

describe('passkey sign-in limits (DESIGN 9)', () => {
  const surfaces = [
    {
      surface: 'an organisation',
      auth: '/o/acme/api/auth',
      username: 'admin',
      password: ADMIN_PASSWORD,
      enrol: async () => (await enrol(await h.signIn('admin', ADMIN_PASSWORD))).authenticator,
      office: 1,
    },
    {
      surface: 'the control plane',
      auth: '/platform/api/auth',
      username: 'limits',
      password: 'limits password 1',
      enrol: () => enrolPlatform('limits', 'limits password 1'),
      office: 2,
    },
  ];

  it.each(surfaces)(
    'counts passkey failures on $surface per address only: ten lock nothing, ten times the limit lock the address',
    async ({ auth, username, password, enrol: enrolOne, office }) => {
      const authenticator = await enrolOne();
      const post = (path: string, address: string, body?: unknown) =>
        h.app.inject({ method: 'POST', url: `${auth}${path}`, remoteAddress: address, ...(body === undefined ? {} : { payload: body as object }) });
      const stranger = new SoftAuthenticator(h.config.passkeyOrigin);
      const failPasskey = async (address: string) =>
        (await post('/passkey/login', address, { response: stranger.assert({ challenge: 'bm8tc3VjaC1jaGFsbGVuZ2U' }) })).statusCode;
      const passkeySignIn = async (address: string) =>
        (await post('/passkey/login', address, { response: authenticator.assert((await post('/passkey/options', address)).json()) })).statusCode;
      const passwordSignIn = async (address: string) => (await post('/login', address, { username, password })).statusCode;
      const limit = h.config.loginFailures;
      expect(limit).toBe(10);

      // An office behind one address: the pair limit's worth of passkey mistakes locks nobody out.
      const small = `10.27.${office}.1`;
      for (let i = 0; i <= limit; i++) expect(await failPasskey(small)).toBe(401);
      expect(await passkeySignIn(small)).toBe(200);
      expect(await passwordSignIn(small)).toBe(200);

      // The address's limit, ten times the pair's, counts them; then every sign-in from there waits.
      const busy = `10.27.${office}.2`;
      for (let i = 0; i < limit * 10; i++) expect(await failPasskey(busy)).toBe(401);
      const refused = await post('/passkey/login', busy, { response: stranger.assert({ challenge: 'bm8tc3VjaC1jaGFsbGVuZ2U' }) });
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(await passkeySignIn(busy)).toBe(429);
      expect(await passwordSignIn(busy)).toBe(429);
      // Elsewhere, nothing changed.
      expect(await passwordSignIn(small)).toBe(200);
    },
  );
});

describe('passkeys for platform accounts', () => {
  it('registers and signs in under /platform/api, and never crosses into an organisation', async () => {
    const login = await call('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'platform password 1' } });
    const cookie = login.cookies.find((c) => c.name === 'svc_platform')!.value;
    const authenticator = new SoftAuthenticator(h.config.passkeyOrigin);
    const options = await call('POST', '/platform/api/auth/passkeys/options', {
      cookies: { svc_platform: cookie },
      body: { currentPassword: 'platform password 1' },
    });
    const created = await call('POST', '/platform/api/auth/passkeys', {
      cookies: { svc_platform: cookie },
      body: { name: 'YubiKey', response: authenticator.register(options.data) },
    });
    expect(created.statusCode, created.body).toBe(201);
    const signInOptions = (await call('POST', '/platform/api/auth/passkey/options')).data;
    const signIn = await call('POST', '/platform/api/auth/passkey/login', { body: { response: authenticator.assert(signInOptions) } });
    expect(signIn.statusCode, signIn.body).toBe(200);
    expect(signIn.data).toMatchObject({ username: 'ops', platform: true, platformRole: 'PLATFORM_ADMIN' });
    // A platform passkey signs nobody into an organisation, nor an organisation's into the platform.
    expect((await org().signIn(authenticator.assert((await org().signInOptions()).data))).statusCode).toBe(401);
    const member = await h.createMember('VIEWER', 'crossing password 1');
    const { authenticator: memberKey } = await enrol(member.cookie, 'crossing password 1');
    const platformOptions = (await call('POST', '/platform/api/auth/passkey/options')).data;
    expect((await call('POST', '/platform/api/auth/passkey/login', { body: { response: memberKey.assert(platformOptions) } })).statusCode).toBe(401);
  });

  it('limits sign-in options to 60 a minute per address', async () => {
    // Counted by the minute: 121 requests put 61 in one minute even when a minute turns mid-loop.
    let last: Response | undefined;
    for (let i = 0; i < 121 && last?.statusCode !== 429; i++) last = await call('POST', '/o/acme/api/auth/passkey/options');
    expect(last!.statusCode).toBe(429);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
  });
});
