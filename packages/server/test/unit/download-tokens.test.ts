import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { makeFeedToken, makeGrant, readFeedToken, readGrant, tokenKey } from '../../src/downloads/tokens.js';

const masterKey = randomBytes(32);
const grantKey = tokenKey(masterKey, 'grant');
const feedKey = tokenKey(masterKey, 'feed');
const lid = '0b7c2f4e-8d1a-4c3b-9f6e-2a5d7c8b9e01';

function forge(key: Buffer, prefix: string, json: string): string {
  const signed = `${prefix}.${Buffer.from(json).toString('base64url')}`;
  return `${signed}.${createHmac('sha256', key).update(signed).digest('base64url')}`;
}

describe('download grants (SVCG1)', () => {
  it('is the exact JSON under an HMAC with the HKDF-derived key, and reads back', () => {
    const token = makeGrant(grantKey, { art: 7, lid, exp: 1_800_000_000 });
    const [prefix, body] = token.split('.');
    expect(prefix).toBe('SVCG1');
    expect(Buffer.from(body as string, 'base64url').toString()).toBe(`{"art":7,"lid":"${lid}","exp":1800000000}`);
    const k = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'licensor download grant v1', 32));
    expect(token).toBe(forge(k, 'SVCG1', `{"art":7,"lid":"${lid}","exp":1800000000}`));
    expect(readGrant(grantKey, token, 1_800_000_000)).toEqual({ art: 7, lid, exp: 1_800_000_000 });
  });

  it('refuses a tampered MAC or body, another master key, a feed token, and expires after exp', () => {
    const token = makeGrant(grantKey, { art: 7, lid, exp: 1_800_000_000 });
    const last = token.at(-1) === 'A' ? 'B' : 'A';
    expect(readGrant(grantKey, `${token.slice(0, -1)}${last}`, 0)).toBe('BAD_TOKEN');
    const other = makeGrant(grantKey, { art: 8, lid, exp: 1_800_000_000 });
    expect(readGrant(grantKey, `${other.split('.').slice(0, 2).join('.')}.${token.split('.')[2]}`, 0)).toBe('BAD_TOKEN');
    expect(readGrant(tokenKey(randomBytes(32), 'grant'), token, 0)).toBe('BAD_TOKEN');
    expect(readGrant(feedKey, token, 0)).toBe('BAD_TOKEN');
    expect(readGrant(grantKey, token, 1_800_000_001)).toBe('EXPIRED');
    expect(readGrant(grantKey, 'SVCG1..', 0)).toBe('BAD_TOKEN');
    expect(readGrant(grantKey, `${token}.x`, 0)).toBe('BAD_TOKEN');
  });

  it.each([
    ['a space', `{"art":7, "lid":"${lid}","exp":1800000000}`],
    ['another key order', `{"lid":"${lid}","art":7,"exp":1800000000}`],
    ['an extra field', `{"art":7,"lid":"${lid}","exp":1800000000,"x":1}`],
    ['a float', `{"art":7.0,"lid":"${lid}","exp":1800000000}`],
    ['a string id', `{"art":"7","lid":"${lid}","exp":1800000000}`],
  ])('refuses JSON with %s even under a good MAC', (_what, json) => {
    expect(readGrant(grantKey, forge(grantKey, 'SVCG1', json), 0)).toBe('BAD_TOKEN');
  });
});

describe('feed tokens (SVCF1)', () => {
  it('carries lid, mid (or null) and gen exactly, and refuses tampering', () => {
    const token = makeFeedToken(feedKey, { lid, mid: 12, gen: 3 });
    expect(Buffer.from(token.split('.')[1] as string, 'base64url').toString()).toBe(`{"lid":"${lid}","mid":12,"gen":3}`);
    expect(readFeedToken(feedKey, token)).toEqual({ lid, mid: 12, gen: 3 });
    const offline = makeFeedToken(feedKey, { lid, mid: null, gen: 1 });
    expect(Buffer.from(offline.split('.')[1] as string, 'base64url').toString()).toBe(`{"lid":"${lid}","mid":null,"gen":1}`);
    expect(readFeedToken(feedKey, offline)).toEqual({ lid, mid: null, gen: 1 });
    expect(readFeedToken(grantKey, token)).toBeNull();
    expect(readFeedToken(feedKey, forge(feedKey, 'SVCF1', `{"lid":"${lid}","gen":3,"mid":12}`))).toBeNull();
    expect(readFeedToken(feedKey, forge(feedKey, 'SVCF1', `{"lid":"${lid}","mid":12,"gen":0}`))).toBeNull();
    expect(readFeedToken(feedKey, token.replace('SVCF1', 'SVCG1'))).toBeNull();
  });
});
