// The check path's memories (check/remembered.ts): what they may serve, and their bound.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildFingerprint, fpDigest, parseFingerprint, signLicence, MalformedError } from '@licensor/protocol';
import { sha256Hex } from '../../src/core/secrets.js';
import { BoundedMap, ReadFingerprints, TokenDigests, VerifiedLicences } from '../../src/check/remembered.js';
import type { OpenedKey } from '../../src/keys/keyring.js';

const keyOf = (keyId: number) => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, opened: { keyId, publicKey, signer: null, error: null } satisfies OpenedKey };
};
const licence = (privateKey: ReturnType<typeof keyOf>['privateKey'], lid = 'L-1') =>
  signLicence({ lid, prd: 'app', org: 'acme', iat: 1_700_000_000, grace: 0, mm: 1, typ: 'ONLINE' }, privateKey);

describe('VerifiedLicences', () => {
  it('serves a remembered verdict only to the very key set it was reached with', () => {
    const a = keyOf(1);
    const b = keyOf(2);
    const verified = new VerifiedLicences();
    const text = licence(a.privateKey);
    const keys = [a.opened];
    expect(verified.read(text, keys)?.key).toBe(a.opened);
    // Remembered against the array itself (the product cache never changes one in place): not verified again.
    keys[0] = b.opened;
    expect(verified.read(text, keys)?.key).toBe(a.opened);
    // Another set, even one holding the same key, is verified afresh.
    expect(verified.read(text, [b.opened])).toBeNull();
    expect(verified.read(text, [b.opened, a.opened])?.key).toBe(a.opened);
    expect(verified.read(text, [a.opened])?.key).toBe(a.opened);
  });

  it('never remembers a failure, and refuses a malformed string as parsing does', () => {
    const a = keyOf(1);
    const b = keyOf(2);
    const verified = new VerifiedLicences();
    const keys = [a.opened];
    const foreign = licence(b.privateKey);
    expect(verified.read(foreign, keys)).toBeNull();
    expect(verified.read(foreign, keys)).toBeNull();
    expect(() => verified.read('not.a-licence!', keys)).toThrow(MalformedError);
  });
});

describe('TokenDigests', () => {
  it('matches a secret against the hash as it is now, and remembers only a secret that matched', () => {
    const tokens = new TokenDigests();
    const secret = 'a'.repeat(64);
    expect(tokens.matches(sha256Hex(secret), secret)).toBe(true);
    expect(tokens.matches(sha256Hex(secret), secret)).toBe(true);
    // The token rotated: the remembered digest no longer matches the product's hash.
    expect(tokens.matches(sha256Hex('b'.repeat(64)), secret)).toBe(false);
    expect(tokens.matches(sha256Hex(secret), 'c'.repeat(64))).toBe(false);
  });
});

describe('ReadFingerprints', () => {
  it('answers what parsing and digesting answer, the same frozen parts every time', () => {
    const fingerprints = new ReadFingerprints();
    const fingerprint = buildFingerprint({ machine: 'm-1', host: 'h', mac: null, cpu: 'c', disk: 'd' });
    const read = fingerprints.of(fingerprint);
    expect(read).toEqual({ parts: parseFingerprint(fingerprint), digest: fpDigest(fingerprint) });
    expect(fingerprints.of(fingerprint).parts).toBe(read.parts);
    expect(Object.isFrozen(read.parts)).toBe(true);
  });

  it('refuses a malformed fingerprint as parsing does, every time', () => {
    const fingerprints = new ReadFingerprints();
    const good = buildFingerprint({ machine: 'm-1' });
    const broken = `${good.slice(0, -1)}${good.endsWith('0') ? '1' : '0'}`;
    expect(() => fingerprints.of(broken)).toThrow(MalformedError);
    expect(() => fingerprints.of(broken)).toThrow(MalformedError);
  });
});

describe('BoundedMap', () => {
  it('forgets the oldest entry past its limit', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 3);
    map.set('c', 4);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, 2, 4]);
  });
});
