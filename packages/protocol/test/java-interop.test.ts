import { describe, it, expect, beforeAll } from 'vitest';
import type { KeyObject } from 'node:crypto';
import {
  ALGORITHMS,
  ALGORITHM_INFO,
  buildFingerprint,
  fpDigest,
  generateAlgorithmKeyPair,
  parseLicence,
  receiptMessage,
  signLicence,
  signReceipt,
  type Algorithm,
} from '../src/index.js';
import { javaAvailable, javaVerify, type JavaVerifyItem } from './java-verifier.js';
import { keysOf, loadVectors } from '../test-vectors/index.js';

const hasJava = javaAvailable();
if (!hasJava) console.warn('Java interoperability tests skipped: javac/java not found on PATH (install a JDK 17 to run them).');

const fingerprint = buildFingerprint({ machine: 'm', host: 'h', mac: 'a', cpu: 'c', disk: 'd' });

function licenceItem(algorithm: Algorithm, licence: string, publicKey: KeyObject): JavaVerifyItem & { message: Buffer } {
  const dot = licence.indexOf('.');
  return {
    algorithm: ALGORITHM_INFO[algorithm].signatureAlgorithm,
    publicKey,
    message: Buffer.from(licence.slice(0, dot), 'ascii'),
    signature: Buffer.from(licence.slice(dot + 1), 'base64url'),
  };
}

describe.skipIf(!hasJava)('a Java 17 verifier', () => {
  const pairs = new Map<Algorithm, { privateKey: KeyObject; publicKey: KeyObject }>();
  beforeAll(async () => {
    const generated = await Promise.all(ALGORITHMS.map((a) => generateAlgorithmKeyPair(a)));
    for (const [i, a] of ALGORITHMS.entries()) pairs.set(a, generated[i]!);
  }, 60_000);

  it('accepts a licence of each algorithm and refuses tampered ones', async () => {
    const items: JavaVerifyItem[] = [];
    const expected: boolean[] = [];
    for (const algorithm of ALGORITHMS) {
      const { privateKey, publicKey } = pairs.get(algorithm)!;
      const licence = signLicence(
        { lid: `lid-${algorithm}`, prd: 'p', org: 'o', typ: 'ONLINE', lic: 'Zoë', iat: 1, exp: 2, grace: 0, fp: fingerprint, mm: 1, chk: 1, max: 2 },
        privateKey,
      );
      const item = licenceItem(algorithm, licence, publicKey);
      items.push(item);
      expected.push(true);
      const payload = Buffer.from(item.message);
      payload[10]! ^= 1;
      items.push({ ...item, message: payload });
      expected.push(false);
      const signature = Buffer.from(item.signature);
      signature[signature.length - 1]! ^= 1;
      items.push({ ...item, signature });
      expected.push(false);
    }
    expect(await javaVerify(items)).toEqual(expected);
  }, 60_000);

  it('accepts a receipt of each algorithm', async () => {
    const items = ALGORITHMS.map((algorithm): JavaVerifyItem => {
      const { privateKey, publicKey } = pairs.get(algorithm)!;
      const fields = {
        lid: 'l',
        status: 'ACTIVE',
        nonce: 'abcdefghijklmnop',
        checkedAt: '2026-01-01T00:00:00.000Z',
        boundAt: null,
        fpDigest: fpDigest(fingerprint),
      };
      return {
        algorithm: ALGORITHM_INFO[algorithm].signatureAlgorithm,
        publicKey,
        message: receiptMessage(fields),
        signature: Buffer.from(signReceipt(fields, privateKey), 'base64url'),
      };
    });
    expect(await javaVerify(items)).toEqual(items.map(() => true));
  }, 60_000);

  it('builds SVCR1 and SVCR2 messages from the fields and verifies them, refusing the other tag', async () => {
    const items: JavaVerifyItem[] = [];
    const expected: boolean[] = [];
    for (const algorithm of ALGORITHMS) {
      const { privateKey, publicKey } = pairs.get(algorithm)!;
      const base = {
        lid: 'l',
        status: 'ACTIVE',
        nonce: 'abcdefghijklmnop',
        checkedAt: '2026-01-01T00:00:00.000Z',
        boundAt: '2025-12-31T23:50:00.000Z',
        fpDigest: fpDigest(fingerprint),
      };
      const lease = { ...base, leaseEndsAt: '2026-01-01T00:15:00.000Z' };
      const order = [base.lid, base.status, base.nonce, base.checkedAt, base.boundAt, base.fpDigest];
      const svcr2 = Buffer.from(signReceipt(lease, privateKey, 'SVCR2'), 'base64url');
      const svcr1 = Buffer.from(signReceipt(base, privateKey), 'base64url');
      const item = (tag: string, fields: string[], signature: Buffer): JavaVerifyItem => ({
        algorithm: ALGORITHM_INFO[algorithm].signatureAlgorithm,
        publicKey,
        message: { tag, fields },
        signature,
      });
      items.push(item('SVCR2', [...order, lease.leaseEndsAt], svcr2), item('SVCR1', order, svcr1));
      expected.push(true, true);
      items.push(item('SVCR2', [...order, '2026-01-01T01:15:00.000Z'], svcr2), item('SVCR1', order, svcr2), item('SVCR2', [...order, ''], svcr1));
      expected.push(false, false, false);
    }
    expect(await javaVerify(items)).toEqual(expected);
  }, 60_000);

  it('accepts every golden licence and receipt', async () => {
    const items: JavaVerifyItem[] = [];
    for (const vector of loadVectors().algorithms) {
      const { publicKey } = keysOf(vector);
      items.push(licenceItem(vector.algorithm, vector.licence, publicKey));
      expect(parseLicence(vector.licence).payloadPart).toBe(vector.licence.split('.')[0]);
      for (const receipt of vector.receipts) {
        items.push({
          algorithm: vector.signatureAlgorithm,
          publicKey,
          message: Buffer.from(receipt.messageHex, 'hex'),
          signature: Buffer.from(receipt.receipt, 'base64url'),
        });
      }
      const floating = vector.floating!;
      items.push(licenceItem(vector.algorithm, floating.licence, publicKey));
      for (const receipt of floating.receipts) {
        const { lid, status, nonce, checkedAt, boundAt, fpDigest: digest, leaseEndsAt } = receipt.fields;
        items.push({
          algorithm: vector.signatureAlgorithm,
          publicKey,
          message: { tag: receipt.tag!, fields: [lid, status, nonce, checkedAt, boundAt, digest, leaseEndsAt] },
          signature: Buffer.from(receipt.receipt, 'base64url'),
        });
      }
    }
    expect(await javaVerify(items)).toEqual(items.map(() => true));
  }, 60_000);
});
