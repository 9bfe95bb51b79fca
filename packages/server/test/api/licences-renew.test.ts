import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { ISO_MS, addDays, addMonths, countRows, createProduct, fingerprint, issueOk, nodeVerifies, startUtc, todayUtc } from '../licence-helpers.js';

let h: Harness;
let product: any; // OFFLINE, 12 months, grace 0
let typed: any;
let hybrid: any;

beforeAll(async () => {
  h = await startHarness();
  [product, typed, hybrid] = await Promise.all([
    createProduct(h.admin),
    createProduct(h.admin, {
      params: [
        { key: 'tier', type: 'ENUM', options: ['basic', 'pro'], defaultValue: 'basic' },
        { key: 'seats', type: 'INTEGER', required: true },
        { key: 'modules', type: 'STRING_LIST' },
      ],
    }),
    createProduct(h.admin, { licenceType: 'HYBRID', checkIntervalSeconds: 600, maxOfflineSeconds: 7200, maxMachines: 1 }),
  ]);
});
afterAll(() => h?.close());

const renew = (lid: string, body?: unknown, headers?: Record<string, string>) => h.admin('POST', `/licenses/${lid}/renew`, body, headers);
const dateOf = (iso: string) => iso.slice(0, 10);

describe('renew', () => {
  it('keeps the lid, signs a new string, and extends an early renewal from the current expiry', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Renew Ltd' });
    const response = await renew(licence.lid);
    expect(response.statusCode).toBe(200);
    const renewed = response.data;
    expect(renewed.lid).toBe(licence.lid);
    expect(renewed.claims.lid).toBe(licence.lid);
    expect(renewed.licenseString).not.toBe(licence.licenseString);
    expect(renewed.expiresAt).toBe(startUtc(addMonths(dateOf(licence.expiresAt), 12)));
    expect(renewed.claims.exp).toBe(Date.parse(renewed.expiresAt) / 1000);
    expect(renewed).toMatchObject({ status: 'ACTIVE', startsAt: null, renewedAt: expect.stringMatching(ISO_MS), customerId: licence.customerId });
    expect(Date.parse(renewed.issuedAt)).toBeGreaterThanOrEqual(Date.parse(licence.issuedAt));
    expect(renewed.claims.iat).toBe(Date.parse(renewed.issuedAt) / 1000);
    expect(nodeVerifies(renewed.licenseString, product.publicKeyPem, 'ED25519')).toBe(true);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toEqual(renewed);
    // The old term is still a live artifact until its own expiry.
    const old = await h.admin('POST', '/licenses/verify', { license: licence.licenseString });
    expect(old.data).toMatchObject({ valid: true, ledger: { known: true, lid: licence.lid } });
  });

  it('keeps superseded terms, newest first, readable and downloadable', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Versions Ltd', graceDays: 4 });
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toEqual([]);
    const token = await h.admin('POST', '/tokens', { name: 'renewer', scopes: ['licenses:write', 'licenses:read'] });
    const bot = h.as({ token: token.data.token });
    const first = await bot('POST', `/licenses/${licence.lid}/renew`, { validityMonths: 3, graceDays: 1 });
    expect(first.statusCode).toBe(200);
    expect(first.data.issuedBy).toBe('token/renewer');
    const second = await renew(licence.lid, { validityMonths: 6 });
    expect(second.statusCode).toBe(200);
    expect(second.data.issuedBy).toBe('admin');

    const list = await h.admin('GET', `/licenses/${licence.lid}/versions`);
    expect(list.statusCode).toBe(200);
    expect(list.data).toEqual([
      {
        versionNo: 2,
        issuedAt: first.data.issuedAt,
        startsAt: null,
        expiresAt: first.data.expiresAt,
        graceDays: 1,
        issuedBy: 'token/renewer',
        revokedReason: null,
      },
      {
        versionNo: 1,
        issuedAt: licence.issuedAt,
        startsAt: null,
        expiresAt: licence.expiresAt,
        graceDays: 4,
        issuedBy: 'admin',
        revokedReason: null,
      },
    ]);
    const one = await h.admin('GET', `/licenses/${licence.lid}/versions/1`);
    expect(one.statusCode).toBe(200);
    expect(one.data).toEqual({ ...list.data[1], claims: licence.claims, licenseString: licence.licenseString });
    const two = await h.admin('GET', `/licenses/${licence.lid}/versions/2`);
    expect(two.data).toEqual({ ...list.data[0], claims: first.data.claims, licenseString: first.data.licenseString });

    const download = await h.admin('GET', `/licenses/${licence.lid}/versions/1/download`);
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toMatch(/^application\/octet-stream/);
    expect(download.body).toBe(licence.licenseString);
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions/2/download`)).body).toBe(first.data.licenseString);

    expect((await h.admin('GET', `/licenses/${licence.lid}/versions/3`)).statusCode).toBe(404);
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions/3/download`)).statusCode).toBe(404);
    // The current term is not a superseded one.
    expect(second.data.expiresAt).toBe(startUtc(addMonths(dateOf(first.data.expiresAt), 6)));
    expect(second.data.graceDays).toBe(0);
  });

  it('renews an expired licence from today, ACTIVE at once', async () => {
    const licence = await issueOk(h.admin, {
      productId: product.id,
      licensee: 'Lapsed Ltd',
      issueDate: addDays(todayUtc(), -40),
      validityMonths: 1,
      graceDays: 2,
    });
    expect(licence.status).toBe('EXPIRED');
    const renewed = (await renew(licence.lid)).data;
    expect(renewed).toMatchObject({ status: 'ACTIVE', startsAt: null, expiresAt: startUtc(addMonths(todayUtc(), 12)), graceDays: 0 });
    expect(renewed.claims.grace).toBe(0);
  });

  it('renews a licence in grace from today, not from its past expiry', async () => {
    const licence = await issueOk(h.admin, {
      productId: product.id,
      licensee: 'Grace Ltd',
      issueDate: addDays(todayUtc(), -40),
      validityMonths: 1,
      graceDays: 30,
    });
    expect(licence.status).toBe('GRACE');
    const renewed = (await renew(licence.lid, { validityMonths: 1 })).data;
    expect(renewed).toMatchObject({ status: 'ACTIVE', expiresAt: startUtc(addMonths(todayUtc(), 1)) });
  });

  it('runs the new term from issueDate (or startsOn) when given', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Dated Ltd' });
    const future = addDays(todayUtc(), 30);
    const pending = (await renew(licence.lid, { issueDate: future, validityMonths: 2 })).data;
    expect(pending).toMatchObject({ status: 'PENDING', startsAt: startUtc(future), expiresAt: startUtc(addMonths(future, 2)) });
    expect(pending.claims.nbf).toBe(Date.parse(startUtc(future)) / 1000);
    const past = addDays(todayUtc(), -3);
    const backdated = (await renew(licence.lid, { startsOn: past })).data;
    expect(backdated).toMatchObject({ status: 'ACTIVE', startsAt: null, expiresAt: startUtc(addMonths(past, 12)) });
    expect(backdated.claims).not.toHaveProperty('nbf');
  });

  it('keeps a future start and extends from the current expiry when renewed without a date', async () => {
    const future = addDays(todayUtc(), 10);
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Not Yet Ltd', issueDate: future, validityMonths: 1 });
    const renewed = (await renew(licence.lid)).data;
    expect(renewed).toMatchObject({ status: 'PENDING', startsAt: startUtc(future), expiresAt: startUtc(addMonths(addMonths(future, 1), 12)) });
  });

  it('accepts an empty JSON body as no body', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Empty Body Ltd' });
    const response = await renew(licence.lid, '', { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(200);
    expect(response.data.expiresAt).toBe(startUtc(addMonths(dateOf(licence.expiresAt), 12)));
  });

  it('carries parameters over and lets body keys replace them', async () => {
    const licence = await issueOk(h.admin, { productId: typed.id, licensee: 'Params Ltd', params: { tier: 'pro', seats: 5, modules: ['a'] } });
    const first = (await renew(licence.lid, { params: { seats: 10 } })).data;
    expect(first.claims).toMatchObject({ tier: 'pro', seats: 10, modules: ['a'] });
    expect(Object.keys(first.claims).slice(-3)).toEqual(['tier', 'seats', 'modules']);
    const second = (await renew(licence.lid)).data;
    expect(second.claims).toMatchObject({ tier: 'pro', seats: 10, modules: ['a'] });
    const bad = await renew(licence.lid, { params: { seats: 'many' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.data.error).toMatch(/seats/);
    const undeclared = await renew(licence.lid, { params: { colour: 'red' } });
    expect(undeclared.statusCode).toBe(400);
    expect(undeclared.data.error).toMatch(/colour/);
  });

  it('carries licence type, activation, maxMachines and at-issue fingerprints over; chk and max follow the product', async () => {
    const [a, b] = [fingerprint('carry-a'), fingerprint('carry-b')];
    const licence = await issueOk(h.admin, { productId: hybrid.id, licensee: 'Carry Ltd', activation: 'OFFLINE', fingerprints: [a, b], maxMachines: 4 });
    expect(licence.claims).toMatchObject({ typ: 'HYBRID', act: 'OFFLINE', fp: [a, b], mm: 4, chk: 600, max: 7200 });
    expect((await h.admin('PUT', `/products/${hybrid.id}`, { checkIntervalSeconds: 900, maxOfflineSeconds: 9000 })).statusCode).toBe(200);
    const renewed = (await renew(licence.lid)).data;
    expect(renewed.claims).toMatchObject({ v: 4, typ: 'HYBRID', act: 'OFFLINE', fp: [a, b], fpn: 3, mm: 4, chk: 900, max: 9000 });
    expect(renewed).toMatchObject({
      licenceType: 'HYBRID',
      activation: 'OFFLINE',
      maxMachines: 4,
      checkEverySeconds: 900,
      checkMaxSeconds: 9000,
      seatsUsed: 2,
    });
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines).toHaveLength(2);
  });

  it('keeps a revoked licence revoked', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Revoked Ltd' });
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, { reason: 'chargeback' });
    const renewed = await renew(licence.lid);
    expect(renewed.statusCode).toBe(200);
    expect(renewed.data).toMatchObject({ status: 'REVOKED', revoked: true, revokedReason: 'chargeback' });
    expect(renewed.data.licenseString).not.toBe(licence.licenseString);
    const versions = (await h.admin('GET', `/licenses/${licence.lid}/versions`)).data;
    expect(versions).toMatchObject([{ versionNo: 1, revokedReason: 'chargeback' }]);
  });

  it('refuses to renew an archived licence (400), and renews it once restored', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Archived Ltd', issueDate: addDays(todayUtc(), -400) });
    expect((await h.admin('POST', `/licenses/${licence.lid}/archive`)).statusCode).toBe(200);
    const refused = await renew(licence.lid);
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(/archived/);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.licenseString).toBe(licence.licenseString);
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toEqual([]);
    await h.admin('POST', `/licenses/${licence.lid}/restore`);
    expect((await renew(licence.lid)).data.status).toBe('ACTIVE');
  });

  it('needs validityMonths when the product has no default validity', async () => {
    const noDefault = await createProduct(h.admin, { defaultValidityMonths: null });
    const licence = await issueOk(h.admin, { productId: noDefault.id, licensee: 'No Default Ltd', validityMonths: 1 });
    const refused = await renew(licence.lid);
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(/validityMonths/);
    const renewed = await renew(licence.lid, { validityMonths: 2 });
    expect(renewed.data.expiresAt).toBe(startUtc(addMonths(dateOf(licence.expiresAt), 2)));
  });

  it('renews to a perpetual term with validityMonths 0', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Forever Ltd' });
    const renewed = (await renew(licence.lid, { validityMonths: 0 })).data;
    expect(renewed.expiresAt).toBeNull();
    expect(renewed.claims).not.toHaveProperty('exp');
  });

  it.each([
    [{ licenceType: 'ONLINE' }],
    [{ activation: 'OFFLINE' }],
    [{ maxMachines: 2 }],
    [{ notes: 'x' }],
    [{ customerId: 1 }],
    [{ fingerprint: 'SVC1.x.y' }],
    [{ productId: 1 }],
    [{ issueDate: '2026-02-30' }],
    [{ startsOn: 'tomorrow' }],
    [{ issueDate: '2027-01-01', startsOn: '2027-01-01' }],
    [{ validityMonths: -1 }],
    [{ graceDays: 'ten' }],
  ])('refuses the body %j with 400 and changes nothing', async (body) => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Strict Ltd' });
    const response = await renew(licence.lid, body);
    expect(response.statusCode).toBe(400);
    expect(response.data).toEqual({ error: expect.any(String) });
    const after = (await h.admin('GET', `/licenses/${licence.lid}`)).data;
    expect(after.licenseString).toBe(licence.licenseString);
    expect(after.renewedAt).toBeNull();
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toEqual([]);
  });

  it('answers 404 for an unknown licence', async () => {
    const response = await renew('00000000-0000-4000-8000-000000000000');
    expect(response.statusCode).toBe(404);
    expect(response.data).toEqual({ error: expect.any(String) });
  });

  it('records each renewal in the licence activity', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Audited Ltd' });
    await renew(licence.lid);
    const activity = (await h.admin('GET', `/licenses/${licence.lid}/activity`)).data;
    expect(activity.items.map((e: { action: string }) => e.action)).toEqual(['licence.renewed', 'licence.issued']);
    expect(activity.items[0]).toMatchObject({ actor: 'admin', lid: licence.lid, subjectType: 'licence', subjectId: licence.lid });
  });
});

describe('renew with an Idempotency-Key', () => {
  it('answers a repeat with the first answer and renews once', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Idem Renew Ltd' });
    const key = { 'idempotency-key': `renew-${licence.lid}` };
    const first = await renew(licence.lid, { validityMonths: 1 }, key);
    expect(first.statusCode).toBe(200);
    const repeat = await renew(licence.lid, { validityMonths: 1 }, key);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.data).toEqual(first.data);
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toHaveLength(1);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.expiresAt).toBe(first.data.expiresAt);
    const different = await renew(licence.lid, { validityMonths: 2 }, key);
    expect(different.statusCode).toBe(409);
    expect(different.data).toEqual({ error: expect.any(String) });
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toHaveLength(1);
    // A renewal without the key is a new renewal.
    expect((await renew(licence.lid, { validityMonths: 1 })).statusCode).toBe(200);
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toHaveLength(2);
    expect(await countRows(h, 'licence_versions')).toBeGreaterThanOrEqual(2);
  });
});
