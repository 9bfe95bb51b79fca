import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { javaAvailable, javaVerify } from '../../../protocol/test/java-verifier.js';
import { startHarness, type Harness } from '../harness.js';
import { addDays, createProduct, fingerprint, insertCheckBinding, issueOk, nodeVerifies, todayUtc } from '../licence-helpers.js';

let h: Harness;
let product: any;

beforeAll(async () => {
  h = await startHarness();
  product = await createProduct(h.admin, { defaultGraceDays: 10 });
});
afterAll(() => h?.close());

const verify = (license: string, caller = h.admin) => caller('POST', '/licenses/verify', { license });
const B64U = /^[A-Za-z0-9_-]+$/;

describe('verify', () => {
  it('reports a valid licence with its product, signature, expiry and ledger', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, customer: { name: 'Verify Ltd', email: 'v@verify.example' } });
    const response = await verify(licence.licenseString);
    expect(response.statusCode).toBe(200);
    expect(response.data).toEqual({
      valid: true,
      whitespaceRemoved: false,
      reason: null,
      claims: licence.claims,
      product: { id: product.id, productKey: product.productKey, name: product.name },
      signature: 'VALID',
      signatureAlgorithm: 'Ed25519',
      expiry: {
        expiresAt: licence.expiresAt,
        graceEndsAt: new Date(Date.parse(licence.expiresAt) + 10 * 86_400_000).toISOString(),
        status: 'ACTIVE',
      },
      ledger: {
        known: true,
        lid: licence.lid,
        licensee: 'Verify Ltd',
        customerId: licence.customerId,
        status: 'ACTIVE',
        revoked: false,
        archived: false,
        superseded: false,
      },
    });
    // Verify binds nothing and changes nothing.
    expect((await h.admin('GET', `/licenses/${licence.lid}/machines`)).data).toEqual([]);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toEqual(licence);
  });

  it.each([
    ['garbage', 'not a licence'],
    ['empty', ''],
    ['three parts', 'a.b.c'],
    ['no signature', 'eyJ2IjozfQ.'],
    ['padding', 'eyJ2IjozfQ==.AAAA'],
    ['JSON that is not a licence', `${Buffer.from('{"v":3}').toString('base64url')}.AAAA`],
    ['not JSON', `${Buffer.from('hello').toString('base64url')}.AAAA`],
  ])('reports MALFORMED for %s', async (_name, license) => {
    const response = await verify(license);
    expect(response.statusCode).toBe(200);
    expect(response.data).toMatchObject({ valid: false, reason: 'MALFORMED', signature: 'UNCHECKED', product: null, ledger: { known: false } });
  });

  it('removes the spaces and line breaks an email client wraps a string in, and says so', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Wrapped Ltd' });
    const wrapped = `  ${licence.licenseString.match(/.{1,40}/g)!.join('\r\n')}\t\n`;
    expect((await verify(wrapped)).data).toMatchObject({
      valid: true,
      whitespaceRemoved: true,
      signature: 'VALID',
      ledger: { known: true, lid: licence.lid, superseded: false },
    });
    expect((await verify(licence.licenseString.replace('.', ' .\v\f'))).data).toMatchObject({ valid: true, whitespaceRemoved: true });
    // Only ASCII whitespace: a no-break space is not something a signed string could have lost.
    expect((await verify(`${licence.licenseString}\u00a0`)).data).toMatchObject({ valid: false, reason: 'MALFORMED', whitespaceRemoved: false });
    expect((await verify(' \n ')).data).toMatchObject({ valid: false, reason: 'MALFORMED', whitespaceRemoved: true });
  });

  it('refuses a body without a licence (400)', async () => {
    expect((await h.admin('POST', '/licenses/verify', {})).statusCode).toBe(400);
    expect((await h.admin('POST', '/licenses/verify', { license: 42 })).statusCode).toBe(400);
  });

  it('never accepts a changed signature character, the last one included', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Tamper Ltd' });
    const [payloadPart, signaturePart] = licence.licenseString.split('.');
    for (let i = 0; i < signaturePart.length; i++) {
      const c = signaturePart[i];
      for (const replacement of [c === 'A' ? 'B' : 'A', c === '_' ? '-' : '_']) {
        const tampered = `${payloadPart}.${signaturePart.slice(0, i)}${replacement}${signaturePart.slice(i + 1)}`;
        const { data } = await verify(tampered);
        expect(data.valid, `position ${i} -> ${replacement}`).toBe(false);
        expect(['BAD_SIGNATURE', 'MALFORMED']).toContain(data.reason);
        if (i < signaturePart.length - 1) expect(data).toMatchObject({ reason: 'BAD_SIGNATURE', signature: 'INVALID' });
      }
    }
  });

  it('reports BAD_SIGNATURE for a payload changed after signing', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Tamper Ltd' });
    const signaturePart = licence.licenseString.split('.')[1];
    const forged = { ...licence.claims, exp: licence.claims.exp + 10 * 365 * 86_400, mm: 99 };
    const response = await verify(`${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${signaturePart}`);
    expect(response.data).toMatchObject({ valid: false, reason: 'BAD_SIGNATURE', signature: 'INVALID', claims: forged, product: { id: product.id } });
    // The genuine payload with padding added is not the signed text: never valid.
    const padded = await verify(`${licence.licenseString.split('.')[0]}=.${signaturePart}`);
    expect(padded.data.valid).toBe(false);
    expect(padded.data.reason).toBe('MALFORMED');
  });

  it('reports NOT_YET_VALID before the start and EXPIRED after grace, GRACE still valid', async () => {
    const pending = await issueOk(h.admin, { productId: product.id, licensee: 'Early Ltd', issueDate: addDays(todayUtc(), 2) });
    expect((await verify(pending.licenseString)).data).toMatchObject({
      valid: false,
      reason: 'NOT_YET_VALID',
      signature: 'VALID',
      expiry: { status: 'PENDING' },
      ledger: { status: 'PENDING' },
    });
    const lapsed = await issueOk(h.admin, { productId: product.id, licensee: 'Late Ltd', issueDate: addDays(todayUtc(), -400), graceDays: 3 });
    expect((await verify(lapsed.licenseString)).data).toMatchObject({
      valid: false,
      reason: 'EXPIRED',
      signature: 'VALID',
      expiry: { expiresAt: lapsed.expiresAt, graceEndsAt: new Date(Date.parse(lapsed.expiresAt) + 3 * 86_400_000).toISOString(), status: 'EXPIRED' },
    });
    const grace = await issueOk(h.admin, {
      productId: product.id,
      licensee: 'Grace Ltd',
      issueDate: addDays(todayUtc(), -40),
      validityMonths: 1,
      graceDays: 30,
    });
    expect((await verify(grace.licenseString)).data).toMatchObject({ valid: true, reason: null, expiry: { status: 'GRACE' }, ledger: { status: 'GRACE' } });
  });

  it('judges a revoked or archived licence on its signature and calendar alone; the ledger says so', async () => {
    const revoked = await issueOk(h.admin, { productId: product.id, licensee: 'Revoked Ltd' });
    await h.admin('POST', `/licenses/${revoked.lid}/revoke`, { reason: 'fraud' });
    expect((await verify(revoked.licenseString)).data).toMatchObject({
      valid: true,
      reason: null,
      expiry: { status: 'ACTIVE' },
      ledger: { known: true, status: 'REVOKED', revoked: true, archived: false },
    });
    await h.admin('POST', `/licenses/${revoked.lid}/archive`);
    expect((await verify(revoked.licenseString)).data).toMatchObject({ valid: true, ledger: { known: true, revoked: true, archived: true } });
  });

  it('tells in the ledger whether a renewal superseded the term, and when the current one expires', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Renewed Ltd' });
    expect((await verify(licence.licenseString)).data.ledger).toMatchObject({ known: true, superseded: false });
    expect((await verify(licence.licenseString)).data.ledger).not.toHaveProperty('currentExpiresAt');
    const renewed = (await h.admin('POST', `/licenses/${licence.lid}/renew`, { validityMonths: 24 })).data;
    const old = (await verify(licence.licenseString)).data;
    expect(old.valid).toBe(true);
    expect(old.ledger).toMatchObject({ known: true, superseded: true, currentExpiresAt: renewed.expiresAt });
    expect((await verify(renewed.licenseString)).data.ledger).toMatchObject({ superseded: false });
  });

  it('verifies a licence that has no record on the same terms', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Vanished Ltd' });
    await h.database.db.deleteFrom('licences').where('lid', '=', licence.lid).execute();
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).statusCode).toBe(404);
    expect((await verify(licence.licenseString)).data).toMatchObject({ valid: true, reason: null, signature: 'VALID', ledger: { known: false } });
  });

  it("does not know another organisation's licence, even under the same product key", async () => {
    const other = await h.otherOrg();
    const theirs = await createProduct(other.admin, { productKey: 'shared-product' });
    const licence = await issueOk(other.admin, { productId: theirs.id, licensee: 'Elsewhere Ltd' });
    expect((await verify(licence.licenseString)).data).toMatchObject({
      valid: false,
      reason: 'UNKNOWN_PRODUCT',
      signature: 'UNCHECKED',
      product: null,
      claims: { lid: licence.lid, prd: 'shared-product' },
      ledger: { known: false },
    });
    const ours = await createProduct(h.admin, { productKey: 'shared-product' });
    expect((await verify(licence.licenseString)).data).toMatchObject({
      valid: false,
      reason: 'BAD_SIGNATURE',
      signature: 'INVALID',
      product: { id: ours.id, productKey: 'shared-product' },
      ledger: { known: false },
    });
    // The other organisation knows it.
    expect((await verify(licence.licenseString, other.admin)).data).toMatchObject({ valid: true, ledger: { known: true, lid: licence.lid } });
  });

  it('still verifies licences signed before a key rotation; new ones use the new key', async () => {
    const rotating = await createProduct(h.admin);
    const before = await issueOk(h.admin, { productId: rotating.id, licensee: 'Rotation Ltd' });
    const rotated = await h.admin('PUT', `/products/${rotating.id}`, { regenerateKey: true });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.data.publicKeyPem).not.toBe(rotating.publicKeyPem);
    const after = await issueOk(h.admin, { productId: rotating.id, licensee: 'Rotation Ltd' });
    expect((await verify(before.licenseString)).data).toMatchObject({ valid: true, signature: 'VALID' });
    expect((await verify(after.licenseString)).data).toMatchObject({ valid: true, signature: 'VALID' });
    const currentPem = (await h.admin('GET', `/products/${rotating.id}/public-key`)).body;
    expect(nodeVerifies(after.licenseString, currentPem, 'ED25519')).toBe(true);
    expect(nodeVerifies(before.licenseString, currentPem, 'ED25519')).toBe(false);
    expect(nodeVerifies(before.licenseString, rotating.publicKeyPem, 'ED25519')).toBe(true);
    // A renewal after rotation is signed with the new key.
    const renewed = (await h.admin('POST', `/licenses/${before.lid}/renew`)).data;
    expect(nodeVerifies(renewed.licenseString, currentPem, 'ED25519')).toBe(true);
  });
});

describe('every algorithm, verified outside the service', () => {
  const algorithms = ['ED25519', 'RSA_2048', 'RSA_3072', 'RSA_4096', 'EC_P256', 'EC_P384'] as const;
  const jdkName = {
    ED25519: 'Ed25519',
    RSA_2048: 'SHA256withRSA',
    RSA_3072: 'SHA256withRSA',
    RSA_4096: 'SHA256withRSA',
    EC_P256: 'SHA256withECDSA',
    EC_P384: 'SHA384withECDSA',
  };

  it('signs current and superseded terms that node:crypto and a JDK accept', { timeout: 60_000 }, async () => {
    const products = await Promise.all(algorithms.map((algorithm) => createProduct(h.admin, { algorithm, allowedLicenceTypes: ['OFFLINE', 'HYBRID'] })));
    const strings: Array<{ algorithm: (typeof algorithms)[number]; pem: string; text: string }> = [];
    for (const p of products) {
      expect(p.signatureAlgorithm).toBe(jdkName[p.algorithm as keyof typeof jdkName]);
      const licence = await issueOk(h.admin, {
        productId: p.id,
        licensee: 'Ünïcode Kunde GmbH',
        licenceType: 'HYBRID',
        fingerprints: [fingerprint(`${p.algorithm}-1`), fingerprint(`${p.algorithm}-2`)],
      });
      const renewed = (await h.admin('POST', `/licenses/${licence.lid}/renew`)).data;
      const pem = (await h.admin('GET', `/products/${p.id}/public-key`)).body;
      for (const text of [licence.licenseString, renewed.licenseString]) {
        expect(text).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
        strings.push({ algorithm: p.algorithm, pem, text });
        const verdict = (await verify(text)).data;
        expect(verdict).toMatchObject({ valid: true, signature: 'VALID', signatureAlgorithm: jdkName[p.algorithm as keyof typeof jdkName] });
      }
    }
    for (const { algorithm, pem, text } of strings) expect(nodeVerifies(text, pem, algorithm), algorithm).toBe(true);
    // A tampered payload fails outside too (the check is not vacuous).
    const { algorithm, pem, text } = strings[0]!;
    expect(nodeVerifies(`${text.split('.')[0]}x.${text.split('.')[1]}`, pem, algorithm)).toBe(false);

    if (!javaAvailable()) {
      console.warn('javac/java not found: the JDK half of this test was skipped');
      return;
    }
    const items = strings.map(({ algorithm, pem, text }) => {
      const [payloadPart, signaturePart] = text.split('.') as [string, string];
      return {
        algorithm: jdkName[algorithm],
        publicKey: createPublicKey(pem),
        message: Buffer.from(payloadPart, 'ascii'),
        signature: Buffer.from(signaturePart, 'base64url'),
      };
    });
    const tampered = { ...items[0]!, message: Buffer.from(`${strings[0]!.text.split('.')[0]}x`, 'ascii') };
    expect(await javaVerify([...items, tampered])).toEqual([...items.map(() => true), false]);
  });
});

describe('reading licences', () => {
  it('downloads the licence string alone as application/octet-stream', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Download Ltd' });
    const response = await h.admin('GET', `/licenses/${licence.lid}/download`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/octet-stream/);
    expect(response.body).toBe(licence.licenseString);
    expect(response.rawPayload.equals(Buffer.from(licence.licenseString, 'ascii'))).toBe(true);
    expect(B64U.test(response.body.replace('.', ''))).toBe(true);
  });

  it('lists licences in list form, archived ones included, filtered by product and customer', async () => {
    const listProduct = await createProduct(h.admin);
    const alice = await issueOk(h.admin, { productId: listProduct.id, customer: { name: 'Alice', email: 'alice@list.example' } });
    const bob = await issueOk(h.admin, {
      productId: listProduct.id,
      customer: { name: 'Bob', email: 'bob@list.example' },
      issueDate: addDays(todayUtc(), -400),
    });
    const aliceElsewhere = await issueOk(h.admin, { productId: product.id, customerId: alice.customerId });
    await h.admin('POST', `/licenses/${bob.lid}/archive`);

    const all = await h.admin('GET', '/licenses');
    expect(all.statusCode).toBe(200);
    const lids = all.data.map((l: { lid: string }) => l.lid);
    expect(lids).toEqual(expect.arrayContaining([alice.lid, bob.lid, aliceElsewhere.lid]));
    for (const item of all.data) {
      expect(item).not.toHaveProperty('claims');
      expect(item).not.toHaveProperty('licenseString');
    }
    const { claims: _c, licenseString: _s, ...aliceListed } = alice;
    expect(all.data.find((l: { lid: string }) => l.lid === alice.lid)).toEqual(aliceListed);
    expect(all.data.find((l: { lid: string }) => l.lid === bob.lid)).toMatchObject({ archived: true, status: 'EXPIRED' });

    const byProduct = (await h.admin('GET', `/licenses?productId=${listProduct.id}`)).data.map((l: { lid: string }) => l.lid);
    expect(byProduct.sort()).toEqual([alice.lid, bob.lid].sort());
    const byCustomer = (await h.admin('GET', `/licenses?customerId=${alice.customerId}`)).data.map((l: { lid: string }) => l.lid);
    expect(byCustomer.sort()).toEqual([alice.lid, aliceElsewhere.lid].sort());
    const both = (await h.admin('GET', `/licenses?productId=${listProduct.id}&customerId=${alice.customerId}`)).data.map((l: { lid: string }) => l.lid);
    expect(both).toEqual([alice.lid]);
    expect((await h.admin('GET', '/licenses?productId=987654')).data).toEqual([]);
    expect((await h.admin('GET', '/licenses?productId=abc')).statusCode).toBe(400);
  });

  it('answers 404 for an unknown lid', async () => {
    const unknown = '7b4ad6a2-59c1-4c4e-9a47-6a5d0f0b8e11';
    for (const path of ['', '/download', '/versions', '/versions/1', '/machines', '/activity']) {
      const response = await h.admin('GET', `/licenses/${unknown}${path}`);
      expect(response.statusCode, path).toBe(404);
      expect(response.data).toEqual({ error: expect.any(String) });
    }
    // A lid that is not a UUID is refused, never a server error.
    expect([400, 404]).toContain((await h.admin('GET', '/licenses/not-a-uuid')).statusCode);
  });

  it("hides another organisation's licences entirely (404), and its list does not show ours", async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Private Ltd', fingerprint: fingerprint('private') });
    await h.admin('POST', `/licenses/${licence.lid}/renew`);
    const other = await h.otherOrg();
    for (const path of ['', '/download', '/versions', '/versions/1', '/versions/1/download', '/machines', '/activity']) {
      expect((await other.admin('GET', `/licenses/${licence.lid}${path}`)).statusCode, path).toBe(404);
    }
    for (const action of ['renew', 'revoke', 'reinstate', 'archive', 'restore', 'release-binding']) {
      expect((await other.admin('POST', `/licenses/${licence.lid}/${action}`)).statusCode, action).toBe(404);
    }
    expect((await other.admin('GET', '/licenses')).data).toEqual([]);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toMatchObject({ revoked: false, archived: false });
    expect((await verify(licence.licenseString, other.admin)).data.ledger).toEqual({ known: false });
  });

  it('has no licence DELETE: archive replaced it', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Kept Ltd' });
    const response = await h.admin('DELETE', `/licenses/${licence.lid}`);
    expect(response.statusCode).toBe(404);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).statusCode).toBe(200);
  });

  it('shows check-made bindings beside at-issue ones, oldest first, with seats counted', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Machines Ltd', fingerprint: fingerprint('m-issue'), maxMachines: 2 });
    const checked = await insertCheckBinding(h, licence.lid, 'm-check');
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines.map((m: { atIssue: boolean; live: boolean }) => [m.atIssue, m.live])).toEqual([
      [true, true],
      [false, true],
    ]);
    expect(machines[1].id).toBe(checked);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toMatchObject({ seatsUsed: 2, activated: true, boundAt: machines[0].boundAt });
  });
});
