import { X509Certificate, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyBytes } from '@licensor/protocol';
import { buildApp } from '../../src/app.js';
import { tenant } from '../../src/db/tenant.js';
import { ApiError } from '../../src/core/errors.js';
import { Keyring } from '../../src/keys/keyring.js';
import type { FastifyInstance } from 'fastify';
import { startHarness, type Harness } from '../harness.js';
import { expectEditsKeepKey } from '../product-helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

let seq = 0;
const create = (body: Record<string, unknown> = {}) => h.admin('POST', '/products', { productKey: `key-test-${++seq}`, name: `Keyed ${seq}`, ...body });

const spki = (key: string | KeyObject) => (typeof key === 'string' ? createPublicKey(key) : key).export({ type: 'spki', format: 'der' });

/** The product's certificate names it, carries its public key and is signed by that key. */
function expectCertificateOf(product: { certificatePem: string; publicKeyPem: string; name: string }) {
  const certificate = new X509Certificate(product.certificatePem);
  expect(spki(certificate.publicKey)).toEqual(spki(product.publicKeyPem));
  expect(certificate.verify(createPublicKey(product.publicKeyPem))).toBe(true);
  expect(certificate.subject).toBe(`CN=${product.name}\nO=Org acme`);
}

/** Calls another instance of the service over the harness's database, as an API token. */
function instanceCaller(app: FastifyInstance, token: string) {
  return (method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown) =>
    app.inject({
      method,
      url: `/o/acme/api${url}`,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
}

const ed25519 = () => generateKeyPairSync('ed25519');
const rsa2048 = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const p256 = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });

describe('managed keys', () => {
  it.each([
    ['ED25519', 'Ed25519', 'Ed25519'],
    ['RSA_2048', 'RSA 2048-bit', 'SHA256withRSA'],
    ['EC_P256', 'ECDSA P-256', 'SHA256withECDSA'],
    ['EC_P384', 'ECDSA P-384', 'SHA384withECDSA'],
  ])('generates %s with a self-signed certificate over its public key', async (algorithm, label, signatureAlgorithm) => {
    const response = await create({ algorithm });
    expect(response.statusCode).toBe(201);
    expect(response.data).toMatchObject({ algorithm, algorithmLabel: label, signatureAlgorithm, keyOrigin: 'managed', keyState: 'OK' });
    expectCertificateOf(response.data);
  });

  it('generates RSA 3072 and 4096 keys of the right size', async () => {
    for (const [algorithm, bits] of [
      ['RSA_3072', 3072],
      ['RSA_4096', 4096],
    ] as const) {
      const { data } = await create({ algorithm });
      expect(createPublicKey(data.publicKeyPem).asymmetricKeyDetails?.modulusLength).toBe(bits);
      expectCertificateOf(data);
    }
  });

  it('downloads the public key and the certificate as PEM files', async () => {
    const { data } = await create({ algorithm: 'EC_P256' });
    const key = await h.admin('GET', `/products/${data.id}/public-key`);
    expect(key.statusCode).toBe(200);
    expect(key.headers['content-type']).toMatch(/^application\/x-pem-file/);
    expect(key.body).toBe(data.publicKeyPem);
    expect(key.body).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    const certificate = await h.admin('GET', `/products/${data.id}/certificate`);
    expect(certificate.headers['content-type']).toMatch(/^application\/x-pem-file/);
    expect(certificate.body).toBe(data.certificatePem);
    expect(certificate.body).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n$/);
    expect((await h.admin('GET', '/products/999999/public-key')).statusCode).toBe(404);
  });

  it('rotates a managed key, keeping the previous one, and records the rotation', async () => {
    const created = (await create()).data;
    const rotated = await h.admin('PUT', `/products/${created.id}`, { regenerateKey: true, algorithm: 'EC_P384' });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.data).toMatchObject({ algorithm: 'EC_P384', keyOrigin: 'managed', keyState: 'OK' });
    expect(rotated.data.keyFingerprint).not.toBe(created.keyFingerprint);
    expectCertificateOf(rotated.data);

    const keys = await h.admin('GET', `/products/${created.id}/keys`);
    expect(keys.statusCode).toBe(200);
    expect(keys.data).toEqual([
      {
        keyFingerprint: rotated.data.keyFingerprint,
        algorithm: 'EC_P384',
        publicKeyPem: rotated.data.publicKeyPem,
        createdAt: rotated.data.updatedAt,
        retiredAt: null,
        current: true,
      },
      {
        keyFingerprint: created.keyFingerprint,
        algorithm: 'ED25519',
        publicKeyPem: created.publicKeyPem,
        createdAt: created.createdAt,
        retiredAt: rotated.data.updatedAt,
        current: false,
      },
    ]);
    expect(keys.body).not.toMatch(/PRIVATE|sealed/i);
    const retired = await h.database.db
      .selectFrom('product_keys')
      .select('sealed_private_key')
      .where('key_fingerprint', '=', created.keyFingerprint)
      .executeTakeFirstOrThrow();
    expect(retired.sealed_private_key).toMatch(/^sealed-v1\$/);

    const trail = (await h.admin('GET', '/dashboard/activity')).data.items;
    expect(trail[0]).toMatchObject({
      action: 'product.updated',
      details: { changed: ['algorithm'] },
    });
    expect(trail[1]).toMatchObject({
      action: 'product.key_rotated',
      subjectId: String(created.id),
      details: { from: created.keyFingerprint, to: rotated.data.keyFingerprint, algorithm: 'EC_P384', keyOrigin: 'managed' },
    });
    expect((await h.admin('GET', '/products/999999/keys')).statusCode).toBe(404);
  });
});

describe('the keyring', () => {
  it('serves the current signing key and every verification key, current first', async () => {
    const created = (await create()).data;
    const rotated = (await h.admin('PUT', `/products/${created.id}`, { regenerateKey: true })).data;
    const org = await h.database.db.selectFrom('organisations').select('id').where('slug', '=', 'acme').executeTakeFirstOrThrow();
    const t = tenant(h.database.db, org.id);
    const keyring = new Keyring(h.config.masterKey!, null);
    const product = async () => ({
      id: created.id,
      version: (await h.database.db.selectFrom('products').select('version').where('id', '=', created.id).executeTakeFirstOrThrow()).version,
    });

    const signing = await keyring.signingKeyFor(t, await product());
    expect(spki(signing.signer.publicKey)).toEqual(spki(rotated.publicKeyPem));
    const signed = Buffer.from('a licence');
    expect(verifyBytes(createPublicKey(rotated.publicKeyPem), signed, await signing.signer.sign(signed))).toBe(true);
    expect((await keyring.signingKeyFor(t, await product())).signer).toBe(signing.signer);
    const verifying = await keyring.keysFor(t, created.id);
    expect(verifying.map((k) => spki(k.publicKey))).toEqual([spki(rotated.publicKeyPem), spki(created.publicKeyPem)]);
    expect(verifying[0]!.keyId).toBe(signing.keyId);

    await expect(keyring.signingKeyFor(tenant(h.database.db, org.id + 1000), await product())).rejects.toMatchObject({ status: 404 });
    const refused = new Keyring(randomBytes(32), null).signingKeyFor(t, await product());
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    await expect(refused).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/signing key is unavailable/) });

    // A key changes only with its product's version: the next version brings the next key.
    const again = (await h.admin('PUT', `/products/${created.id}`, { regenerateKey: true })).data;
    expect(spki((await keyring.signingKeyFor(t, await product())).signer.publicKey)).toEqual(spki(again.publicKeyPem));
  });
});

describe('imported keys', () => {
  it('imports PKCS#8, traditional and encrypted PEM, taking the algorithm from the key when none is given', async () => {
    const pkcs8 = ed25519();
    const traditional = rsa2048();
    const encrypted = p256();
    const cases = [
      { pair: pkcs8, body: { privateKeyPem: pkcs8.privateKey.export({ type: 'pkcs8', format: 'pem' }) }, algorithm: 'ED25519' },
      {
        pair: traditional,
        body: { algorithm: 'RSA_2048', privateKeyPem: traditional.privateKey.export({ type: 'pkcs1', format: 'pem' }) },
        algorithm: 'RSA_2048',
      },
      {
        pair: encrypted,
        body: {
          privateKeyPem: encrypted.privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'open sesame' }),
          privateKeyPassphrase: 'open sesame',
        },
        algorithm: 'EC_P256',
      },
      {
        pair: encrypted,
        body: {
          privateKeyPem: encrypted.privateKey.export({ type: 'sec1', format: 'pem', cipher: 'aes-128-cbc', passphrase: 'traditional too' }),
          privateKeyPassphrase: 'traditional too',
        },
        algorithm: 'EC_P256',
      },
    ];
    for (const { pair, body, algorithm } of cases) {
      const response = await create(body);
      expect(response.statusCode, response.body).toBe(201);
      expect(response.data).toMatchObject({ algorithm, keyOrigin: 'imported', certificateType: 'SELF_SIGNED', keyState: 'OK' });
      expect(spki(response.data.publicKeyPem)).toEqual(spki(pair.publicKey));
      expectCertificateOf(response.data);
    }
  });

  it.each([
    [
      () => ({ privateKeyPem: p256().privateKey.export({ type: 'pkcs8', format: 'pem' }), algorithm: 'ED25519' }),
      /^PEM private key \(privateKeyPem\): the key is ECDSA P-256 but the algorithm asked for is ED25519$/,
    ],
    [
      () => ({ privateKeyPem: rsa2048().privateKey.export({ type: 'pkcs1', format: 'pem' }), algorithm: 'RSA_4096' }),
      /^PEM private key \(privateKeyPem\): the key is RSA 2048-bit but the algorithm asked for is RSA_4096$/,
    ],
    [
      () => ({ privateKeyPem: generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) }),
      /^PEM private key \(privateKeyPem\): the key is not/,
    ],
    [
      () => ({ privateKeyPem: generateKeyPairSync('ed448').privateKey.export({ type: 'pkcs8', format: 'pem' }) }),
      /^PEM private key \(privateKeyPem\): the key is not/,
    ],
    [() => ({ privateKeyPem: 'not a key' }), /^PEM private key \(privateKeyPem\): not a readable PEM private key/],
    [
      () => ({ privateKeyPem: ed25519().publicKey.export({ type: 'spki', format: 'pem' }) }),
      /^PEM private key \(privateKeyPem\): not a readable PEM private key/,
    ],
    [
      () => ({ privateKeyPem: p256().privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'right one' }) }),
      /^Private key passphrase \(privateKeyPassphrase\): the key is encrypted/,
    ],
    [
      () => ({
        privateKeyPem: p256().privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'right one' }),
        privateKeyPassphrase: 'wrong one',
      }),
      /^Private key passphrase \(privateKeyPassphrase\): does not open the key$/,
    ],
    [
      () => ({ privateKeyPem: ed25519().privateKey.export({ type: 'pkcs8', format: 'pem' }), keyOrigin: 'managed' }),
      /^Key origin \(keyOrigin\): a key sent as PEM or in a PKCS#12 keystore is an imported key/,
    ],
  ])('refuses a key that does not fit with 400 saying why (%#)', async (body, message) => {
    const response = await create(body());
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(message);
  });

  it('edits a product with a managed or an imported key, keeping its key', async () => {
    await expectEditsKeepKey(h.admin, (await create({ algorithm: 'EC_P256' })).data);
    await expectEditsKeepKey(h.admin, (await create({ privateKeyPem: ed25519().privateKey.export({ type: 'pkcs8', format: 'pem' }) })).data);
  });

  it('replaces an imported key only by another import', async () => {
    const created = (await create({ privateKeyPem: ed25519().privateKey.export({ type: 'pkcs8', format: 'pem' }) })).data;
    const regenerate = await h.admin('PUT', `/products/${created.id}`, { regenerateKey: true });
    expect(regenerate.statusCode).toBe(400);
    expect(regenerate.data.error).toMatch(/^Regenerate key \(regenerateKey\): the key is imported/);
    const next = ed25519();
    const replaced = await h.admin('PUT', `/products/${created.id}`, { privateKeyPem: next.privateKey.export({ type: 'pkcs8', format: 'pem' }) });
    expect(replaced.statusCode).toBe(200);
    expect(spki(replaced.data.publicKeyPem)).toEqual(spki(next.publicKey));
    const managed = await h.admin('PUT', `/products/${created.id}`, { regenerateKey: true, keyOrigin: 'managed' });
    expect(managed.data.keyOrigin).toBe('managed');
    expect((await h.admin('GET', `/products/${created.id}/keys`)).data.map((k: { current: boolean }) => k.current)).toEqual([true, false, false]);
  });
});

describe('certificates', () => {
  it('accepts an imported certificate over the imported key and refuses one over another key', async () => {
    const pair = p256();
    const privateKeyPem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' });
    const first = (await create({ privateKeyPem })).data;
    const imported = await create({ privateKeyPem, certificatePem: first.certificatePem });
    expect(imported.statusCode).toBe(201);
    expect(imported.data).toMatchObject({
      certificateType: 'IMPORTED',
      certificatePem: first.certificatePem,
      certificateSubject: first.certificateSubject,
      certificateExpiresAt: first.certificateExpiresAt,
      certificateExpired: false,
    });

    const other = (await create()).data;
    const mismatched = await create({ privateKeyPem, certificatePem: other.certificatePem });
    expect(mismatched.statusCode).toBe(400);
    expect(mismatched.data.error).toBe("PEM certificate (certificatePem): the certificate's public key is not the product's key");
    const garbage = await create({ privateKeyPem, certificatePem: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' });
    expect(garbage.data.error).toMatch(/^PEM certificate \(certificatePem\): not a readable X.509 certificate/);
    const two = await create({ privateKeyPem, certificatePem: first.certificatePem + first.certificatePem });
    expect(two.data.error).toMatch(/^PEM certificate \(certificatePem\): send exactly one/);
    // A managed key is new: no certificate sent with it can be over it.
    expect((await create({ certificatePem: first.certificatePem })).statusCode).toBe(400);
  });

  it('has none with certificateType NONE, and follows certificateType changes', async () => {
    const none = await create({ certificateType: 'NONE', algorithm: 'EC_P256' });
    expect(none.data).toMatchObject({
      certificateType: 'NONE',
      certificatePem: null,
      certificateSubject: null,
      certificateExpiresAt: null,
      certificateExpired: false,
    });
    const download = await h.admin('GET', `/products/${none.data.id}/certificate`);
    expect(download.statusCode).toBe(404);
    expect(download.data.error).toMatch(/no certificate/);

    const selfSigned = await h.admin('PUT', `/products/${none.data.id}`, { certificateType: 'SELF_SIGNED' });
    expect(selfSigned.data.keyFingerprint).toBe(none.data.keyFingerprint);
    expectCertificateOf(selfSigned.data);
    const removed = await h.admin('PUT', `/products/${none.data.id}`, { certificateType: 'NONE' });
    expect(removed.data.certificatePem).toBeNull();
    const reimported = await h.admin('PUT', `/products/${none.data.id}`, { certificatePem: selfSigned.data.certificatePem });
    expect(reimported.data).toMatchObject({ certificateType: 'IMPORTED', certificatePem: selfSigned.data.certificatePem });
    const rotate = await h.admin('PUT', `/products/${none.data.id}`, { regenerateKey: true });
    expect(rotate.data.error).toMatch(/^PEM certificate \(certificatePem\): a new key needs its own certificate/);
  });
});

describe('a key sealed under another master key', () => {
  it('still reads, with keyState ERROR, and refuses only what needs the private key', async () => {
    const created = (await create({ certificateType: 'NONE' })).data;
    const token = await h.createToken(['products:write']);
    const restarted = await buildApp({ config: h.config, database: h.database, masterKey: randomBytes(32), logger: false });
    try {
      const call = instanceCaller(restarted, token);
      const read = await call('GET', `/products/${created.id}`);
      expect(read.statusCode).toBe(200);
      const product = read.json();
      expect(product).toMatchObject({ keyState: 'ERROR', publicKeyPem: created.publicKeyPem });
      expect(product.keyError).toMatch(/does not open with this master key/);
      expect((await call('GET', '/products')).statusCode).toBe(200);
      expect((await call('GET', `/products/${created.id}/public-key`)).body).toBe(created.publicKeyPem);

      const signCertificate = await call('PUT', `/products/${created.id}`, { certificateType: 'SELF_SIGNED' });
      expect(signCertificate.statusCode).toBe(503);
      expect(signCertificate.json().error).toMatch(/signing key is unavailable/);
      // A new key is sealed under the key this instance has, and opens again.
      const rotated = await call('PUT', `/products/${created.id}`, { regenerateKey: true });
      expect(rotated.json()).toMatchObject({ keyState: 'OK', keyError: null });
    } finally {
      await restarted.close();
    }
  });
});

describe('secrets', () => {
  it('never shows an imported private key or its passphrase in an answer or a log line', async () => {
    const { app: logged, lines } = await h.loggedApp();
    const call = instanceCaller(logged, await h.createToken(['products:write', 'activity:read']));
    try {
      const passphrase = 'a very particular passphrase';
      const privateKeyPem = rsa2048().privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase }) as string;
      const plainPem = ed25519().privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
      const bodies: string[] = [];
      const send = async (method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown) => {
        const response = await call(method, url, body);
        bodies.push(response.body);
        return response;
      };
      const created = await send('POST', '/products', { productKey: 'secret', name: 'Secret', privateKeyPem, privateKeyPassphrase: passphrase });
      expect(created.statusCode).toBe(201);
      const id = created.json().id;
      await send('POST', '/products', { productKey: 'wrong', name: 'Wrong', privateKeyPem, privateKeyPassphrase: 'not it' });
      await send('POST', '/products', { productKey: 'bad', name: 'Bad', privateKeyPem: privateKeyPem.slice(0, 200) });
      await send('POST', '/products', { productKey: 'mismatch', name: 'Mismatch', privateKeyPem: plainPem, algorithm: 'RSA_2048' });
      await send('PUT', `/products/${id}`, { privateKeyPem: plainPem, certificateType: 'NONE' });
      await send('GET', `/products/${id}`);
      await send('GET', `/products/${id}/keys`);
      await send('GET', '/dashboard/activity');

      const secrets = [passphrase, ...[privateKeyPem, plainPem].flatMap((pem) => pem.split('\n').filter((line) => line && !line.startsWith('-----')))];
      expect(lines.length).toBeGreaterThan(10);
      for (const text of [...bodies, ...lines]) {
        for (const secret of secrets) expect(text).not.toContain(secret);
      }
    } finally {
      await logged.close();
    }
  });
});
