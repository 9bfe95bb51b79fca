import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { derToRaw, rawToDer } from '../../src/keys/ecdsa.js';

describe('ECDSA signature encodings', () => {
  for (const [curve, size] of [
    ['P-256', 32],
    ['P-384', 48],
  ] as const) {
    it(`turns a token's raw r‖s into the DER node:crypto and the JDK verify, and back (${curve})`, () => {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: curve });
      const digest = size === 32 ? 'sha256' : 'sha384';
      // Enough signatures that some r or s have a high bit set or a leading zero byte.
      for (let i = 0; i < 200; i++) {
        const data = Buffer.from(`message ${i}`);
        const raw = sign(digest, data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
        const der = rawToDer(raw);
        expect(verify(digest, data, publicKey, der)).toBe(true);
        expect(derToRaw(der, size)).toEqual(raw);
        expect(derToRaw(sign(digest, data, privateKey), size)).toHaveLength(2 * size);
      }
    });
  }

  it('writes minimal INTEGERs: no leading zero unless the high bit is set', () => {
    const raw = Buffer.alloc(64);
    raw[31] = 1; // r = 1
    raw[32] = 0x80; // s has its high bit set
    const der = rawToDer(raw);
    expect(der.subarray(0, 5)).toEqual(Buffer.from([0x30, 3 + 35, 0x02, 0x01, 0x01]));
    expect(der.subarray(5, 8)).toEqual(Buffer.from([0x02, 33, 0x00]));
    expect(derToRaw(der, 32)).toEqual(raw);
  });
});
