import { X509Certificate, createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALGORITHM_INFO, parseLicence, verifyLicence, type Algorithm } from '@licensor/protocol';
import { javaAvailable, javaVerify, type JavaVerifyItem } from '../../../protocol/test/java-verifier.js';
import { seal } from '../../src/keys/sealing.js';
import { checkBody, receiptVerifies } from '../check-helpers.js';
import { startHarness, type Harness } from '../harness.js';
import { issueOk } from '../licence-helpers.js';
import { expectEditsKeepKey } from '../product-helpers.js';
import { softHsm, softHsmMissing, type SoftHsm } from '../softhsm.js';

if (softHsmMissing) console.warn(`PKCS#11 tests skipped: ${softHsmMissing}`);

const PIN = 'acme-pin-4417';
const WRONG_PIN = 'wrong-pin-7Q';
const ALGORITHMS: Algorithm[] = ['ED25519', 'EC_P256', 'EC_P384', 'RSA_2048', 'RSA_3072', 'RSA_4096'];

let hsm: SoftHsm;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  hsm = softHsm();
  hsm.initToken('acme-hsm', PIN);
  hsm.initToken('spare-hsm', PIN);
  hsm.initToken('other-hsm', PIN);
  // SoftHSM finds its tokens when the module loads: every token a test uses is made here.
  hsm.initToken('pin-hsm', PIN);
  hsm.generate('pin-hsm', PIN, 'ED25519', 'pinned');
  hsm.generate('pin-hsm', PIN, 'ED25519', 'second');
  for (const algorithm of ALGORITHMS) hsm.generate('acme-hsm', PIN, algorithm, `vendor-${algorithm.toLowerCase()}`);
  hsm.generate('other-hsm', PIN, 'EC_P256', 'theirs');
  h = await startHarness({
    LICENSOR_PKCS11_MODULE: hsm.module,
    LICENSOR_PKCS11_TOKENS: 'acme=acme-hsm,acme=spare-hsm,acme=pin-hsm,acme=ghost-hsm,other-pkcs11=other-hsm',
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
  hsm?.dispose();
});

const onToken = (keyLabel: string, body: Record<string, unknown> = {}, tokenLabel = 'acme-hsm', pin = PIN) =>
  h.admin('POST', '/products', {
    productKey: `hsm-${++seq}`,
    name: `Held ${seq}`,
    licenceType: 'ONLINE',
    keyOrigin: 'pkcs11',
    pkcs11: { tokenLabel, keyLabel, pin },
    ...body,
  });

const productCount = async () => (await h.admin('GET', '/products')).data.length;

/** Verifies a licence three ways: the SDK's protocol code, bare node:crypto, and (when a JDK is here) Java. */
async function expectVerifies(licence: string, publicKeyPem: string, algorithm: Algorithm) {
  const publicKey = createPublicKey(publicKeyPem);
  expect(verifyLicence(parseLicence(licence), [publicKey])).toBe(publicKey);
  const [payload, signature] = licence.split('.') as [string, string];
  expect(verify(ALGORITHM_INFO[algorithm].digest, Buffer.from(payload, 'latin1'), publicKey, Buffer.from(signature, 'base64url'))).toBe(true);
  if (javaAvailable()) {
    const item: JavaVerifyItem = {
      algorithm: ALGORITHM_INFO[algorithm].signatureAlgorithm,
      publicKey,
      message: Buffer.from(payload, 'ascii'),
      signature: Buffer.from(signature, 'base64url'),
    };
    expect(await javaVerify([item])).toEqual([true]);
  }
}

describe.skipIf(softHsmMissing)('keys on a PKCS#11 token', () => {
  it('offers pkcs11 and PKCS#12 in the options, with the organisation’s tokens', async () => {
    const options = (await h.admin('GET', '/products/options')).data;
    expect(options.keyOrigins.find((o: { value: string }) => o.value === 'pkcs11')).toMatchObject({ available: true });
    expect(options.pkcs11Tokens).toEqual(['acme-hsm', 'spare-hsm', 'pin-hsm', 'ghost-hsm']);
    expect(options.keyFormats.map((f: { value: string; available: boolean }) => [f.value, f.available])).toEqual([
      ['PEM', true],
      ['PKCS12', true],
    ]);
    const other = await h.otherOrg('other-pkcs11');
    expect((await other.admin('GET', '/products/options')).data.pkcs11Tokens).toEqual(['other-hsm']);
  });

  it.each(ALGORITHMS)('creates a %s product from a key on the token, issues and checks with a receipt signed there', async (algorithm) => {
    const created = await onToken(`vendor-${algorithm.toLowerCase()}`);
    expect(created.statusCode).toBe(201);
    const product = created.data;
    expect(product).toMatchObject({
      algorithm,
      keyOrigin: 'pkcs11',
      keyState: 'OK',
      keyError: null,
      pkcs11: { tokenLabel: 'acme-hsm', keyLabel: `vendor-${algorithm.toLowerCase()}` },
    });
    expect(JSON.stringify(product)).not.toContain(PIN);
    // The self-signed certificate is signed on the token too.
    const certificate = new X509Certificate(product.certificatePem);
    expect(certificate.verify(createPublicKey(product.publicKeyPem))).toBe(true);

    const rotated = await h.admin('POST', `/products/${product.id}/check-token`);
    const caller = h.as({ token: rotated.data.checkToken });
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Token Buyer' });
    await expectVerifies(licence.licenseString, product.publicKeyPem, algorithm);
    const body = checkBody(licence.licenseString, `hsm-${algorithm}`);
    const answer = await caller('POST', `/public/license/${product.checkId}/check`, body);
    expect(answer.statusCode).toBe(200);
    expect(answer.data.valid).toBe(true);
    expect(receiptVerifies(answer.data, body.fingerprint, product.publicKeyPem)).toBe(true);
  });

  it('regenerates the key on the token: a new label and id, sensitive and never extractable; older licences keep checking', async () => {
    const product = (await onToken('vendor-ec_p256')).data;
    const rotated = await h.admin('POST', `/products/${product.id}/check-token`);
    const caller = h.as({ token: rotated.data.checkToken });
    const before = await issueOk(h.admin, { productId: product.id, licensee: 'Early Buyer' });

    const regenerated = await h.admin('PUT', `/products/${product.id}`, { regenerateKey: true });
    expect(regenerated.statusCode).toBe(200);
    const after = regenerated.data;
    expect(after).toMatchObject({ keyOrigin: 'pkcs11', algorithm: 'EC_P256', keyState: 'OK' });
    expect(after.pkcs11.keyLabel).not.toBe('vendor-ec_p256');
    expect(after.publicKeyPem).not.toBe(product.publicKeyPem);
    const privateKey = hsm
      .objects('acme-hsm', PIN)
      .split(/\n(?=\S)/)
      .find((block) => block.startsWith('Private Key Object') && block.includes(`label:      ${after.pkcs11.keyLabel}\n`))!;
    expect(privateKey).toMatch(/Access:.*\bsensitive/);
    expect(privateKey).toMatch(/never extractable/);
    expect((await h.admin('GET', `/products/${product.id}/keys`)).data.map((k: { current: boolean }) => k.current)).toEqual([true, false]);

    const newer = await issueOk(h.admin, { productId: product.id, licensee: 'Late Buyer' });
    await expectVerifies(newer.licenseString, after.publicKeyPem, 'EC_P256');
    const old = checkBody(before.licenseString, 'early');
    const answer = await caller('POST', `/public/license/${product.checkId}/check`, old);
    expect(answer.data.valid).toBe(true);
    // The older licence's receipts are still signed with its own key, still on the token.
    expect(receiptVerifies(answer.data, old.fingerprint, product.publicKeyPem)).toBe(true);
  });

  it('generates a key on the token when no key label is given', async () => {
    const created = await h.admin('POST', '/products', {
      productKey: `hsm-${++seq}`,
      name: 'Made on token',
      keyOrigin: 'pkcs11',
      algorithm: 'ED25519',
      pkcs11: { tokenLabel: 'spare-hsm', pin: PIN },
    });
    expect(created.statusCode).toBe(201);
    expect(created.data).toMatchObject({ algorithm: 'ED25519', pkcs11: { tokenLabel: 'spare-hsm' }, keyState: 'OK' });
    expect(hsm.objects('spare-hsm', PIN)).toContain(created.data.pkcs11.keyLabel);
  });

  it('signs 50 concurrent issues on one key, every licence verifying', async () => {
    const product = (await onToken('vendor-ed25519')).data;
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => h.admin('POST', '/licenses', { productId: product.id, licensee: `Crowd ${i}` })));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(201));
    const publicKey = createPublicKey(product.publicKeyPem);
    for (const response of responses) expect(verifyLicence(parseLicence(response.data.licenseString), [publicKey])).toBe(publicKey);
  });

  it('refuses, changing nothing, a wrong PIN, a missing token or key, a key of another algorithm, and another organisation’s token', async () => {
    const count = await productCount();
    const wrongPin = await onToken('vendor-ed25519', {}, 'acme-hsm', WRONG_PIN);
    expect(wrongPin.statusCode).toBe(400);
    expect(wrongPin.data.error).toMatch(/^PKCS#11 PIN \(pkcs11\.pin\): /);
    expect(wrongPin.body).not.toContain(WRONG_PIN);
    const noKey = await onToken('nobody');
    expect(noKey.statusCode).toBe(400);
    expect(noKey.data.error).toMatch(/^PKCS#11 key label \(pkcs11\.keyLabel\): .*nobody/);
    const mismatch = await onToken('vendor-ed25519', { algorithm: 'RSA_2048' });
    expect(mismatch.statusCode).toBe(400);
    expect(mismatch.data.error).toMatch(/^PKCS#11 key label \(pkcs11\.keyLabel\): the key is ED25519 but the algorithm asked for is RSA_2048/);
    const theirs = await onToken('theirs', {}, 'other-hsm');
    expect(theirs.statusCode).toBe(403);
    expect(theirs.data.error).toMatch(/^PKCS#11 token label \(pkcs11\.tokenLabel\): /);
    // Named in the deployment's list, but no such token is in any slot.
    for (const absent of [{ keyLabel: 'vendor-ed25519' }, {}]) {
      const ghost = await h.admin('POST', '/products', {
        productKey: `hsm-${++seq}`,
        name: 'Ghost',
        keyOrigin: 'pkcs11',
        pkcs11: { tokenLabel: 'ghost-hsm', pin: PIN, ...absent },
      });
      expect(ghost.statusCode).toBe(400);
      expect(ghost.data.error).toBe('PKCS#11 token label (pkcs11.tokenLabel): token "ghost-hsm" is not present');
    }
    const noPkcs11 = await h.admin('POST', '/products', { productKey: `hsm-${++seq}`, name: 'No token', keyOrigin: 'pkcs11' });
    expect(noPkcs11.statusCode).toBe(400);
    expect(noPkcs11.data.error).toMatch(/^PKCS#11 \(pkcs11\): required/);
    expect(await productCount()).toBe(count);
  });

  it('shows keyState ERROR and answers 503 when the key is gone from the token, and comes back without a restart', async () => {
    hsm.generate('spare-hsm', PIN, 'EC_P256', 'fleeting');
    const product = (await onToken('fleeting', {}, 'spare-hsm')).data;
    await issueOk(h.admin, { productId: product.id, licensee: 'Before' });
    hsm.deleteKey('spare-hsm', PIN, 'fleeting');

    const issued = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'After' });
    expect(issued.statusCode).toBe(503);
    expect(issued.data.error).toMatch(/signing key is unavailable: no key labelled "fleeting"/);
    const read = (await h.admin('GET', `/products/${product.id}`)).data;
    expect(read).toMatchObject({ keyState: 'ERROR', keyError: expect.stringMatching(/no key labelled "fleeting"/) });
    expect((await h.admin('GET', '/products')).data.find((p: { id: number }) => p.id === product.id).keyState).toBe('ERROR');

    // The operator moves the product to another key on the token: it signs again at once.
    const moved = await h.admin('PUT', `/products/${product.id}`, { pkcs11: { tokenLabel: 'acme-hsm', keyLabel: 'vendor-ec_p256', pin: PIN } });
    expect(moved.statusCode).toBe(200);
    expect(moved.data.keyState).toBe('OK');
    expect((await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Again' })).statusCode).toBe(201);
  });

  it('shows keyState ERROR for a key whose stored PIN the token refuses, never retrying it, until a new PIN is saved', async () => {
    const product = (await onToken('pinned', {}, 'pin-hsm')).data;
    const other = (await onToken('second', {}, 'pin-hsm')).data;
    // As if the token's PIN had changed under a stored one (SoftHSM keeps a running process's PIN).
    const row = await h.database.db.selectFrom('product_keys').selectAll().where('product_id', '=', product.id).executeTakeFirstOrThrow();
    await h.database.db
      .updateTable('product_keys')
      .set({ sealed_private_key: seal(h.config.masterKey!, Buffer.from(WRONG_PIN), row.key_fingerprint) })
      .where('id', '=', row.id)
      .execute();
    await h.database.db
      .updateTable('products')
      .set((eb) => ({ version: eb('version', '+', 1) }))
      .where('id', '=', product.id)
      .execute();

    const refused = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Old PIN' });
    expect(refused.statusCode).toBe(503);
    expect(refused.data.error).toMatch(/the PIN does not log in to token "pin-hsm"/);
    expect((await h.admin('GET', `/products/${product.id}`)).data).toMatchObject({ keyState: 'ERROR', keyError: expect.stringMatching(/PIN/) });
    // The refused PIN is not tried again (a token locks after a few), and the token's other key signs on.
    expect((await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Old PIN' })).data.error).toMatch(/the PIN does not log in/);
    expect((await h.admin('POST', '/licenses', { productId: other.id, licensee: 'Right PIN' })).statusCode).toBe(201);

    const repinned = await h.admin('PUT', `/products/${product.id}`, { pkcs11: { tokenLabel: 'pin-hsm', keyLabel: 'pinned', pin: PIN } });
    expect(repinned.statusCode).toBe(200);
    expect(repinned.data).toMatchObject({ keyState: 'OK', publicKeyPem: product.publicKeyPem });
    expect((await h.admin('GET', `/products/${product.id}/keys`)).data).toHaveLength(1);
    expect((await h.admin('POST', '/licenses', { productId: product.id, licensee: 'New PIN' })).statusCode).toBe(201);
  });

  it('edits a product whose key is on the token, keeping its key', async () => {
    await expectEditsKeepKey(h.admin, (await onToken('vendor-ec_p384')).data);
  });

  it('sends a record back unchanged, and never shows or logs the PIN', async () => {
    const { app: logged, lines } = await h.loggedApp();
    try {
      const secretPin = PIN;
      const token = await h.createToken(['products:write', 'licenses:write', 'activity:read']);
      const call = (method: string, url: string, body?: unknown) =>
        h.request(method, `/o/acme/api${url}`, { app: logged, body, headers: { authorization: `Bearer ${token}` } });
      const created = await call('POST', '/products', {
        productKey: `hsm-${++seq}`,
        name: 'Logged',
        keyOrigin: 'pkcs11',
        pkcs11: { tokenLabel: 'acme-hsm', keyLabel: 'vendor-rsa_2048', pin: secretPin },
      });
      const echoed = await call('PUT', `/products/${created.data.id}`, created.data);
      expect(echoed.statusCode).toBe(200);
      expect(echoed.data.updatedAt).toBe(created.data.updatedAt);
      await call('POST', '/products', {
        productKey: `hsm-${++seq}`,
        name: 'Wrong',
        keyOrigin: 'pkcs11',
        pkcs11: { tokenLabel: 'acme-hsm', keyLabel: 'vendor-rsa_2048', pin: WRONG_PIN },
      });
      await call('POST', '/licenses', { productId: created.data.id, licensee: 'Logged Buyer' });
      const activity = await call('GET', '/dashboard/activity');
      expect(lines.length).toBeGreaterThan(5);
      for (const text of [...lines, created.body, echoed.body, activity.body]) {
        expect(text).not.toContain(secretPin);
        expect(text).not.toContain(WRONG_PIN);
      }
      const row = await h.database.db.selectFrom('product_keys').selectAll().where('pkcs11_label', '=', 'vendor-rsa_2048').executeTakeFirstOrThrow();
      expect(row.sealed_private_key).not.toContain(secretPin);
    } finally {
      await logged.close();
    }
  });
});
