import { describe, it, expect } from 'vitest';
import { verify as cryptoVerify } from 'node:crypto';
import {
  ALGORITHM_INFO,
  algorithmOfKey,
  calendarStatus,
  fingerprintFromParts,
  fingerprintsMatch,
  FingerprintError,
  buildFingerprint,
  fpDigest,
  graceEndsAt,
  licencePayload,
  matchScore,
  orderClaims,
  parseFingerprint,
  readLicence,
  receiptGrantsLicence,
  receiptMessage,
  receiptTagOf,
  signLicence,
  signReceipt,
  verifyReceipt,
  type ClaimsInput,
} from '../src/index.js';
import { keysOf, loadVectors } from '../test-vectors/index.js';

const vectors = loadVectors();

describe('golden vectors', () => {
  it('cover all six algorithms', () => {
    expect(vectors.algorithms.map((v) => v.algorithm)).toEqual(['ED25519', 'RSA_2048', 'RSA_3072', 'RSA_4096', 'EC_P256', 'EC_P384']);
  });

  describe.each(vectors.algorithms)('$algorithm', (vector) => {
    const { privateKey, publicKey } = keysOf(vector);
    const input = vector.claimsInput as unknown as ClaimsInput;

    it('has keys of its algorithm and the JDK name', () => {
      expect(algorithmOfKey(privateKey)).toBe(vector.algorithm);
      expect(algorithmOfKey(publicKey)).toBe(vector.algorithm);
      expect(vector.signatureAlgorithm).toBe(ALGORITHM_INFO[vector.algorithm].signatureAlgorithm);
    });

    it('orders the claims into the expected payload, byte for byte', () => {
      expect(licencePayload(input)).toBe(vector.payloadJson);
      expect(orderClaims(input)).toEqual(vector.claims);
    });

    it('verifies the stored licence and decodes the claims', () => {
      const result = readLicence(vector.licence, [publicKey]);
      expect(result.ok).toBe(true);
      if (result.ok) expect(result.parsed.claims).toEqual(vector.claims);
      expect(vector.licence.split('.')[0]).toBe(Buffer.from(vector.payloadJson).toString('base64url'));
    });

    it(vector.deterministic ? 'signs to the same licence string' : 'signs a fresh licence that verifies', () => {
      const licence = signLicence(input, privateKey);
      if (vector.deterministic) expect(licence).toBe(vector.licence);
      else expect(readLicence(licence, [publicKey]).ok).toBe(true);
    });

    it.each(vector.tampered)('refuses tampered "$name" as $expected', ({ licence, expected }) => {
      expect(readLicence(licence, [publicKey])).toMatchObject({ ok: false, reason: expected });
    });

    it.each(vector.receipts)('receipt "$name": message bytes, signature and verdict', (receipt) => {
      expect(receiptMessage(receipt.fields).toString('hex')).toBe(receipt.messageHex);
      expect(verifyReceipt(receipt.fields, receipt.receipt, [publicKey])).toBe(true);
      expect(receiptGrantsLicence(receipt.fields)).toBe(receipt.grants);
      const fresh = signReceipt(receipt.fields, privateKey);
      if (vector.deterministic) expect(fresh).toBe(receipt.receipt);
      else expect(verifyReceipt(receipt.fields, fresh, [publicKey])).toBe(true);
    });

    it.each(vector.badReceipts)('bad receipt "$name" does not verify', ({ fields, receipt }) => {
      expect(verifyReceipt(fields, receipt, [publicKey])).toBe(false);
    });

    describe('floating licence (v 5)', () => {
      const floating = vector.floating!;
      const floatingInput = floating.claimsInput as unknown as ClaimsInput;

      it('orders the claims with lse and brw after max, and verifies the stored licence', () => {
        expect(licencePayload(floatingInput)).toBe(floating.payloadJson);
        expect(floating.claims.v).toBe(5);
        const result = readLicence(floating.licence, [publicKey]);
        expect(result.ok).toBe(true);
        if (result.ok) {
          expect(result.parsed.claims).toEqual(floating.claims);
          expect(receiptTagOf(result.parsed.claims)).toBe('SVCR2');
        }
        if (vector.deterministic) expect(signLicence(floatingInput, privateKey)).toBe(floating.licence);
      });

      it.each(floating.tampered)('refuses tampered "$name" as $expected', ({ licence, expected }) => {
        expect(readLicence(licence, [publicKey])).toMatchObject({ ok: false, reason: expected });
      });

      it.each(floating.receipts)('SVCR2 receipt "$name": message bytes, signature and verdict', (receipt) => {
        expect(receipt.tag).toBe('SVCR2');
        expect(receiptMessage(receipt.fields, 'SVCR2').toString('hex')).toBe(receipt.messageHex);
        expect(verifyReceipt(receipt.fields, receipt.receipt, [publicKey], 'SVCR2')).toBe(true);
        expect(verifyReceipt(receipt.fields, receipt.receipt, [publicKey], 'SVCR1')).toBe(false);
        expect(receiptGrantsLicence(receipt.fields, 'SVCR2')).toBe(receipt.grants);
        const fresh = signReceipt(receipt.fields, privateKey, 'SVCR2');
        if (vector.deterministic) expect(fresh).toBe(receipt.receipt);
        else expect(verifyReceipt(receipt.fields, fresh, [publicKey], 'SVCR2')).toBe(true);
      });

      it('bare node:crypto verifies every SVCR2 receipt over its fields joined by 0x1F', () => {
        const digest = vector.algorithm === 'ED25519' ? null : vector.algorithm === 'EC_P384' ? 'sha384' : 'sha256';
        for (const { fields, receipt } of floating.receipts) {
          const text = ['SVCR2', fields.lid, fields.status, fields.nonce, fields.checkedAt, fields.boundAt, fields.fpDigest, fields.leaseEndsAt]
            .map((field) => field ?? '')
            .join('\x1f');
          expect(cryptoVerify(digest, Buffer.from(text, 'utf8'), publicKey, Buffer.from(receipt, 'base64url'))).toBe(true);
        }
      });

      it.each(floating.badReceipts)('bad receipt "$name" does not verify as $tag', ({ fields, receipt, tag }) => {
        expect(verifyReceipt(fields, receipt, [publicKey], tag)).toBe(false);
      });
    });
  });

  it.each(vectors.claimOrder)('claim order: $name', ({ claimsInput, payloadJson }) => {
    expect(licencePayload(claimsInput as unknown as ClaimsInput)).toBe(payloadJson);
  });

  it.each(vectors.fingerprints)('fingerprint: $name', (vector) => {
    expect(buildFingerprint(vector.raw)).toBe(vector.fingerprint);
    expect(parseFingerprint(vector.fingerprint)).toEqual(vector.parts);
    expect(fingerprintFromParts(vector.parts)).toBe(vector.fingerprint);
    expect(fpDigest(vector.fingerprint)).toBe(vector.fpDigest);
  });

  it.each(vectors.badFingerprints)('bad fingerprint: $name -> $problem', ({ fingerprint, problem }) => {
    expect(() => parseFingerprint(fingerprint)).toThrow(FingerprintError);
    try {
      parseFingerprint(fingerprint);
    } catch (error) {
      expect((error as FingerprintError).problem).toBe(problem);
    }
  });

  it.each(vectors.matches)('match need $need: score $score, match $match', ({ a, b, need, score, match }) => {
    const pa = parseFingerprint(a);
    const pb = parseFingerprint(b);
    expect(matchScore(pa, pb)).toBe(score);
    expect(fingerprintsMatch(pa, pb, need)).toBe(match);
  });

  it.each(vectors.statuses)('status at $now is $status', ({ claims, now, status, graceEndsAt: end }) => {
    expect(calendarStatus(claims, now)).toBe(status);
    expect(graceEndsAt(claims.exp, claims.grace)).toBe(end);
  });
});
