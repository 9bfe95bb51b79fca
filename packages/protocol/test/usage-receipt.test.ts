import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signUsageReceipt, usageReceiptMessage, verifyUsageReceipt, type UsageReceiptFields } from '../src/index.js';

// DESIGN.md 19's example: L lid, N nonce, D fpDigest.
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

describe('usageReceiptMessage (SVCU1)', () => {
  it('joins the fields with 0x1F in DESIGN.md 19 order, counts included', () => {
    expect(usageReceiptMessage(example).toString('utf8').split('\x1f').join('␟')).toBe(
      'SVCU1␟L␟ACTIVE␟N␟2026-11-22T07:00:00.000Z␟2026-11-20T09:00:00.000Z␟D␟1␟e-1␟ACCEPTED␟1␟exports␟3␟1000000000000␟0␟999999999997␟2026-12-01T00:00:00.000Z',
    );
  });

  it('writes null and absent as empty, so an empty last field ends the text in 0x1F', () => {
    const unlimited = { ...example, status: '', boundAt: '', events: [], meters: [{ key: 'seats', used: 0, limit: null, overage: null, remaining: null, resetsAt: null }] };
    expect(usageReceiptMessage(unlimited).toString('utf8')).toBe('SVCU1\x1fL\x1f\x1fN\x1f2026-11-22T07:00:00.000Z\x1f\x1fD\x1f0\x1f1\x1fseats\x1f0\x1f\x1f\x1f\x1f');
    expect(usageReceiptMessage({ ...unlimited, meters: [] }).toString('utf8')).toBe('SVCU1\x1fL\x1f\x1fN\x1f2026-11-22T07:00:00.000Z\x1f\x1fD\x1f0\x1f0');
  });

  it.each([
    ['a separator in a field', { ...example, events: [{ id: 'e\x1f1', result: 'ACCEPTED' }] }],
    ['a negative count', { ...example, meters: [{ ...example.meters[0]!, used: -1 }] }],
    ['a fraction', { ...example, meters: [{ ...example.meters[0]!, limit: 1.5 }] }],
    ['an unsafe integer', { ...example, meters: [{ ...example.meters[0]!, remaining: 2 ** 53 }] }],
  ])('refuses %s', (_name, fields) => {
    expect(() => usageReceiptMessage(fields as UsageReceiptFields)).toThrow(TypeError);
  });

  it('verifies with the signing key only, over exactly these fields', () => {
    const keys = generateKeyPairSync('ed25519');
    const other = generateKeyPairSync('ed25519');
    const receipt = signUsageReceipt(example, keys.privateKey);
    expect(verifyUsageReceipt(example, receipt, [other.publicKey, keys.publicKey])).toBe(true);
    expect(verifyUsageReceipt(example, receipt, [other.publicKey])).toBe(false);
    expect(verifyUsageReceipt({ ...example, events: [{ id: 'e-1', result: 'LIMIT_REACHED' }] }, receipt, [keys.publicKey])).toBe(false);
    expect(verifyUsageReceipt({ ...example, meters: [{ ...example.meters[0]!, used: 2 }] }, receipt, [keys.publicKey])).toBe(false);
    expect(verifyUsageReceipt(example, `${receipt}=`, [keys.publicKey])).toBe(false);
  });
});
