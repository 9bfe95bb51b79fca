import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { startHarness, type Harness } from '../harness.js';
import { CLIENT_SECRET, ssoSetup, startIdp, type TestIdp } from '../sso-helpers.js';

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
afterEach(async () => {
  await h.admin('DELETE', '/sso');
});

/** A loopback server answering every path with `document` as JSON. */
async function serveJson(document: (base: string) => unknown): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

describe('single sign-on configuration', () => {
  it('is created by PUT, seals the secret, never shows it, and a GET-then-PUT changes nothing', async () => {
    expect((await h.admin('GET', '/sso')).statusCode).toBe(404);
    const created = await h.admin('PUT', '/sso', ssoSetup(idp, { issuer: `${idp.issuer}/` }));
    expect(created.statusCode).toBe(201);
    expect(created.data).toMatchObject({
      enabled: true,
      displayName: 'Test IdP',
      issuer: idp.issuer,
      clientSecretSet: true,
      scopes: ['openid', 'email', 'profile'],
      allowedDomains: ['example.com'],
      roleClaim: null,
      roleRules: [],
      defaultRole: 'VIEWER',
      jitProvisioning: false,
      enforce: false,
      breakGlass: [],
      redirectUri: `http://localhost:8080/o/${h.slug}/api/sso/callback`,
      verifiedAt: null,
      lastAttempt: null,
      updatedBy: 'admin',
    });
    expect(JSON.stringify(created.data)).not.toContain(CLIENT_SECRET);
    const row = await h.database.db.selectFrom('sso_configs').selectAll().executeTakeFirstOrThrow();
    expect(row.client_secret).toMatch(/^sealed-v1\$/);
    expect(JSON.stringify(row)).not.toContain(CLIENT_SECRET);

    const read = await h.admin('GET', '/sso');
    expect(read.data).toEqual(created.data);
    const again = await h.admin('PUT', '/sso', read.data);
    expect(again.statusCode).toBe(200);
    expect(again.data).toEqual(read.data);

    const changed = await h.admin('PUT', '/sso', { displayName: 'Okta', roleClaim: 'realm_access.roles', roleRules: [{ value: 'admins', role: 'ORG_ADMIN' }] });
    expect(changed.data).toMatchObject({
      displayName: 'Okta',
      roleClaim: 'realm_access.roles',
      roleRules: [{ value: 'admins', role: 'ORG_ADMIN' }],
      issuer: idp.issuer,
    });
    const activity = (await h.admin('GET', '/dashboard/activity?limit=5')).data.items;
    expect(activity.map((e: any) => e.action).slice(0, 2)).toEqual(['sso.updated', 'sso.created']);
    expect(activity[0].details).toEqual({ fields: ['displayName', 'roleClaim', 'roleRules'], clientSecretChanged: false, linksRemoved: 0 });
    expect(JSON.stringify(activity)).not.toContain(CLIENT_SECRET);

    expect((await h.admin('DELETE', '/sso')).statusCode).toBe(204);
    expect((await h.admin('GET', '/sso')).statusCode).toBe(404);
    expect((await h.admin('DELETE', '/sso')).statusCode).toBe(404);
    expect((await h.admin('GET', '/dashboard/activity?limit=1')).data.items[0].action).toBe('sso.deleted');
  });

  it('refuses bad values with 400 naming the field, and saves nothing', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ colour: 'red' }, /colour/],
      [{ issuer: `${idp.issuer}/?x=1` }, /^Issuer \(issuer\): may not carry a query/],
      [{ issuer: `${idp.issuer}#top` }, /^Issuer \(issuer\): may not carry a fragment/],
      [{ issuer: 'http://user:pw@127.0.0.1:1' }, /^Issuer \(issuer\): may not carry a user name/],
      [{ issuer: 'not a url' }, /^Issuer \(issuer\): must be an absolute URL/],
      [{ roleClaim: 'realm_access..roles' }, /^Role claim \(roleClaim\): must be a claim path/],
      [{ roleClaim: 'has space' }, /roleClaim/],
      [
        {
          roleRules: [
            { value: 'a', role: 'VIEWER' },
            { value: 'b', role: 'VIEWER' },
            { value: 'c', role: 'OWNER' },
          ],
        },
        /^Role rules item 3 role \(roleRules\[2\]\.role\): one of ORG_ADMIN, ISSUER or VIEWER/,
      ],
      [{ scopes: ['email'] }, /^Scopes \(scopes\): must include openid/],
      [{ scopes: ['openid', 'has space'] }, /scopes\[1\]/],
      [{ allowedDomains: ['user@example.com'] }, /allowedDomains\[0\]/],
      [{ allowedDomains: ['*.example.com'] }, /allowedDomains\[0\]/],
      [{ allowedDomains: ['example'] }, /allowedDomains\[0\]/],
      [{ allowedDomains: ['Example.com'] }, /allowedDomains\[0\]/],
      [{ clientId: 'tab\there' }, /^Client ID \(clientId\): must be printable ASCII/],
      [{ clientSecret: undefined }, /^Client secret \(clientSecret\): required to set up single sign-on/],
      [{ jitProvisioning: true, defaultRole: null }, /defaultRole/],
      [{ breakGlass: ['nobody'] }, /^Break-glass administrators \(breakGlass\): nobody is not an active administrator/],
      [{ enforce: true, breakGlass: ['admin'] }, /sign in once with single sign-on/],
      [{ enforce: true }, /needs at least one break-glass administrator/],
      [{ enforce: true, enabled: false, breakGlass: ['admin'] }, /^Enforce \(enforce\): single sign-on must be on to be required/],
    ];
    for (const [change, message] of cases) {
      const body = { ...ssoSetup(idp), ...change };
      const answer = await h.admin('PUT', '/sso', body);
      expect([400, 409], JSON.stringify(change)).toContain(answer.statusCode);
      expect(answer.data.error, JSON.stringify(change)).toMatch(message);
      expect((await h.admin('GET', '/sso')).statusCode).toBe(404);
    }
    const viewer = await h.createMember('VIEWER');
    expect((await h.admin('PUT', '/sso', { ...ssoSetup(idp), breakGlass: [viewer.username] })).data.error).toContain(viewer.username);
    expect((await h.admin('PUT', '/sso', { ...ssoSetup(idp), enforce: true, breakGlass: ['admin'] })).data.reason).toBe('SSO_NOT_VERIFIED');
  });

  it('runs discovery and the JWKS at creation and in test, with the codes of test', async () => {
    const insecure = await h.admin('PUT', '/sso', ssoSetup(idp, { issuer: 'http://10.1.2.3' }));
    expect(insecure.statusCode).toBe(400);
    expect(insecure.data.reason).toBe('INSECURE_URL');
    expect(insecure.data.error).toContain('LICENSOR_SSO_ALLOW_NETWORKS');
    expect(insecure.data.error).not.toContain('WEBHOOK');

    const closed = await serveJson(() => ({}));
    await closed.close();
    expect((await h.admin('PUT', '/sso', ssoSetup(idp, { issuer: closed.url }))).data.reason).toBe('DISCOVERY_FAILED');

    const other = await serveJson(() => ({ issuer: 'https://elsewhere.example.com', authorization_endpoint: 'x', token_endpoint: 'y', jwks_uri: 'z' }));
    expect((await h.admin('PUT', '/sso', ssoSetup(idp, { issuer: other.url }))).data.reason).toBe('ISSUER_MISMATCH');
    await other.close();

    const keyless = await serveJson((base) => ({
      issuer: base,
      authorization_endpoint: `${base}/auth`,
      token_endpoint: `${base}/token`,
      jwks_uri: `${base}/jwks`,
      keys: [],
      code_challenge_methods_supported: ['plain'],
    }));
    const refused = await h.admin('PUT', '/sso', ssoSetup(idp, { issuer: keyless.url }));
    expect(refused.data.reason).toBe('NO_SIGNING_KEYS');
    expect((await h.admin('GET', '/sso')).statusCode).toBe(404);

    await h.admin('PUT', '/sso', ssoSetup(idp, { scopes: ['openid', 'email', 'offline_access_unknown'] }));
    const test = await h.admin('POST', '/sso/test');
    expect(test.statusCode).toBe(200);
    expect(test.data).toMatchObject({
      ok: true,
      issuer: idp.issuer,
      authorizationEndpoint: `${idp.issuer}/auth`,
      tokenEndpoint: `${idp.issuer}/token`,
      jwksUri: `${idp.issuer}/jwks`,
      signingKeys: 1,
      pkceS256: true,
    });
    expect(test.data.problems.map((p: any) => p.code)).toEqual(['SCOPE_NOT_SUPPORTED']);

    // An issuer changed to one that fails is refused whole; other changes do not run discovery.
    expect((await h.admin('PUT', '/sso', { issuer: keyless.url })).data.reason).toBe('NO_SIGNING_KEYS');
    expect((await h.admin('GET', '/sso')).data.issuer).toBe(idp.issuer);
    await keyless.close();
  });

  it('is an ORG_ADMIN session’s; a platform administrator may only turn it off', async () => {
    await h.admin('PUT', '/sso', ssoSetup(idp));
    for (const role of ['VIEWER', 'ISSUER']) {
      const member = await h.createMember(role);
      expect((await h.as({ cookie: member.cookie })('GET', '/sso')).statusCode).toBe(403);
    }
    const token = h.as({ token: await h.createToken(['users:write', 'webhooks:write']) });
    expect((await token('GET', '/sso')).statusCode).toBe(403);
    expect((await token('PUT', '/sso', { enabled: false })).statusCode).toBe(403);
    expect((await h.anonymous('GET', '/sso')).statusCode).toBe(401);

    await createPlatformAccount(h.database, { username: 'ops', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
    const login = await h.request('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'platform password 1' } });
    const cookies = { svc_platform: login.cookies.find((c) => c.name === 'svc_platform')!.value };
    const platform = (method: string, body?: unknown) => h.request(method, `/o/${h.slug}/api/sso${method === 'POST' ? '/test' : ''}`, { cookies, body });
    expect((await platform('GET')).statusCode).toBe(200);
    expect((await platform('POST')).statusCode).toBe(200);
    expect((await platform('PUT', { displayName: 'Mine' })).statusCode).toBe(403);
    expect((await platform('PUT', { enabled: true })).statusCode).toBe(403);
    const off = await platform('PUT', { enabled: false });
    expect(off.statusCode).toBe(200);
    expect(off.data).toMatchObject({ enabled: false, enforce: false, updatedBy: 'platform/ops' });

    const other = await h.otherOrg();
    expect((await other.admin('GET', '/sso')).statusCode).toBe(404);
  });
});
