import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBody, checkedProduct, type CheckedProduct } from '../check-helpers.js';
import { freshDatabaseEnv, startHarness, type Harness } from '../harness.js';
import { fingerprint } from '../licence-helpers.js';
import { startServe, stopServe } from '../cli.js';

let h: Harness;
/** The organisation's API, with the cookies and headers given. */
const call = (method: string, path: string, options?: Parameters<Harness['request']>[2]) => h.request(method, `/o/${h.slug}/api${path}`, options);
let product: CheckedProduct;
let customerId: number;
let licence: any;

async function newLink(id = customerId): Promise<string> {
  const created = await h.admin('POST', `/customers/${id}/portal-links`);
  expect(created.statusCode).toBe(201);
  return created.data.url.split('/portal/')[1];
}

async function openPortal(code: string): Promise<string> {
  const opened = await call('POST', '/portal/session', { body: { code } });
  expect(opened.statusCode, opened.body).toBe(200);
  return opened.cookies.find((c) => c.name === 'svc_portal')!.value;
}

beforeAll(async () => {
  h = await startHarness();
  product = await checkedProduct(h, { selfReleaseLimit: 1 });
  licence = await product.issue({ licensee: 'Portal Customer', licenseeEmail: 'it@portal.example', maxMachines: 3, notes: 'internal: discount 40%' });
  customerId = licence.customerId;
  for (const machine of ['old-laptop', 'desk']) expect((await product.check(checkBody(licence.licenseString, machine))).data.valid).toBe(true);
});
afterAll(() => h?.close());

describe('portal links (DESIGN 12)', () => {
  it('gives a single-use link for 24 hours, listed without its code, used up only by the session POST', async () => {
    const created = await h.admin('POST', `/customers/${customerId}/portal-links`);
    expect(created.data).toEqual({
      url: expect.stringMatching(new RegExp(`^${h.config.publicUrl}/o/${h.slug}/portal/[0-9a-f]{64}$`)),
      expiresAt: expect.any(String),
    });
    expect(Date.parse(created.data.expiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const code = created.data.url.split('/portal/')[1];
    // Following the link (a mail scanner) serves the page and uses nothing up.
    const page = await h.app.inject({ method: 'GET', url: `/o/${h.slug}/portal/${code}` });
    expect(page.statusCode).toBe(200);
    const [listed] = (await h.admin('GET', `/customers/${customerId}/portal-links`)).data;
    expect(listed).toEqual({
      id: expect.any(Number),
      createdAt: expect.any(String),
      createdBy: 'admin',
      expiresAt: created.data.expiresAt,
      usedAt: null,
      revokedAt: null,
    });
    expect(JSON.stringify(listed)).not.toContain(code);

    const opened = await call('POST', '/portal/session', { body: { code } });
    expect(opened.data).toEqual({ customer: { name: 'Portal Customer' }, organisation: { name: expect.any(String) } });
    expect(opened.cookies.find((c) => c.name === 'svc_portal')).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: `/o/${h.slug}/` });
    const again = await call('POST', '/portal/session', { body: { code } });
    const unknown = await call('POST', '/portal/session', { body: { code: 'f'.repeat(64) } });
    expect([again.statusCode, unknown.statusCode]).toEqual([401, 401]);
    expect(again.data).toEqual(unknown.data);
    expect((await h.admin('GET', `/customers/${customerId}/portal-links`)).data[0].usedAt).not.toBeNull();
  });

  it('refuses an expired link, and revoking a link ends the sessions it opened', async () => {
    const expired = await newLink();
    await h.database.db
      .updateTable('portal_links')
      .set({ expires_at: Date.now() - 1 })
      .where('used_at', 'is', null)
      .execute();
    expect((await call('POST', '/portal/session', { body: { code: expired } })).statusCode).toBe(401);

    const cookie = await openPortal(await newLink());
    expect((await call('GET', '/portal/licenses', { cookies: { svc_portal: cookie } })).statusCode).toBe(200);
    const [link] = (await h.admin('GET', `/customers/${customerId}/portal-links`)).data;
    expect((await h.admin('DELETE', `/customers/${customerId}/portal-links/${link.id}`)).statusCode).toBe(204);
    expect((await call('GET', '/portal/licenses', { cookies: { svc_portal: cookie } })).statusCode).toBe(401);
    expect((await h.admin('GET', `/customers/${customerId}/portal-links`)).data[0].revokedAt).not.toBeNull();
  });

  it('keeps the portal and the Management API apart: each refuses the other’s credential with 401', async () => {
    const cookie = await openPortal(await newLink());
    const token = await h.createToken(['licenses:read']);
    const adminCookie = await h.signIn('admin', 'correct horse battery staple');
    for (const path of ['/portal/me', '/portal/licenses', `/portal/licenses/${licence.lid}`, `/portal/licenses/${licence.lid}/download`]) {
      expect((await call('GET', path)).statusCode, `${path} without credential`).toBe(401);
      expect((await call('GET', path, { headers: { authorization: `Bearer ${token}` } })).statusCode, `${path} with a token`).toBe(401);
      expect((await call('GET', path, { cookies: { svc_session: adminCookie } })).statusCode, `${path} with a session`).toBe(401);
    }
    for (const path of ['/licenses', '/customers', '/auth/me'])
      expect((await call('GET', path, { cookies: { svc_portal: cookie } })).statusCode, path).toBe(401);
    const foreign = await call('POST', `/portal/licenses/${licence.lid}/release`, {
      cookies: { svc_portal: cookie },
      body: { machineId: 1 },
      headers: { origin: 'https://evil.example' },
    });
    expect(foreign.statusCode).toBe(403);
  });
});

describe('the customer portal', () => {
  it('shows the customer’s licences with customer-facing fields only, and never another customer’s', async () => {
    const cookie = await openPortal(await newLink());
    const list = await call('GET', '/portal/licenses', { cookies: { svc_portal: cookie } });
    expect(list.data).toEqual([
      {
        lid: licence.lid,
        productName: expect.any(String),
        licenceType: 'ONLINE',
        status: 'ACTIVE',
        startsAt: null,
        expiresAt: licence.expiresAt,
        graceEndsAt: expect.any(String),
        maxMachines: 3,
        seatsUsed: 2,
      },
    ]);
    const detail = await call('GET', `/portal/licenses/${licence.lid}`, { cookies: { svc_portal: cookie } });
    expect(detail.data).toMatchObject({
      lid: licence.lid,
      releasesLeft: 1,
      airGapActivation: false,
      usage: [],
      machines: [
        { live: true, atIssue: false },
        { live: true, atIssue: false },
      ],
    });
    // The portal offers air-gapped activation only where the product allows it.
    expect((await h.admin('PUT', `/products/${product.id}`, { airGapActivation: true })).statusCode).toBe(200);
    expect((await call('GET', `/portal/licenses/${licence.lid}`, { cookies: { svc_portal: cookie } })).data.airGapActivation).toBe(true);
    expect((await h.admin('PUT', `/products/${product.id}`, { airGapActivation: false })).statusCode).toBe(200);
    expect(JSON.stringify(detail.data)).not.toMatch(/discount|parts|issuedBy|notes/);
    const download = await call('GET', `/portal/licenses/${licence.lid}/download`, { cookies: { svc_portal: cookie } });
    expect([download.statusCode, download.body]).toEqual([200, licence.licenseString]);

    const other = await product.issue({ licensee: 'Someone Else' });
    expect((await call('GET', `/portal/licenses/${other.lid}`, { cookies: { svc_portal: cookie } })).statusCode).toBe(404);
    expect((await call('GET', `/portal/licenses/${other.lid}/download`, { cookies: { svc_portal: cookie } })).statusCode).toBe(404);
    expect((await call('POST', `/portal/licenses/${other.lid}/release`, { cookies: { svc_portal: cookie }, body: { machineId: 1 } })).statusCode).toBe(404);
  });

  it('releases a machine within the limit, audited as customer/<id>, then refuses past it', async () => {
    const cookie = await openPortal(await newLink());
    const detail = (await call('GET', `/portal/licenses/${licence.lid}`, { cookies: { svc_portal: cookie } })).data;
    const [first, second] = detail.machines;
    const released = await call('POST', `/portal/licenses/${licence.lid}/release`, { cookies: { svc_portal: cookie }, body: { machineId: first.id } });
    expect(released.statusCode).toBe(200);
    expect(released.data).toMatchObject({ seatsUsed: 1, releasesLeft: 0 });
    const over = await call('POST', `/portal/licenses/${licence.lid}/release`, { cookies: { svc_portal: cookie }, body: { machineId: second.id } });
    expect([over.statusCode, over.data.error]).toEqual([403, 'self-service release limit reached']);
    // The application's own release counts against the same limit: the machine still seated is refused.
    const selves = await Promise.all(
      ['desk', 'old-laptop'].map((m) =>
        h.as({ token: product.token })('POST', `/public/license/${product.checkId}/release`, {
          license: licence.licenseString,
          fingerprint: fingerprint(m),
          nonce: 'n'.repeat(20),
        }),
      ),
    );
    expect(selves.map((r) => (r.statusCode === 200 ? r.data.reason : r.statusCode)).sort()).toEqual([403, 'NO_SEAT']);
    const activity = (await h.admin('GET', `/licenses/${licence.lid}/activity?action=machine.released`)).data.items;
    expect(activity).toMatchObject([{ actor: `customer/${customerId}` }]);
    expect((await call('POST', `/portal/licenses/${licence.lid}/release`, { cookies: { svc_portal: cookie }, body: { machineId: first.id } })).statusCode).toBe(
      400,
    );
  });

  it('never writes a portal code into a log line', async () => {
    const { env, dispose } = await freshDatabaseEnv();
    const served = await startServe({ ...env, LOG_LEVEL: 'info', LICENSOR_BOOTSTRAP_PASSWORD: 'a bootstrap password' });
    try {
      const code = 'a1'.repeat(32);
      expect((await fetch(`${served.url}/o/default/portal/${code}`)).status).toBe(200);
      await fetch(`${served.url}/o/default/api/portal/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code }),
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(served.output()).toContain('/o/default/portal/<code>');
      expect(served.output()).not.toContain(code);
    } finally {
      await stopServe(served.child);
      await dispose();
    }
  });

  it('ends the portal session on logout', async () => {
    const cookie = await openPortal(await newLink());
    expect((await call('POST', '/portal/auth/logout', { cookies: { svc_portal: cookie } })).statusCode).toBe(204);
    expect((await call('GET', '/portal/me', { cookies: { svc_portal: cookie } })).statusCode).toBe(401);
  });
});
