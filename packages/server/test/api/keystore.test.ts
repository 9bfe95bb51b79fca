import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLicence, verifyLicence, type Algorithm } from '@licensor/protocol';
import { startHarness, type Harness } from '../harness.js';
import { issueOk } from '../licence-helpers.js';
import { expectEditsKeepKey } from '../product-helpers.js';
import { keystores, keystoreToolsMissing, type KeystoreTool } from '../keystore-fixtures.js';

if (keystoreToolsMissing.length)
  console.warn(`PKCS#12 tests skipped: ${keystoreToolsMissing.join(', ')} not found (apt-get install openssl default-jdk-headless)`);

const PASSWORD = 'keystore-pass-5521';
let h: Harness;
let stores: ReturnType<typeof keystores>;
let seq = 0;

beforeAll(async () => {
  h = await startHarness();
  stores = keystores();
});
afterAll(async () => {
  await h?.close();
  stores?.dispose();
});

const create = (body: Record<string, unknown>) => h.admin('POST', '/products', { productKey: `p12-${++seq}`, name: `Keystore ${seq}`, ...body });
const spki = (key: KeyObject | string) => (typeof key === 'string' ? createPublicKey(key) : key).export({ type: 'spki', format: 'der' });
const productCount = async () => (await h.admin('GET', '/products')).data.length;

const KINDS: Array<[KeystoreTool, Algorithm]> = [
  ['openssl', 'ED25519'],
  ['openssl', 'EC_P256'],
  ['openssl', 'EC_P384'],
  ['openssl', 'RSA_2048'],
  ['openssl-legacy', 'ED25519'],
  ['openssl-legacy', 'EC_P256'],
  ['openssl-legacy', 'RSA_2048'],
  ['keytool', 'ED25519'],
  ['keytool', 'EC_P256'],
  ['keytool', 'EC_P384'],
  ['keytool', 'RSA_2048'],
];

describe.skipIf(keystoreToolsMissing.length > 0)('PKCS#12 keystores', () => {
  it.each(KINDS)('opens a keystore from %s with a %s key: the key signs, its certificate becomes the product’s', async (tool, algorithm) => {
    const store = stores.make(tool, algorithm, PASSWORD);
    const created = await create({ keystorePkcs12: store.base64, keystorePassword: PASSWORD });
    expect(created.statusCode).toBe(201);
    const product = created.data;
    expect(product).toMatchObject({ algorithm, keyOrigin: 'imported', certificateType: 'IMPORTED', keyState: 'OK' });
    expect(spki(product.publicKeyPem)).toEqual(spki(store.publicKey));
    expect(new X509Certificate(product.certificatePem).raw).toEqual(new X509Certificate(store.certificatePem!).raw);
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Keystore Buyer' });
    const publicKey = createPublicKey(product.publicKeyPem);
    expect(verifyLicence(parseLicence(licence.licenseString), [publicKey])).toBe(publicKey);
  });

  it('takes a keystore without a certificate with a self-signed one, or none when asked', async () => {
    const bare = stores.make('openssl', 'EC_P256', PASSWORD, { certificate: false });
    const selfSigned = (await create({ keystorePkcs12: bare.base64, keystorePassword: PASSWORD })).data;
    expect(selfSigned).toMatchObject({ keyOrigin: 'imported', certificateType: 'SELF_SIGNED' });
    expect(new X509Certificate(selfSigned.certificatePem).verify(createPublicKey(selfSigned.publicKeyPem))).toBe(true);
    const withCertificate = stores.make('openssl', 'ED25519', PASSWORD);
    const none = (await create({ keystorePkcs12: withCertificate.base64, keystorePassword: PASSWORD, certificateType: 'NONE' })).data;
    expect(none).toMatchObject({ certificateType: 'NONE', certificatePem: null });
  });

  it('edits a product whose key came from a keystore, keeping its key and certificate', async () => {
    const store = stores.make('openssl', 'EC_P256', PASSWORD);
    await expectEditsKeepKey(h.admin, (await create({ keystorePkcs12: store.base64, keystorePassword: PASSWORD })).data);
  });

  it('replaces a product’s key with a keystore’s, keeping the old key to verify what it signed', async () => {
    const product = (await create({})).data;
    const store = stores.make('openssl', 'ED25519', PASSWORD);
    const replaced = await h.admin('PUT', `/products/${product.id}`, { keystorePkcs12: store.base64, keystorePassword: PASSWORD });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.data).toMatchObject({ keyOrigin: 'imported', certificateType: 'IMPORTED' });
    expect(spki(replaced.data.publicKeyPem)).toEqual(spki(store.publicKey));
    expect((await h.admin('GET', `/products/${product.id}/keys`)).data.map((k: { current: boolean }) => k.current)).toEqual([true, false]);
  });

  it('refuses, changing nothing, a wrong password, no key, two keys, another algorithm, garbage and a mix with PEM', async () => {
    const count = await productCount();
    const store = stores.make('openssl', 'EC_P256', PASSWORD);
    const refusals: Array<[Record<string, unknown>, RegExp]> = [
      [{ keystorePkcs12: store.base64, keystorePassword: 'not the password' }, /^Keystore password \(keystorePassword\): does not open the keystore$/],
      [{ keystorePkcs12: store.base64 }, /^Keystore password \(keystorePassword\): does not open the keystore$/],
      [
        { keystorePkcs12: stores.certificateOnly(PASSWORD), keystorePassword: PASSWORD },
        /^PKCS#12 keystore \(keystorePkcs12\): the keystore holds no private key$/,
      ],
      [
        { keystorePkcs12: stores.twoKeys(PASSWORD), keystorePassword: PASSWORD },
        /^PKCS#12 keystore \(keystorePkcs12\): the keystore holds several private keys/,
      ],
      [
        { keystorePkcs12: store.base64, keystorePassword: PASSWORD, algorithm: 'RSA_2048' },
        /^PKCS#12 keystore \(keystorePkcs12\): the key is ECDSA P-256 but the algorithm asked for is RSA_2048$/,
      ],
      [{ keystorePkcs12: 'bm90IGEga2V5c3RvcmU=', keystorePassword: PASSWORD }, /^PKCS#12 keystore \(keystorePkcs12\): not a readable PKCS#12 keystore/],
      [{ keystorePkcs12: store.base64.slice(0, 400), keystorePassword: PASSWORD }, /^PKCS#12 keystore \(keystorePkcs12\): not a readable PKCS#12 keystore/],
      [{ keystorePkcs12: '%%%', keystorePassword: PASSWORD }, /^PKCS#12 keystore \(keystorePkcs12\): not a readable PKCS#12 keystore/],
      [{ keystorePassword: PASSWORD }, /^Keystore password \(keystorePassword\): only with a PKCS#12 keystore$/],
      [
        { keystorePkcs12: store.base64, keystorePassword: PASSWORD, privateKeyPem: '-----BEGIN PRIVATE KEY-----' },
        /^PKCS#12 keystore \(keystorePkcs12\): send a PEM private key or a PKCS#12 keystore, not both/,
      ],
      [
        { keystorePkcs12: store.base64, keystorePassword: PASSWORD, keyOrigin: 'managed' },
        /^Key origin \(keyOrigin\): a key sent as PEM or in a PKCS#12 keystore is an imported key/,
      ],
    ];
    for (const [body, message] of refusals) {
      const response = await create(body);
      expect(response.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(response.data.error).toMatch(message);
      expect(response.body).not.toContain(PASSWORD);
    }
    expect(await productCount()).toBe(count);
  });

  it('never shows or logs the keystore or its password', async () => {
    const { app: logged, lines } = await h.loggedApp();
    try {
      const token = await h.createToken(['products:write', 'activity:read']);
      const call = (method: string, url: string, body?: unknown) =>
        h.request(method, `/o/acme/api${url}`, { app: logged, body, headers: { authorization: `Bearer ${token}` } });
      const store = stores.make('keytool', 'EC_P256', PASSWORD);
      const bodies = [
        await call('POST', '/products', { productKey: `p12-${++seq}`, name: 'Logged', keystorePkcs12: store.base64, keystorePassword: PASSWORD }),
        await call('POST', '/products', { productKey: `p12-${++seq}`, name: 'Wrong', keystorePkcs12: store.base64, keystorePassword: `${PASSWORD}-wrong` }),
        await call('GET', '/dashboard/activity'),
      ].map((r) => r.body);
      expect(lines.length).toBeGreaterThan(5);
      const fragments = [PASSWORD, ...(store.base64.match(/.{40}/g) ?? []).slice(0, 20)];
      for (const text of [...bodies, ...lines]) for (const secret of fragments) expect(text).not.toContain(secret);
    } finally {
      await logged.close();
    }
  });
});
