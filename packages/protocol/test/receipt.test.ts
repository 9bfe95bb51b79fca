import { describe, it, expect, beforeAll } from 'vitest';
import type { KeyObject } from 'node:crypto';
import {
  ALGORITHMS,
  generateAlgorithmKeyPair,
  receiptGrantsLicence,
  receiptMessage,
  receiptTagOf,
  signReceipt,
  verifyReceipt,
  type Algorithm,
  type ReceiptFields,
} from '../src/index.js';

const pairs = new Map<Algorithm, { privateKey: KeyObject; publicKey: KeyObject }>();
beforeAll(async () => {
  const generated = await Promise.all(ALGORITHMS.map((a) => generateAlgorithmKeyPair(a)));
  for (const [i, a] of ALGORITHMS.entries()) pairs.set(a, generated[i]!);
}, 60_000);

const fields: ReceiptFields = {
  lid: '0b8f6a52-3f0e-4c59-9a55-6a1d2f6f7c01',
  status: 'ACTIVE',
  nonce: 'abcdefghijklmnop',
  checkedAt: '2026-11-22T07:00:00.000Z',
  boundAt: '2026-01-01T00:00:00.000Z',
  fpDigest: '0123456789abcdef0123456789abcdef',
};

describe('receiptMessage', () => {
  it('joins the tag and six fields with 0x1F', () => {
    const message = receiptMessage(fields);
    expect(message.toString('utf8')).toBe(
      'SVCR1\x1f0b8f6a52-3f0e-4c59-9a55-6a1d2f6f7c01\x1fACTIVE\x1fabcdefghijklmnop\x1f2026-11-22T07:00:00.000Z\x1f2026-01-01T00:00:00.000Z\x1f0123456789abcdef0123456789abcdef',
    );
    expect([...message].filter((b) => b === 0x1f).length).toBe(6);
  });

  it('writes absent fields as empty strings, never "null"', () => {
    const message = receiptMessage({ lid: 'l', status: null, nonce: 'n', checkedAt: 't', fpDigest: 'd' });
    expect(message.toString('hex')).toBe(Buffer.from('SVCR1\x1fl\x1f\x1fn\x1ft\x1f\x1fd').toString('hex'));
    expect(receiptMessage({}).toString('hex')).toBe(`5356435231${'1f'.repeat(6)}`);
    expect(message.toString()).not.toContain('null');
    expect(message.toString()).not.toContain('undefined');
  });

  it('encodes as UTF-8', () => {
    expect(receiptMessage({ lid: 'é' }).subarray(6, 8).toString('hex')).toBe('c3a9');
  });

  it('refuses a field containing the separator', () => {
    expect(() => receiptMessage({ ...fields, nonce: 'a\x1fb' })).toThrow(TypeError);
  });
});

describe('SVCR2 (floating licences)', () => {
  const lease = { ...fields, leaseEndsAt: '2026-11-22T07:15:00.000Z' };

  it('appends leaseEndsAt after fpDigest under its own tag', () => {
    expect(receiptMessage(lease, 'SVCR2').toString('utf8')).toBe(
      `${receiptMessage(fields).toString('utf8').replace('SVCR1', 'SVCR2')}\x1f2026-11-22T07:15:00.000Z`,
    );
    expect(receiptMessage({}, 'SVCR2').toString('hex')).toBe(`5356435232${'1f'.repeat(7)}`);
  });

  it("is chosen by the presented term's v alone", () => {
    expect(receiptTagOf({ v: 5 })).toBe('SVCR2');
    expect(receiptTagOf({ v: 4 })).toBe('SVCR1');
    expect(receiptTagOf({ v: 3 })).toBe('SVCR1');
  });

  it('refuses a lease end under SVCR1, which cannot sign it, and an unknown tag', () => {
    expect(() => receiptMessage(lease, 'SVCR1')).toThrow(/leaseEndsAt/);
    expect(() => receiptMessage(fields, 'SVCR3' as never)).toThrow(/tag/);
    expect(() => receiptMessage({ ...lease, leaseEndsAt: 'a\x1fb' }, 'SVCR2')).toThrow(TypeError);
  });

  it.each(ALGORITHMS)('%s: signs and verifies, refuses a moved lease end or the other tag', (algorithm) => {
    const { privateKey, publicKey } = pairs.get(algorithm)!;
    const receipt = signReceipt(lease, privateKey, 'SVCR2');
    expect(verifyReceipt(lease, receipt, [publicKey], 'SVCR2')).toBe(true);
    expect(verifyReceipt({ ...lease, leaseEndsAt: '2026-11-22T08:15:00.000Z' }, receipt, [publicKey], 'SVCR2')).toBe(false);
    expect(verifyReceipt({ ...lease, leaseEndsAt: null }, receipt, [publicKey], 'SVCR2')).toBe(false);
    expect(verifyReceipt(lease, receipt, [publicKey], 'SVCR1')).toBe(false);
    const noLease = { ...fields, leaseEndsAt: null };
    expect(verifyReceipt(noLease, signReceipt(noLease, privateKey, 'SVCR1'), [publicKey], 'SVCR2')).toBe(false);
  });

  it('grants only with a signed lease end', () => {
    expect(receiptGrantsLicence(lease, 'SVCR2')).toBe(true);
    expect(receiptGrantsLicence({ ...lease, leaseEndsAt: '' }, 'SVCR2')).toBe(false);
    expect(receiptGrantsLicence({ ...lease, leaseEndsAt: null }, 'SVCR2')).toBe(false);
    expect(receiptGrantsLicence({ ...lease, status: 'EXPIRED' }, 'SVCR2')).toBe(false);
    expect(receiptGrantsLicence({ ...lease, boundAt: '' }, 'SVCR2')).toBe(false);
    expect(receiptGrantsLicence(fields)).toBe(true);
  });
});

describe('signReceipt / verifyReceipt', () => {
  it.each(ALGORITHMS)('%s: signs and verifies, refuses any change', (algorithm) => {
    const { privateKey, publicKey } = pairs.get(algorithm)!;
    const receipt = signReceipt(fields, privateKey);
    expect(receipt).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(verifyReceipt(fields, receipt, [publicKey])).toBe(true);
    for (const name of Object.keys(fields) as Array<keyof ReceiptFields>) {
      expect(verifyReceipt({ ...fields, [name]: `${fields[name]}x` }, receipt, [publicKey])).toBe(false);
      expect(verifyReceipt({ ...fields, [name]: null }, receipt, [publicKey])).toBe(false);
    }
    expect(verifyReceipt(fields, `${receipt}=`, [publicKey])).toBe(false);
    expect(verifyReceipt(fields, receipt.slice(1), [publicKey])).toBe(false);
    expect(verifyReceipt(fields, '', [publicKey])).toBe(false);
  });

  it('signs empty fields distinctly from "null"', () => {
    const { privateKey, publicKey } = pairs.get('ED25519')!;
    const noSeat = { ...fields, boundAt: null };
    const receipt = signReceipt(noSeat, privateKey);
    expect(verifyReceipt({ ...fields, boundAt: '' }, receipt, [publicKey])).toBe(true);
    expect(verifyReceipt({ ...fields, boundAt: 'null' }, receipt, [publicKey])).toBe(false);
  });

  it('verifies with any key of the history, and not with others', () => {
    const { privateKey, publicKey } = pairs.get('EC_P384')!;
    const receipt = signReceipt(fields, privateKey);
    expect(verifyReceipt(fields, receipt, [pairs.get('ED25519')!.publicKey, publicKey])).toBe(true);
    expect(verifyReceipt(fields, receipt, [pairs.get('EC_P256')!.publicKey])).toBe(false);
    expect(verifyReceipt(fields, receipt, [])).toBe(false);
  });

  it('returns false, not an exception, for malformed input', () => {
    const { publicKey } = pairs.get('ED25519')!;
    expect(verifyReceipt({ ...fields, nonce: 'a\x1fb' }, 'AAAA', [publicKey])).toBe(false);
    expect(verifyReceipt(fields, 'not base64!', [publicKey])).toBe(false);
    expect(verifyReceipt(fields, 7 as unknown as string, [publicKey])).toBe(false);
  });
});

describe('receiptGrantsLicence', () => {
  it.each<[string | null, string | null, boolean]>([
    ['ACTIVE', '2026-01-01T00:00:00.000Z', true],
    ['GRACE', '2026-01-01T00:00:00.000Z', true],
    ['ACTIVE', '', false],
    ['ACTIVE', null, false],
    ['PENDING', '2026-01-01T00:00:00.000Z', false],
    ['EXPIRED', '2026-01-01T00:00:00.000Z', false],
    ['REVOKED', '2026-01-01T00:00:00.000Z', false],
    ['', '2026-01-01T00:00:00.000Z', false],
    [null, null, false],
    ['active', '2026-01-01T00:00:00.000Z', false],
  ])('status %s, boundAt %s -> %s', (status, boundAt, grants) => {
    expect(receiptGrantsLicence({ status, boundAt })).toBe(grants);
  });
});
