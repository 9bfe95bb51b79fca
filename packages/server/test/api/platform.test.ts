import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { checkBody, checkedProduct } from '../check-helpers.js';
import { pathOf, releasedProduct } from '../download-helpers.js';
import { runCli } from '../cli.js';
import { ADMIN_PASSWORD, startHarness, type Harness } from '../harness.js';
import { fingerprint, issueOk } from '../licence-helpers.js';
import { machine, startBody, trialProduct } from '../trial-helpers.js';

let h: Harness;
const call = (...args: Parameters<Harness['request']>) => h.request(...args);
let adminCookie: string;
let supportCookie: string;
const PASSWORD = 'platform password 1';

const asAdmin = (method: string, url: string, body?: unknown) => call(method, url, { cookies: { svc_platform: adminCookie }, body });

async function platformSignIn(username: string, password = PASSWORD): Promise<string> {
  const response = await call('POST', '/platform/api/auth/login', { body: { username, password } });
  if (response.statusCode !== 200) throw new Error(`platform sign-in failed: ${response.body}`);
  return response.cookies.find((c) => c.name === 'svc_platform')!.value;
}

beforeAll(async () => {
  h = await startHarness();
  await createPlatformAccount(h.database, { username: 'ops', password: PASSWORD, role: 'PLATFORM_ADMIN' });
  await createPlatformAccount(h.database, { username: 'helpdesk', password: PASSWORD, role: 'PLATFORM_SUPPORT' });
  adminCookie = await platformSignIn('ops');
  supportCookie = await platformSignIn('helpdesk');
});
afterAll(() => h?.close());

describe('control plane', () => {
  it('signs a platform account in with a Path=/ cookie, and answers who it is', async () => {
    const login = await call('POST', '/platform/api/auth/login', { body: { username: 'ops', password: PASSWORD } });
    expect(login.statusCode).toBe(200);
    expect(login.data).toMatchObject({ username: 'ops', platform: true, platformRole: 'PLATFORM_ADMIN', organization: null, tenant: null });
    const cookie = login.cookies.find((c) => c.name === 'svc_platform')!;
    expect(cookie).toMatchObject({ path: '/', httpOnly: true, sameSite: 'Strict' });
    const wrong = await call('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'not the password' } });
    const nobody = await call('POST', '/platform/api/auth/login', { body: { username: 'nobody', password: PASSWORD } });
    expect([wrong.statusCode, nobody.statusCode]).toEqual([401, 401]);
    expect(wrong.data).toEqual(nobody.data);
    const me = await call('GET', '/platform/api/auth/me', { cookies: { svc_platform: cookie.value } });
    expect(me.data).toMatchObject({ username: 'ops', platformRole: 'PLATFORM_ADMIN' });
    expect((await call('POST', '/platform/api/auth/logout', { cookies: { svc_platform: cookie.value } })).statusCode).toBe(204);
    expect((await call('GET', '/platform/api/auth/me', { cookies: { svc_platform: cookie.value } })).statusCode).toBe(401);
  });

  it('throttles failed sign-ins like an organisation’s, and refuses a write from another origin', async () => {
    for (let i = 0; i < h.config.loginFailures; i++) {
      expect((await call('POST', '/platform/api/auth/login', { body: { username: 'helpdesk', password: 'wrong password' } })).statusCode).toBe(401);
    }
    const limited = await call('POST', '/platform/api/auth/login', { body: { username: 'helpdesk', password: PASSWORD } });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    const foreign = await call('PUT', `/platform/api/organisations/${h.slug}`, {
      cookies: { svc_platform: adminCookie },
      body: { name: 'Hijacked' },
      headers: { origin: 'https://evil.example' },
    });
    expect([foreign.statusCode, foreign.data.error]).toEqual([403, 'requests from origin https://evil.example are not accepted']);
    expect((await asAdmin('GET', `/platform/api/organisations/${h.slug}`)).data.name).not.toBe('Hijacked');
  });

  it('judges every control-plane route: no credential 401, an organisation token or session 403, SUPPORT reads only', async () => {
    const token = await h.createToken(['licenses:read']);
    const orgCookie = await h.signIn('admin', ADMIN_PASSWORD);
    const routes = h.app.platformApiRoutes.filter((r) => r.access !== 'public');
    expect(routes.length).toBeGreaterThanOrEqual(8);
    for (const route of routes) {
      const url = route.url.replace(':slug', h.slug);
      const what = `${route.method} ${url}`;
      expect((await call(route.method, url)).statusCode, `${what} without credential`).toBe(401);
      const withToken = await call(route.method, url, { headers: { authorization: `Bearer ${token}` } });
      expect([withToken.statusCode, withToken.data.error], `${what} with a token`).toEqual([403, 'tokens cannot reach the control plane']);
      expect((await call(route.method, url, { cookies: { svc_session: orgCookie } })).statusCode, `${what} with an organisation session`).toBe(403);
      if (route.url.endsWith('/auth/logout')) continue;
      const support = await call(route.method, url, { cookies: { svc_platform: supportCookie }, body: route.method === 'GET' ? undefined : {} });
      if (route.access === 'write')
        expect([support.statusCode, support.data.error], `${what} as SUPPORT`).toEqual([403, 'PLATFORM_SUPPORT may read but not change']);
      // Read routes let SUPPORT in (a body they need may still be a 400).
      else expect([401, 403], `${what} as SUPPORT`).not.toContain(support.statusCode);
    }
    // A token is refused even at sign-in.
    expect(
      (await call('POST', '/platform/api/auth/login', { headers: { authorization: `Bearer ${token}` }, body: { username: 'ops', password: PASSWORD } }))
        .statusCode,
    ).toBe(403);
  });

  it('creates an organisation and its first administrator, who signs in and issues', async () => {
    const created = await asAdmin('POST', '/platform/api/organisations', { slug: 'initech', name: 'Initech', planLimit: 5, timezone: 'Europe/Berlin' });
    expect(created.statusCode).toBe(201);
    expect(created.data).toMatchObject({
      slug: 'initech',
      name: 'Initech',
      planLimit: 5,
      trialLimit: null,
      suspended: false,
      timezone: 'Europe/Berlin',
      counts: { licences: 0, countingLicences: 0, trials: 0, products: 0, members: 0 },
    });
    const member = await asAdmin('POST', '/platform/api/organisations/initech/members', {
      username: 'peter',
      password: 'peter password 1',
      role: 'ORG_ADMIN',
      email: 'peter@initech.example',
    });
    expect(member.statusCode).toBe(201);
    expect(member.data).toMatchObject({ username: 'peter', role: 'ORG_ADMIN', active: true });
    const peter = h.as({ cookie: await h.signIn('peter', 'peter password 1', 'initech') }, 'initech');
    const product = await peter('POST', '/products', { productKey: 'tps', name: 'TPS Reports' });
    expect(product.statusCode).toBe(201);
    await issueOk(peter, { productId: product.data.id, licensee: 'Lumbergh' });
    const read = await call('GET', '/platform/api/organisations/initech', { cookies: { svc_platform: supportCookie } });
    expect(read.data.counts).toEqual({ licences: 1, countingLicences: 1, trials: 0, products: 1, members: 1 });
    const audited = await peter('GET', '/dashboard/activity?action=user.created');
    expect(audited.data.items[0]).toMatchObject({ actor: 'platform/ops', summary: 'Created ORG_ADMIN peter' });

    const list = await call('GET', '/platform/api/organisations', { cookies: { svc_platform: supportCookie } });
    expect(list.data.map((o: { slug: string }) => o.slug)).toEqual(['acme', 'initech']);
    const activity = await call('GET', '/platform/api/activity?limit=5', { cookies: { svc_platform: supportCookie } });
    expect(activity.data.items.slice(0, 2)).toMatchObject([
      { actor: 'platform/ops', action: 'member.created', organisation: 'initech', details: { username: 'peter', role: 'ORG_ADMIN' } },
      { actor: 'platform/ops', action: 'organisation.created', organisation: 'initech' },
    ]);
  });

  it('refuses bad input with the right status and writes nothing', async () => {
    const before = (await asAdmin('GET', '/platform/api/activity')).data.total;
    const cases: Array<[string, string, unknown, number]> = [
      ['POST', '/platform/api/organisations', { slug: 'Bad Slug', name: 'x' }, 400],
      ['POST', '/platform/api/organisations', { slug: 'a', name: 'x' }, 400],
      ['POST', '/platform/api/organisations', { slug: 'fine-slug', name: 'x', planLimit: -1 }, 400],
      ['POST', '/platform/api/organisations', { slug: 'fine-slug', name: 'x', planLimit: 1.5 }, 400],
      ['POST', '/platform/api/organisations', { slug: 'fine-slug', name: 'x', timezone: 'Mars/Olympus' }, 400],
      ['POST', '/platform/api/organisations', { slug: 'initech', name: 'Again' }, 409],
      ['PUT', '/platform/api/organisations/nowhere', { name: 'x' }, 404],
      ['PUT', '/platform/api/organisations/initech', {}, 400],
      ['PUT', '/platform/api/organisations/initech', { planLimit: 'ten' }, 400],
      ['POST', '/platform/api/organisations', { slug: 'fine-slug', name: 'x', trialLimit: -1 }, 400],
      ['PUT', '/platform/api/organisations/initech', { trialLimit: 1.5 }, 400],
      ['PUT', '/platform/api/organisations/initech', { trialLimit: 1_000_000_001 }, 400],
      ['POST', '/platform/api/organisations/initech/members', { username: 'peter', password: 'another password 1', role: 'VIEWER' }, 409],
      ['POST', '/platform/api/organisations/initech/members', { username: 'bill', password: 'short', role: 'VIEWER' }, 400],
    ];
    for (const [method, url, body, status] of cases) {
      const response = await asAdmin(method, url, body);
      expect([response.statusCode, typeof response.data.error], `${method} ${url} ${JSON.stringify(body)}`).toEqual([status, 'string']);
    }
    expect((await asAdmin('GET', '/platform/api/activity')).data.total).toBe(before);
    expect((await asAdmin('GET', '/platform/api/organisations')).data).toHaveLength(2);
  });

  it('sets the plan limit the next issue obeys on any instance; lowering it changes no licence', async () => {
    // A second instance over the same database.
    const other = await buildApp({ config: h.config, database: h.database, masterKey: loadMasterKey(h.config, () => {}), logger: false });
    await other.ready();
    const peterCookie = await h.signIn('peter', 'peter password 1', 'initech');
    const products = await call('GET', '/o/initech/api/products', { cookies: { svc_session: peterCookie } });
    const productId = products.data[0].id;
    const issue = (app: Harness['app']) =>
      call('POST', '/o/initech/api/licenses', { app, cookies: { svc_session: peterCookie }, body: { productId, licensee: 'Milton' } });
    expect((await asAdmin('PUT', '/platform/api/organisations/initech', { planLimit: 1 })).data.planLimit).toBe(1);
    const refused = await issue(other);
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toMatch(/limit of 1/);
    expect((await asAdmin('PUT', '/platform/api/organisations/initech', { planLimit: 0 })).data).toMatchObject({
      planLimit: 0,
      counts: { licences: 1, countingLicences: 1 },
    });
    const licences = await call('GET', '/o/initech/api/licenses', { cookies: { svc_session: peterCookie } });
    expect(licences.data.map((l: { status: string }) => l.status)).toEqual(['ACTIVE']);
    expect((await asAdmin('PUT', '/platform/api/organisations/initech', { planLimit: null })).data.planLimit).toBe(null);
    expect((await issue(other)).statusCode).toBe(201);
    await other.close();
  });

  it('sets the trial limit the next trial start obeys (DESIGN.md 18), audited; null lifts it', async () => {
    const peter = h.as({ cookie: await h.signIn('peter', 'peter password 1', 'initech') }, 'initech');
    const p = await trialProduct(h, {}, peter, 'initech');
    const set = await asAdmin('PUT', '/platform/api/organisations/initech', { trialLimit: 1 });
    expect([set.statusCode, set.data.trialLimit]).toEqual([200, 1]);
    expect((await p.start(startBody(machine('capped-a')))).statusCode).toBe(201);
    const refused = await p.start(startBody(machine('capped-b')));
    expect([refused.statusCode, refused.data.reason]).toEqual([403, 'TRIALS_OFF']);
    expect((await asAdmin('GET', '/platform/api/organisations/initech')).data).toMatchObject({ trialLimit: 1, counts: { trials: 1 } });
    expect((await asAdmin('GET', '/platform/api/activity?limit=1')).data.items[0]).toMatchObject({
      action: 'organisation.updated',
      organisation: 'initech',
      details: { trialLimit: { from: null, to: 1 } },
    });
    expect((await asAdmin('PUT', '/platform/api/organisations/initech', { trialLimit: null })).data.trialLimit).toBe(null);
    expect((await p.start(startBody(machine('capped-b')))).statusCode).toBe(201);
    const capped = await asAdmin('POST', '/platform/api/organisations', { slug: 'capped', name: 'Capped', trialLimit: 0 });
    expect([capped.statusCode, capped.data.trialLimit]).toEqual([201, 0]);
  });

  it('suspends an organisation: members and tokens refused, checks answered; resuming restores all', async () => {
    const product = await checkedProduct(h);
    const licence = await product.issue();
    const token = await h.createToken(['licenses:read']);
    const member = await h.createMember('ISSUER');

    const suspended = await asAdmin('PUT', `/platform/api/organisations/${h.slug}`, { suspended: true });
    expect(suspended.data.suspended).toBe(true);
    for (const response of [
      await h.admin('GET', '/licenses'),
      await h.as({ token })('GET', '/licenses'),
      await h.as({ cookie: member.cookie })('GET', '/products'),
    ]) {
      expect([response.statusCode, response.data.error]).toEqual([403, 'organisation suspended']);
    }
    const login = await h.anonymous('POST', '/auth/login', { username: 'admin', password: ADMIN_PASSWORD });
    expect([login.statusCode, login.data.error]).toEqual([403, 'organisation suspended']);
    const check = await product.check(checkBody(licence.licenseString, 'suspended-machine'));
    expect(check.statusCode).toBe(200);
    expect(check.data.status).toBe('ACTIVE');
    // The platform still reaches it.
    expect((await call('GET', `/o/${h.slug}/api/licenses`, { cookies: { svc_platform: supportCookie } })).statusCode).toBe(200);

    await asAdmin('PUT', `/platform/api/organisations/${h.slug}`, { suspended: false });
    expect((await h.admin('GET', '/licenses')).statusCode).toBe(200);
    expect((await h.as({ token })('GET', '/licenses')).statusCode).toBe(200);
    expect((await h.as({ cookie: member.cookie })('GET', '/products')).statusCode).toBe(200);
    const actions = (await asAdmin('GET', '/platform/api/activity?limit=2')).data.items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(['organisation.resumed', 'organisation.suspended']);
  });

  it("goes on answering a suspended organisation's download grants, feeds and portal downloads (DESIGN 8, 20)", async () => {
    const p = await releasedProduct(h);
    const release = await p.ship('1.0.0', [{ filename: 'App-1.0.0.exe', platform: 'windows', arch: 'x86_64', content: 'suspended exe' }]);
    const licence = await p.seated('suspended-downloads', { licenseeEmail: 'buyer@suspended.example' });
    const body = { license: licence.licenseString, fingerprint: fingerprint('suspended-downloads') };
    const code = (await h.admin('POST', `/customers/${licence.customerId}/portal-links`)).data.url.split('/portal/')[1];

    await asAdmin('PUT', `/platform/api/organisations/${h.slug}`, { suspended: true });
    try {
      expect((await h.admin('GET', `/releases/${release.id}`)).statusCode).toBe(403);
      const grant = await p.grant({ ...body, artifactId: release.artifacts[0].id });
      expect(grant.statusCode, grant.body).toBe(200);
      expect((await call('GET', pathOf(grant.data.url))).body).toBe('suspended exe');
      const feed = await p.feedToken(body);
      expect(feed.statusCode, feed.body).toBe(200);
      const latest = await call('GET', pathOf(`${feed.data.urls.json}?platform=windows&arch=x86_64`));
      expect([latest.statusCode, latest.data.update?.version]).toEqual([200, '1.0.0']);
      const opened = await call('POST', `/o/${h.slug}/api/portal/session`, { body: { code } });
      expect(opened.statusCode, opened.body).toBe(200);
      const cookies = { svc_portal: opened.cookies.find((c) => c.name === 'svc_portal')!.value };
      const listed = await call('GET', `/o/${h.slug}/api/portal/licenses/${licence.lid}/releases`, { cookies });
      expect(listed.data.map((r: { version: string; covered: boolean }) => [r.version, r.covered])).toEqual([['1.0.0', true]]);
      const portalGrant = await call('POST', `/o/${h.slug}/api/portal/licenses/${licence.lid}/downloads`, {
        cookies,
        body: { artifactId: release.artifacts[0].id },
      });
      expect((await call('GET', pathOf(portalGrant.data.url))).body).toBe('suspended exe');
    } finally {
      await asAdmin('PUT', `/platform/api/organisations/${h.slug}`, { suspended: false });
    }
  });

  it('lets a platform session act inside an organisation with its role, audited as platform/<username>', async () => {
    const as = (cookie: string) => (method: string, path: string, body?: unknown) =>
      call(method, `/o/${h.slug}/api${path}`, { cookies: { svc_platform: cookie }, body });
    const ops = as(adminCookie);
    const helpdesk = as(supportCookie);
    expect((await ops('GET', '/auth/me')).data).toMatchObject({
      username: 'platform/ops',
      platform: true,
      platformRole: 'PLATFORM_ADMIN',
      role: 'ORG_ADMIN',
      tenant: h.slug,
      organization: { slug: h.slug },
    });
    expect((await helpdesk('GET', '/auth/me')).data).toMatchObject({ platform: true, platformRole: 'PLATFORM_SUPPORT', role: 'VIEWER' });

    const customer = await ops('POST', '/customers', { name: 'Helped Ltd' });
    expect(customer.statusCode).toBe(201);
    expect((await helpdesk('POST', '/customers', { name: 'Not allowed' })).statusCode).toBe(403);
    expect((await helpdesk('GET', '/customers')).statusCode).toBe(200);
    const entry = (await h.admin('GET', '/dashboard/activity?action=customer.created')).data.items[0];
    expect(entry).toMatchObject({ actor: 'platform/ops', subjectId: String(customer.data.id) });

    // Nothing it does there outlives its session.
    expect((await ops('POST', '/tokens', { name: 'ops-token', scopes: ['licenses:read'] })).statusCode).toBe(403);
    expect((await ops('PUT', '/auth/password', { currentPassword: PASSWORD, newPassword: 'a new password 1' })).statusCode).toBe(403);
    expect((await ops('POST', '/users', { username: 'viaplatform', role: 'VIEWER', password: 'some password 1' })).statusCode).toBe(403);
    expect((await ops('GET', '/tokens')).statusCode).toBe(200);
  });

  it('creates platform accounts, sets passwords and deactivates through the CLI', async () => {
    const created = await runCli(
      ['platform-account', 'create', '--username', 'night-shift', '--password-stdin', '--role', 'PLATFORM_SUPPORT'],
      h.env,
      'night shift password\n',
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ username: 'night-shift', role: 'PLATFORM_SUPPORT', active: true });
    const again = await runCli(
      ['platform-account', 'create', '--username', 'night-shift', '--password', 'night shift password', '--role', 'PLATFORM_SUPPORT'],
      h.env,
    );
    expect([again.code, again.stderr.trim()]).toEqual([1, 'licensor: a platform account "night-shift" already exists']);
    const badRole = await runCli(['platform-account', 'create', '--username', 'x', '--password', 'night shift password', '--role', 'ORG_ADMIN'], h.env);
    expect([badRole.code, badRole.stderr]).toEqual([1, expect.stringMatching(/--role must be one of PLATFORM_ADMIN, PLATFORM_SUPPORT/)]);
    const cookie = await platformSignIn('night-shift', 'night shift password');

    expect((await runCli(['platform-account', 'set-password', '--username', 'night-shift', '--password', 'a new night password'], h.env)).code).toBe(0);
    expect((await call('GET', '/platform/api/auth/me', { cookies: { svc_platform: cookie } })).statusCode).toBe(401);
    const renewed = await platformSignIn('night-shift', 'a new night password');

    const off = await runCli(['platform-account', 'set-active', '--username', 'night-shift', '--active', 'false'], h.env);
    expect(JSON.parse(off.stdout)).toMatchObject({ active: false });
    expect((await call('GET', '/platform/api/auth/me', { cookies: { svc_platform: renewed } })).statusCode).toBe(401);
    expect((await call('POST', '/platform/api/auth/login', { body: { username: 'night-shift', password: 'a new night password' } })).statusCode).toBe(401);
    const unknown = await runCli(['platform-account', 'set-active', '--username', 'ghost', '--active', 'true'], h.env);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([1, 'licensor: no platform account "ghost"']);
  });
});
