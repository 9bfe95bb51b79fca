// Issue 34: issue and renew take the organisation, the API token and the product from caches that
// their transaction confirms. Each change below is made through ANOTHER app over the same
// database, whose caches the first app never hears from; the first app's next request must see it.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { startHarness, type Caller, type Harness } from '../harness.js';
import { createProduct, fingerprint, issueOk } from '../licence-helpers.js';

let h: Harness;
let other: FastifyInstance;
let platformCookie: string;
let productId: number;
let token: string;
let call: Caller;
let seq = 0;

/** A request to the other app, as the organisation's administrator (or the platform). */
const elsewhere = (method: string, url: string, body?: unknown, cookies: Record<string, string> = { svc_session: adminCookie }) =>
  h.request(method, url.startsWith('/platform') ? url : `/o/${h.slug}/api${url}`, { app: other, body, cookies });
let adminCookie: string;
const platform = (body: unknown) => elsewhere('PUT', `/platform/api/organisations/${h.slug}`, body, { svc_platform: platformCookie });

const issue = () => call('POST', '/licenses', { productId, customer: { name: `Customer ${++seq}`, email: `c${seq}@example.com` } });

beforeAll(async () => {
  h = await startHarness();
  other = await buildApp({ config: h.config, database: h.database, masterKey: loadMasterKey(h.config, () => {}), logger: false, deliverWebhooks: false });
  await other.ready();
  await createPlatformAccount(h.database, { username: 'ops', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
  const login = await h.request('POST', '/platform/api/auth/login', { app: other, body: { username: 'ops', password: 'platform password 1' } });
  platformCookie = login.cookies.find((c) => c.name === 'svc_platform')!.value;
  adminCookie = await h.signIn('admin', 'correct horse battery staple');
});
afterAll(async () => {
  await other?.close();
  await h?.close();
});

beforeEach(async () => {
  productId = (await createProduct(h.admin)).id;
  token = await h.createToken(['licenses:write', 'licenses:read', 'customers:write']);
  call = h.as({ token });
  // Twice: the second issue is served from the first app's caches.
  for (let i = 0; i < 2; i++) expect((await issue()).statusCode).toBe(201);
});

describe('issue and renew on cached callers and products', () => {
  it('refuse a token revoked on another instance (401)', async () => {
    const id = token.split('_')[1]!;
    expect((await elsewhere('POST', `/tokens/${id}/revoke`)).statusCode).toBe(200);
    const refused = await issue();
    expect([refused.statusCode, refused.data.error]).toEqual([401, 'this API token has been revoked']);
  });

  it('refuse a token deleted on another instance (401), renewals too', async () => {
    const lid = (await issueOk(call, { productId, licensee: 'Renewed' })).lid;
    const id = token.split('_')[1]!;
    expect((await elsewhere('DELETE', `/tokens/${id}`)).statusCode).toBe(204);
    const refused = await call('POST', `/licenses/${lid}/renew`, {});
    expect([refused.statusCode, refused.data.error]).toEqual([401, 'unknown API token']);
  });

  it('refuse an organisation suspended on another instance (403), and issue again once resumed there', async () => {
    expect((await platform({ suspended: true })).statusCode).toBe(200);
    const refused = await issue();
    expect([refused.statusCode, refused.data.error]).toEqual([403, 'organisation suspended']);
    expect((await platform({ suspended: false })).statusCode).toBe(200);
    expect((await issue()).statusCode).toBe(201);
  });

  it('hold to a plan limit set on another instance (403)', async () => {
    const used = (await call('GET', '/licenses/page?limit=1')).data.total;
    expect((await platform({ planLimit: used })).statusCode).toBe(200);
    try {
      const refused = await issue();
      expect(refused.statusCode).toBe(403);
      expect(refused.data.error).toMatch(/plan's limit/);
    } finally {
      await platform({ planLimit: null });
    }
  });

  it('refuse a product deactivated on another instance (400), and issue again once active there', async () => {
    const lid = (await issueOk(call, { productId, licensee: 'Renewed' })).lid;
    expect((await elsewhere('PUT', `/products/${productId}`, { active: false })).statusCode).toBe(200);
    const refused = await issue();
    expect([refused.statusCode, refused.data.error]).toEqual([400, 'Product ID (productId): the product is inactive']);
    expect((await elsewhere('PUT', `/products/${productId}`, { active: true })).statusCode).toBe(200);
    expect((await issue()).statusCode).toBe(201);
    // A renewal signs with the product as it is now: its grace days changed elsewhere.
    expect((await elsewhere('PUT', `/products/${productId}`, { defaultGraceDays: 9 })).statusCode).toBe(200);
    expect((await call('POST', `/licenses/${lid}/renew`, {})).data.graceDays).toBe(9);
  });

  it('answer an issue with the licence as it reads back, byte for byte', async () => {
    const fingerprinted = await createProduct(h.admin, { licenceType: 'OFFLINE', allowedLicenceTypes: ['OFFLINE'] });
    for (const body of [
      { productId, licensee: 'Plain' },
      { productId: fingerprinted.id, licensee: 'Bound', fingerprint: fingerprint('answer') },
    ]) {
      const issued = await call('POST', '/licenses', body);
      expect(issued.statusCode, issued.body).toBe(201);
      expect(issued.body).toBe((await call('GET', `/licenses/${issued.data.lid}`)).body);
    }
  });

  it('sign the name a customer was given on another instance', async () => {
    const first = await issueOk(call, { productId, customer: { name: 'Old Name', email: 'moved@example.com' } });
    expect((await elsewhere('PUT', `/customers/${first.customerId}`, { name: 'New Name', email: 'moved@example.com' })).statusCode).toBe(200);
    const next = await issueOk(call, { productId, customer: { name: 'Old Name', email: 'moved@example.com' } });
    expect([next.customerId, next.licensee]).toEqual([first.customerId, 'New Name']);
    expect(JSON.parse(Buffer.from(next.licenseString.split('.')[0], 'base64url').toString()).lic).toBe('New Name');
    // Renamed back: the name remembered for it is not signed either.
    expect((await elsewhere('PUT', `/customers/${first.customerId}`, { name: 'Old Name', email: 'moved@example.com' })).statusCode).toBe(200);
    expect((await issueOk(call, { productId, customer: { name: 'Other', email: 'moved@example.com' } })).licensee).toBe('Old Name');
  });
});
