import { describe, expect, it } from 'vitest';
import {
  generateAlgorithmKeyPair,
  isMeterClaim,
  licenceParams,
  licencePayload,
  orderClaims,
  signBytes,
  usageReceiptMessage,
  verifyUsageReceipt,
  type UsageReceiptFields,
} from '../src/index.js';

// DESIGN.md 19's example, L, N and D standing for lid, nonce and fpDigest.
const example: UsageReceiptFields = {
  lid: 'L',
  status: 'ACTIVE',
  nonce: 'N',
  checkedAt: '2026-11-22T07:00:00.000Z',
  boundAt: '2026-11-20T09:00:00.000Z',
  fpDigest: 'D',
  events: [{ id: 'e-1', result: 'ACCEPTED' }],
  meters: [{ key: 'exports', used: 3, limit: 1_000_000_000_000, overage: 0, remaining: 999_999_999_997, resetsAt: '2026-12-01T00:00:00.000Z' }],
};

describe('SVCU1', () => {
  it('is DESIGN.md 19 byte for byte', () => {
    const text =
      'SVCU1\x1fL\x1fACTIVE\x1fN\x1f2026-11-22T07:00:00.000Z\x1f2026-11-20T09:00:00.000Z\x1fD\x1f1\x1fe-1\x1fACCEPTED\x1f1\x1f' +
      'exports\x1f3\x1f1000000000000\x1f0\x1f999999999997\x1f2026-12-01T00:00:00.000Z';
    expect(usageReceiptMessage(example).toString('utf8')).toBe(text);
  });

  it('writes null and absent fields empty, so an empty last field ends the text in 0x1F', () => {
    const text = usageReceiptMessage({
      ...example,
      status: undefined,
      boundAt: null,
      events: [],
      meters: [{ key: 'k', used: 0, limit: null, overage: 0, remaining: null, resetsAt: null }],
    });
    expect(text.toString('utf8')).toBe('SVCU1\x1fL\x1f\x1fN\x1f2026-11-22T07:00:00.000Z\x1f\x1fD\x1f0\x1f1\x1fk\x1f0\x1f\x1f0\x1f\x1f');
    expect(
      usageReceiptMessage({ ...example, events: [], meters: [] })
        .toString('utf8')
        .endsWith('\x1fD\x1f0\x1f0'),
    ).toBe(true);
  });

  it('refuses a field holding the separator and a non-integer count', () => {
    expect(() => usageReceiptMessage({ ...example, events: [{ id: 'a\x1fb', result: 'ACCEPTED' }] })).toThrow(TypeError);
    expect(() => usageReceiptMessage({ ...example, meters: [{ ...example.meters[0]!, used: 1.5 }] })).toThrow(TypeError);
  });

  it('verifies with the key that signed it, and not once a field changes', async () => {
    const { privateKey, publicKey } = await generateAlgorithmKeyPair('ED25519');
    const receipt = signBytes(privateKey, usageReceiptMessage(example)).toString('base64url');
    expect(verifyUsageReceipt(example, receipt, [publicKey])).toBe(true);
    expect(verifyUsageReceipt({ ...example, events: [{ id: 'e-1', result: 'LIMIT_REACHED' }] }, receipt, [publicKey])).toBe(false);
    expect(verifyUsageReceipt(example, `${receipt}=`, [publicKey])).toBe(false);
  });
});

describe('mtr', () => {
  const base = { lid: 'l', prd: 'p', org: 'o', typ: 'ONLINE' as const, iat: 1, grace: 0, mm: 1, chk: 120, max: 120 };
  it('is signed after max (and brw), before the parameters, each meter as {k, p, l, o}', () => {
    const input = { ...base, mtr: [{ k: 'exports', p: 'MONTH' as const, l: 1000, o: null }], params: [['tier', 'pro']] as const };
    const json = licencePayload(input);
    expect(json).toBe(
      '{"v":3,"lid":"l","prd":"p","org":"o","typ":"ONLINE","iat":1,"grace":0,"mm":1,"chk":120,"max":120,"mtr":[{"k":"exports","p":"MONTH","l":1000,"o":null}],"tier":"pro"}',
    );
    expect(JSON.stringify(orderClaims(input))).toBe(json);
    const claims = JSON.parse(json);
    expect(isMeterClaim(claims.mtr)).toBe(true);
    expect(licenceParams(claims)).toEqual({ tier: 'pro' });
  });
  it('is omitted without meters, and a kept parameter named mtr stays a parameter', () => {
    expect(licencePayload({ ...base, mtr: [] })).not.toContain('mtr');
    const claims = JSON.parse(licencePayload({ ...base, params: [['mtr', 'legacy']] }));
    expect(isMeterClaim(claims.mtr)).toBe(false);
    expect(licenceParams(claims)).toEqual({ mtr: 'legacy' });
    expect(() => licencePayload({ ...base, mtr: [{ k: 'a', p: 'DAY', l: 1, o: 0 }], params: [['mtr', 'x']] })).toThrow(TypeError);
    expect(() => licencePayload({ ...base, mtr: [{ k: 'a', p: 'WEEK' as never, l: 1, o: 0 }] })).toThrow(TypeError);
  });
});
