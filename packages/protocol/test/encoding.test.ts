import { describe, it, expect } from 'vitest';
import { b64uDecode, b64uEncode, isCanonicalB64u, MalformedError } from '../src/index.js';

describe('base64url', () => {
  it('encodes without padding, strings as UTF-8', () => {
    expect(b64uEncode('')).toBe('');
    expect(b64uEncode('f')).toBe('Zg');
    expect(b64uEncode('fo')).toBe('Zm8');
    expect(b64uEncode('foo')).toBe('Zm9v');
    expect(b64uEncode(new Uint8Array([0xfb, 0xff]))).toBe('-_8');
    expect(b64uEncode('é')).toBe('w6k');
  });

  it('round-trips every length and byte', () => {
    for (let length = 0; length < 40; length++) {
      const bytes = Buffer.from(Array.from({ length }, (_, i) => (i * 97 + length) & 0xff));
      const text = b64uEncode(bytes);
      expect(isCanonicalB64u(text)).toBe(true);
      expect(b64uDecode(text, 'x', true).equals(bytes)).toBe(true);
    }
  });

  it.each([
    ['padding', 'Zg=='],
    ['single padding', 'Zm8='],
    ['standard alphabet +', '+_8'],
    ['standard alphabet /', '-/8'],
    ['whitespace', 'Zm9v '],
    ['newline', 'Zm9v\n'],
    ['inner space', 'Zm 9v'],
    ['non-ASCII', 'Zm9é'],
    ['impossible length', 'Zm9vY'],
    ['trailing bits set (2 chars)', 'Zh'],
    ['trailing bits set (3 chars)', 'Zm9'],
    ['dot', 'Zm.v'],
  ])('refuses %s', (_name, text) => {
    expect(isCanonicalB64u(text)).toBe(false);
    expect(() => b64uDecode(text)).toThrow(MalformedError);
  });

  it('refuses the empty string unless allowed', () => {
    expect(() => b64uDecode('')).toThrow(MalformedError);
    expect(b64uDecode('', 'x', true).length).toBe(0);
  });

  it('names the value in the error', () => {
    expect(() => b64uDecode('a=', 'licence signature')).toThrow(/licence signature/);
  });

  it('agrees with the definition "re-encodes to itself" on random input', () => {
    // The decoder's fast check leans on how Node decodes foreign characters; this holds it to
    // the definition, so a change in Node shows up here.
    const pool = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_AQgw+/= .\n\t!\u00e9\u0100\ud83d\ude00';
    let seed = 12345;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    let canonical = 0;
    for (let i = 0; i < 200_000; i++) {
      const length = random(12);
      const clean = random(3) === 0;
      let text = '';
      for (let j = 0; j < length; j++) text += pool[random(clean ? 64 : pool.length)];
      const reference = Buffer.from(text, 'base64url').toString('base64url') === text;
      if (isCanonicalB64u(text) !== reference) throw new Error(`disagrees on ${JSON.stringify(text)}`);
      let decoded: Buffer | null = null;
      try {
        decoded = b64uDecode(text, 'x', true);
      } catch {
        // refused
      }
      if ((decoded !== null) !== reference) throw new Error(`b64uDecode disagrees on ${JSON.stringify(text)}`);
      if (decoded !== null && !decoded.equals(Buffer.from(text, 'base64url'))) throw new Error('wrong bytes');
      if (reference) canonical++;
    }
    expect(canonical).toBeGreaterThan(10_000);
  });

  it('refuses every non-canonical final character', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const accepted = [...alphabet].filter((c) => isCanonicalB64u(`A${c}`));
    expect(accepted).toEqual(['A', 'Q', 'g', 'w']);
    for (const c of alphabet) {
      if (isCanonicalB64u(`AA${c}`)) expect(b64uEncode(Buffer.from(`AA${c}`, 'base64url'))).toBe(`AA${c}`);
    }
  });
});
