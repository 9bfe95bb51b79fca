import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint, signLicence } from '@licensor/protocol';
import { injectServed, startHarness, type Harness } from '../harness.js';
import { addMonths, fingerprint, insertCheckBinding, todayUtc } from '../licence-helpers.js';
import { checkBody, checkedProduct, nonce, type CheckedProduct } from '../check-helpers.js';

let h: Harness;
let p: CheckedProduct;
let licence: any;

beforeAll(async () => {
  h = await startHarness();
  p = await checkedProduct(h, { licenceFetchEnabled: true });
  licence = await p.issue();
});
afterAll(() => h?.close());

const url = (checkId: string, slug = h.slug, action = 'check') => `//o/${slug}/api/public/license/${checkId}/${action}`;
const send = (path: string, headers: Record<string, string>, payload: string) =>
  injectServed(h.app, { method: 'POST', url: path.slice(1), headers, payload }).then((r) => ({ status: r.statusCode, data: JSON.parse(r.body) }));
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = { 'content-type': 'application/json' };
const text = { 'content-type': 'text/plain' };

describe('refusals, in the order of DESIGN.md 5', () => {
  const body = () => JSON.stringify(checkBody(licence.licenseString, 'refusals'));

  it('404 for an unknown organisation, whatever else is wrong', async () => {
    const r = await send(url(p.checkId, 'no-such-org'), { ...text }, 'x');
    expect(r).toEqual({ status: 404, data: { error: expect.any(String) } });
  });

  it('401 for a missing, malformed or wrong token, an unknown checkId, a token never set, or a management token; before 415', async () => {
    const [, , secret] = /^svcc_([a-z0-9]+)_([0-9a-f]{64})$/.exec(p.token)!;
    const other = await checkedProduct(h);
    const unset = (await h.admin('POST', '/products', { productKey: `unset-${randomUUID()}`, name: 'No token yet' })).data;
    const management = await h.createToken(['licenses:read', 'products:read']);
    const cases: Array<[string, Record<string, string>]> = [
      [p.checkId, {}],
      [p.checkId, { authorization: p.token }],
      [p.checkId, bearer(`svcc_${p.checkId}_${'0'.repeat(64)}`)],
      [p.checkId, bearer(other.token)],
      ['unknownid0000', bearer(`svcc_unknownid0000_${secret}`)],
      [unset.checkId, bearer(`svcc_${unset.checkId}_${secret}`)],
      [p.checkId, bearer(management)],
    ];
    for (const [checkId, auth] of cases) {
      for (const type of [json, text]) {
        const r = await send(url(checkId), { ...auth, ...type }, body());
        expect(r, JSON.stringify(auth)).toEqual({ status: 401, data: { error: expect.any(String) } });
      }
    }
    // The session of an administrator is no check credential either.
    expect((await h.admin('POST', `/public/license/${p.checkId}/check`, checkBody(licence.licenseString, 'x'))).statusCode).toBe(401);
  });

  it('403 for an inactive product, before 415', async () => {
    const own = await checkedProduct(h);
    const issued = await own.issue();
    expect((await h.admin('PUT', `/products/${own.id}`, { active: false })).statusCode).toBe(200);
    for (const type of [json, text]) {
      const r = await send(url(own.checkId), { ...bearer(own.token), ...type }, JSON.stringify(checkBody(issued.licenseString, 'inactive')));
      expect(r).toEqual({ status: 403, data: { error: expect.any(String) } });
    }
  });

  it('415 for a body that is not application/json', async () => {
    for (const headers of [text, {}, { 'content-type': 'application/x-www-form-urlencoded' }]) {
      const r = await send(url(p.checkId), { ...bearer(p.token), ...headers }, body());
      expect(r).toEqual({ status: 415, data: { error: expect.any(String) } });
    }
  });

  it('400 for a malformed body, nonce or fingerprint, naming the field', async () => {
    const good = checkBody(licence.licenseString, 'bad-bodies');
    const cases: Array<[string, RegExp]> = [
      ['', /^Licence \(license\) is required$/],
      ['{not json', /JSON/],
      ['[]', /^The body must be a JSON object$/],
      [JSON.stringify({ ...good, nonce: undefined }), /^Nonce \(nonce\) is required$/],
      [JSON.stringify({ ...good, nonce: 'short' }), /^Nonce \(nonce\): letters, digits, dash and underscore, 16 to 128 characters$/],
      [JSON.stringify({ ...good, nonce: `${'a'.repeat(15)}!` }), /^Nonce \(nonce\): /],
      [JSON.stringify({ ...good, nonce: 'a'.repeat(129) }), /^Nonce \(nonce\): /],
      [JSON.stringify({ ...good, license: 42 }), /^Licence \(license\): /],
      [JSON.stringify({ ...good, fingerprint: 'SVC1.abc.def' }), /fingerprint/],
      [JSON.stringify({ ...good, fingerprint: `${fingerprint('x').slice(0, -1)}0` }), /fingerprint/],
    ];
    for (const [payload, message] of cases) {
      const r = await send(url(p.checkId), { ...bearer(p.token), ...json }, payload);
      expect(r.status, payload).toBe(400);
      expect(r.data.error).toMatch(message);
    }
    // 128 characters is still a nonce.
    expect((await p.check({ ...good, nonce: 'a'.repeat(128) })).statusCode).toBe(200);
  });

  it('400 for a licence that does not verify with this product’s keys, before any lookup', async () => {
    const [payload, signature] = licence.licenseString.split('.');
    const tampered = `${payload}.${signature.slice(0, -4)}AAAA`;
    const foreign = (await (await checkedProduct(h)).issue()).licenseString;
    for (const license of ['not a licence', tampered, foreign]) {
      const r = await p.check({ license, fingerprint: fingerprint('v'), nonce: nonce() });
      expect(r.statusCode).toBe(400);
      expect(r.data.error).toMatch(/license/);
    }
  });

  it('400 for a licence of another organisation or product even when its signature verifies, and for an OFFLINE licence', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' });
    const a = await checkedProduct(h, { privateKeyPem: pem });
    const b = await checkedProduct(h, { privateKeyPem: pem });
    const ofA = await a.issue();
    const r = await b.check(checkBody(ofA.licenseString, 'shared-key'));
    expect(r.statusCode).toBe(400);
    expect(r.data.error).toMatch(/product/);
    const productKey = (await h.admin('GET', `/products/${a.id}`)).data.productKey;
    const now = Math.floor(Date.now() / 1000);
    const otherOrg = signLicence({ lid: randomUUID(), prd: productKey, org: 'someone-else', typ: 'ONLINE', iat: now, grace: 0, mm: 1 }, privateKey);
    const o = await a.check(checkBody(otherOrg, 'other-org'));
    expect(o.statusCode).toBe(400);
    expect(o.data.error).toMatch(/organisation/);
    const offline = await a.issue({ licenceType: 'OFFLINE' });
    const off = await a.check(checkBody(offline.licenseString, 'offline'));
    expect(off.statusCode).toBe(400);
    expect(off.data.error).toMatch(/OFFLINE/);
  });
});

describe('fetch', () => {
  it('404 while licence fetch is off, after 401 and 403', async () => {
    const off = await checkedProduct(h);
    const issued = await off.issue();
    const fetchBody = { license: issued.licenseString, fingerprint: fingerprint('f') };
    expect((await off.fetch(fetchBody)).statusCode).toBe(404);
    expect((await send(url(off.checkId, h.slug, 'fetch'), { ...bearer(p.token), ...json }, JSON.stringify(fetchBody))).status).toBe(401);
    await h.admin('PUT', `/products/${off.id}`, { active: false });
    expect((await off.fetch(fetchBody)).statusCode).toBe(403);
  });

  it('answers the current string to a bound machine, for a current or superseded term; never binds', async () => {
    const issued = await p.issue();
    const fp = fingerprint('fetcher');
    const notBound = await p.fetch({ license: issued.licenseString, fingerprint: fp });
    expect(notBound.statusCode).toBe(403);
    expect(notBound.data.error).toMatch(/not bound/);
    expect((await p.check(checkBody(issued.licenseString, 'fetcher'))).data.valid).toBe(true);
    expect((await p.fetch({ license: issued.licenseString, fingerprint: fp })).data).toEqual({ license: issued.licenseString });
    const renewed = (await h.admin('POST', `/licenses/${issued.lid}/renew`, {})).data;
    expect((await p.fetch({ license: issued.licenseString, fingerprint: fp })).data).toEqual({ license: renewed.licenseString });
    expect((await p.fetch({ license: renewed.licenseString, fingerprint: fp })).data).toEqual({ license: renewed.licenseString });
    // No trust on first use: another machine is refused, and binds nothing.
    const stranger = await p.fetch({ license: issued.licenseString, fingerprint: fingerprint('stranger') });
    expect(stranger.statusCode).toBe(403);
    expect(stranger.data.error).toMatch(/matches no machine/);
    expect((await h.admin('GET', `/licenses/${issued.lid}`)).data.seatsUsed).toBe(1);
  });

  it('refuses a revoked licence (403), an unknown lid (404), a string that does not verify (400), a term past its grace end (403)', async () => {
    const issued = await p.issue();
    await p.check(checkBody(issued.licenseString, 'f2'));
    const fp = fingerprint('f2');
    const [payload, signature] = issued.licenseString.split('.');
    const bad = await p.fetch({ license: `${payload}.${signature.slice(0, -4)}AAAA`, fingerprint: fp });
    expect(bad.statusCode).toBe(400);
    await h.admin('POST', `/licenses/${issued.lid}/revoke`, {});
    expect((await p.fetch({ license: issued.licenseString, fingerprint: fp })).statusCode).toBe(403);

    const { privateKey } = generateKeyPairSync('ed25519');
    const own = await checkedProduct(h, { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }), licenceFetchEnabled: true });
    const productKey = (await h.admin('GET', `/products/${own.id}`)).data.productKey;
    const now = Math.floor(Date.now() / 1000);
    const unknown = signLicence({ lid: randomUUID(), prd: productKey, org: h.slug, typ: 'ONLINE', iat: now, grace: 0, mm: 1 }, privateKey);
    const missing = await own.fetch({ license: unknown, fingerprint: fp });
    expect(missing.statusCode).toBe(404);
    expect(missing.data.error).toBeTruthy();

    const expired = await own.issue({ issueDate: addMonths(todayUtc(), -3), validityMonths: 1 });
    await insertCheckBinding(h, expired.lid, 'old-box');
    const past = await own.fetch({ license: expired.licenseString, fingerprint: fingerprint('old-box') });
    expect(past.statusCode).toBe(403);
    expect(past.data.error).toMatch(/grace/);
  });
});

describe('OpenAPI', () => {
  it('describes both endpoints with the check token scheme and every status code', async () => {
    const doc = (await h.anonymous('GET', '//openapi.json')).data;
    expect(doc.components.securitySchemes.checkToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const action of ['check', 'fetch']) {
      const operation = doc.paths[`/public/license/{checkId}/${action}`].post;
      expect(operation.security).toEqual([{ checkToken: [] }]);
      for (const code of ['200', '400', '401', '403', '404', '415', '429']) expect(operation.responses[code], `${action} ${code}`).toBeDefined();
      expect(operation.requestBody.content['application/json'].schema.required).toContain('license');
    }
  });
});

describe('a product changed while its checks are cached (DESIGN.md 11)', () => {
  it('answers the next check on the product as it is now: token, activity, keys, fetch and fingerprint rule', async () => {
    const own = await checkedProduct(h);
    const first = await own.issue({ maxMachines: 2 });
    const check = (license = first.licenseString, machine: string | number = 'cached', token = own.token) =>
      send(url(own.checkId), { ...bearer(token), ...json }, JSON.stringify(checkBody(license, machine)));
    const fetchWith = (token: string) =>
      send(
        url(own.checkId, h.slug, 'fetch'),
        { ...bearer(token), ...json },
        JSON.stringify({ license: first.licenseString, fingerprint: fingerprint('cached') }),
      );
    expect((await check()).data.valid).toBe(true);

    const rotated = (await h.admin('POST', `/products/${own.id}/check-token`)).data.checkToken;
    expect(await check()).toEqual({ status: 401, data: { error: 'unknown or replaced check token' } });
    expect((await check(first.licenseString, 'cached', rotated)).data.valid).toBe(true);

    await h.admin('PUT', `/products/${own.id}`, { active: false });
    expect(await check(first.licenseString, 'cached', rotated)).toEqual({ status: 403, data: { error: 'the product is inactive' } });
    await h.admin('PUT', `/products/${own.id}`, { active: true });
    expect((await check(first.licenseString, 'cached', rotated)).data.valid).toBe(true);

    // A licence signed by a key made after the product was cached.
    expect((await h.admin('PUT', `/products/${own.id}`, { regenerateKey: true })).statusCode).toBe(200);
    const second = await issueWith(own.id);
    expect((await check(second.licenseString, 'new-key', rotated)).data).toMatchObject({ valid: true, lid: second.lid });

    expect((await fetchWith(rotated)).status).toBe(404);
    await h.admin('PUT', `/products/${own.id}`, { licenceFetchEnabled: true });
    expect(await fetchWith(rotated)).toEqual({ status: 200, data: { license: first.licenseString } });

    // Two equal components now recognise the seat, where three were needed.
    await h.admin('PUT', `/products/${own.id}`, { fingerprintNeed: 2 });
    const near = buildFingerprint({ machine: 'machine-cached', host: 'host-cached', mac: 'other', cpu: 'other', disk: 'other' });
    const recognised = await send(
      url(own.checkId),
      { ...bearer(rotated), ...json },
      JSON.stringify({ license: first.licenseString, fingerprint: near, nonce: nonce() }),
    );
    expect(recognised.data).toMatchObject({ valid: true });
    expect((await h.admin('GET', `/licenses/${first.lid}`)).data.seatsUsed).toBe(1);
  });
});

const issueWith = async (productId: number) => (await h.admin('POST', '/licenses', { productId, licensee: 'Cache Ltd', licenceType: 'ONLINE' })).data;
