import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { seal, unseal, UnsealError } from '../../src/keys/sealing.js';

describe('sealing', () => {
  const masterKey = randomBytes(32);
  const secret = Buffer.from('private key bytes');

  it('opens what it sealed, and seals the same bytes differently each time', () => {
    const sealed = seal(masterKey, secret, 'fingerprint');
    expect(sealed).toMatch(/^sealed-v1(\$[A-Za-z0-9+/]+={0,2}){6}$/);
    expect(sealed).not.toContain(secret.toString('base64'));
    expect(unseal(masterKey, sealed, 'fingerprint')).toEqual(secret);
    expect(seal(masterKey, secret, 'fingerprint')).not.toBe(sealed);
  });

  it.each([
    ['another master key', (s: string) => unseal(randomBytes(32), s, 'fingerprint')],
    ['another context', (s: string) => unseal(masterKey, s, 'another fingerprint')],
    ['a tampered ciphertext', (s: string) => unseal(masterKey, s.replace(/\$[^$]{4}(?=[^$]*\$[^$]*$)/, '$AAAA'), 'fingerprint')],
  ])('refuses to open with %s, saying so safely', (_what, open) => {
    const sealed = seal(masterKey, secret, 'fingerprint');
    expect(() => open(sealed)).toThrow(UnsealError);
    expect(() => open(sealed)).toThrow(/does not open with this master key/);
  });

  it('refuses a text in no known format', () => {
    expect(() => unseal(masterKey, 'sealed-v0$a$b', 'fingerprint')).toThrow(/not in a format this version reads/);
  });
});
