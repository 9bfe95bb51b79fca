import { describe, it, expect, beforeAll } from 'vitest';
import { generateKeyPairSync, createPublicKey, type KeyObject } from 'node:crypto';
import { ALGORITHMS, ALGORITHM_INFO, algorithmOfKey, generateAlgorithmKeyPair, isAlgorithm, signBytes, verifyBytes, type Algorithm } from '../src/index.js';

const pairs = new Map<Algorithm, { privateKey: KeyObject; publicKey: KeyObject }>();

beforeAll(async () => {
  const generated = await Promise.all(ALGORITHMS.map((a) => generateAlgorithmKeyPair(a)));
  for (const [i, a] of ALGORITHMS.entries()) pairs.set(a, generated[i]!);
}, 60_000);

describe('algorithm metadata', () => {
  it('lists the six ids with labels and JDK names', () => {
    expect(ALGORITHMS).toEqual(['ED25519', 'RSA_2048', 'RSA_3072', 'RSA_4096', 'EC_P256', 'EC_P384']);
    expect(ALGORITHMS.map((a) => ALGORITHM_INFO[a].label)).toEqual(['Ed25519', 'RSA 2048-bit', 'RSA 3072-bit', 'RSA 4096-bit', 'ECDSA P-256', 'ECDSA P-384']);
    expect(ALGORITHMS.map((a) => ALGORITHM_INFO[a].signatureAlgorithm)).toEqual([
      'Ed25519',
      'SHA256withRSA',
      'SHA256withRSA',
      'SHA256withRSA',
      'SHA256withECDSA',
      'SHA384withECDSA',
    ]);
    expect(isAlgorithm('EC_P256')).toBe(true);
    expect(isAlgorithm('RSA_1024')).toBe(false);
    expect(isAlgorithm(undefined)).toBe(false);
  });
});

describe('algorithmOfKey', () => {
  it('recognises private and public keys of each algorithm', () => {
    for (const [algorithm, { privateKey, publicKey }] of pairs) {
      expect(algorithmOfKey(privateKey)).toBe(algorithm);
      expect(algorithmOfKey(publicKey)).toBe(algorithm);
      // A key re-read from PEM is a new KeyObject; detection must not depend on identity.
      expect(algorithmOfKey(createPublicKey(publicKey.export({ type: 'spki', format: 'pem' })))).toBe(algorithm);
    }
  });

  it('refuses other key types and sizes', () => {
    expect(algorithmOfKey(generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey)).toBeNull();
    expect(algorithmOfKey(generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).publicKey)).toBeNull();
    expect(algorithmOfKey(generateKeyPairSync('ed448').publicKey)).toBeNull();
    expect(algorithmOfKey(generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).publicKey)).toBeNull();
  });
});

describe('signBytes / verifyBytes', () => {
  const data = Buffer.from('the bytes that matter');

  it.each(ALGORITHMS)('%s signs and verifies', (algorithm) => {
    const { privateKey, publicKey } = pairs.get(algorithm)!;
    const signature = signBytes(privateKey, data);
    expect(verifyBytes(publicKey, data, signature)).toBe(true);
    expect(verifyBytes(publicKey, Buffer.from('the bytes that matteR'), signature)).toBe(false);
    const flipped = Buffer.from(signature);
    flipped[flipped.length - 1]! ^= 1;
    expect(verifyBytes(publicKey, data, flipped)).toBe(false);
    expect(verifyBytes(publicKey, data, Buffer.alloc(0))).toBe(false);
    expect(verifyBytes(publicKey, data, Buffer.alloc(signature.length, 0xff))).toBe(false);
  });

  it.each(ALGORITHMS)('%s uses the prescribed digest and encoding', (algorithm) => {
    const { privateKey, publicKey } = pairs.get(algorithm)!;
    const signature = signBytes(privateKey, data);
    if (algorithm.startsWith('EC_')) expect(signature[0]).toBe(0x30); // DER SEQUENCE, not raw r||s
    if (algorithm === 'ED25519') expect(signature.length).toBe(64);
    if (algorithm.startsWith('RSA_')) expect(signature.length).toBe(Number(algorithm.slice(4)) / 8);
    expect(verifyBytes(publicKey, data, signature)).toBe(true);
  });

  it("never verifies with another algorithm's key", () => {
    const signature = signBytes(pairs.get('EC_P256')!.privateKey, data);
    for (const [algorithm, { publicKey }] of pairs) {
      expect(verifyBytes(publicKey, data, signature)).toBe(algorithm === 'EC_P256');
    }
  });

  it('refuses to sign with a public or unsupported key, and never verifies with one', () => {
    expect(() => signBytes(pairs.get('ED25519')!.publicKey, data)).toThrow(TypeError);
    const other = generateKeyPairSync('ed448');
    expect(() => signBytes(other.privateKey, data)).toThrow(TypeError);
    expect(verifyBytes(other.publicKey, data, Buffer.alloc(114))).toBe(false);
  });
});
