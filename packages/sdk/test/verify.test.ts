import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildFingerprint, signLicence } from '@licensor/protocol';
import { LicensorError, readLicenceFile, verifyLicence } from '@licensor/sdk';
import { updatesUntilOf } from '../src/verify.js';
import { keysOf, loadVectors } from '../../protocol/test-vectors/index.js';
import { keys, otherKeys, publicKeyPem } from './fake-service.js';

const vectors = loadVectors();
const stranger = buildFingerprint({ machine: 'x', host: 'y', mac: 'z', cpu: 'w', disk: 'v' });
const DAY = 86_400;

/** A moment inside the vector's term, and a fingerprint it signs in (when it has any). */
function inTerm(claims: Record<string, unknown>) {
  const now = ((claims.nbf as number | undefined) ?? (claims.iat as number)) * 1000 + 1000;
  const fp = claims.fp as string | string[] | undefined;
  return { now, fingerprint: Array.isArray(fp) ? fp[fp.length - 1] : fp };
}

describe.each(vectors.algorithms.map((vector) => [vector.algorithm, vector] as const))('verifyLicence with %s', (_name, vector) => {
  it('accepts the vector licence and returns its claims', () => {
    const result = verifyLicence(vector.licence, vector.publicKeyPem, inTerm(vector.claims));
    expect(result).toMatchObject({ signed: true, valid: true, reasons: [], status: 'ACTIVE' });
    if (!result.signed) throw new Error('unreachable');
    expect(result.claims).toEqual(vector.claims);
    expect(result.fingerprintMatch).toBe(vector.claims.fp === undefined ? null : true);
    expect(result.expiresAt?.getTime() ?? null).toBe(vector.claims.exp === undefined ? null : (vector.claims.exp as number) * 1000);
  });

  it('accepts a KeyObject and a key history with the signing key anywhere in it', () => {
    const { publicKey } = keysOf(vector);
    expect(verifyLicence(vector.licence, publicKey, inTerm(vector.claims)).valid).toBe(true);
    expect(verifyLicence(vector.licence, [publicKeyPem, vector.publicKeyPem], inTerm(vector.claims)).valid).toBe(true);
  });

  it.each(vector.tampered.map((t) => [t.name, t] as const))('refuses %s', (_n, tampered) => {
    const result = verifyLicence(tampered.licence, vector.publicKeyPem, inTerm(vector.claims));
    expect(result).toMatchObject({ signed: false, valid: false, reasons: [tampered.expected], claims: null });
  });

  it('refuses a licence signed by a key outside the history', () => {
    expect(verifyLicence(vector.licence, publicKeyPem, inTerm(vector.claims)).reasons).toEqual(['BAD_SIGNATURE']);
  });
});

describe('the vectors signed with an update window (DESIGN.md 20)', () => {
  const windowed = vectors.algorithms.filter((vector) => typeof vector.claims.upd === 'number');
  it('exist, so every SDK verifies a term with upd byte for byte', () => expect(windowed.length).toBeGreaterThan(0));
  it.each(windowed.map((vector) => [vector.algorithm, vector] as const))('%s: upd is the window, not a parameter', (_name, vector) => {
    const result = verifyLicence(vector.licence, vector.publicKeyPem, inTerm(vector.claims));
    if (!result.signed) throw new Error('the vector does not verify');
    expect(result.params).not.toHaveProperty('upd');
    expect(updatesUntilOf(result.claims)).toEqual(new Date((vector.claims.upd as number) * 1000));
  });
});

describe('verifyLicence calendar and machine', () => {
  const iat = 1_790_000_000;
  const fp = buildFingerprint({ machine: 'm', host: 'h', mac: 'a', cpu: 'c', disk: 'd' });
  const licence = (claims: Record<string, unknown> = {}) =>
    signLicence({ lid: 'l-1', prd: 'p', org: 'o', typ: 'OFFLINE', iat, exp: iat + 30 * DAY, grace: 2, mm: 1, ...claims }, keys.privateKey);
  const at = (seconds: number) => ({ now: seconds * 1000, fingerprint: fp });

  it('is NOT_YET_VALID before nbf, ACTIVE from it', () => {
    const text = licence({ nbf: iat + DAY });
    expect(verifyLicence(text, publicKeyPem, at(iat + DAY - 1))).toMatchObject({ valid: false, status: 'PENDING', reasons: ['NOT_YET_VALID'] });
    expect(verifyLicence(text, publicKeyPem, at(iat + DAY))).toMatchObject({ valid: true, status: 'ACTIVE' });
  });

  it('keeps an expired licence in GRACE for exactly grace × 86,400 s', () => {
    const text = licence();
    const exp = iat + 30 * DAY;
    expect(verifyLicence(text, publicKeyPem, at(exp - 1))).toMatchObject({ valid: true, status: 'ACTIVE' });
    expect(verifyLicence(text, publicKeyPem, at(exp))).toMatchObject({ valid: true, status: 'GRACE' });
    expect(verifyLicence(text, publicKeyPem, at(exp + 2 * DAY - 1))).toMatchObject({ valid: true, status: 'GRACE' });
    const expired = verifyLicence(text, publicKeyPem, at(exp + 2 * DAY));
    expect(expired).toMatchObject({ valid: false, status: 'EXPIRED', reasons: ['EXPIRED'] });
    expect(expired.signed && expired.graceEndsAt?.getTime()).toBe((exp + 2 * DAY) * 1000);
  });

  it('never expires a perpetual licence', () => {
    const result = verifyLicence(licence({ exp: null }), publicKeyPem, at(iat + 100 * 365 * DAY));
    expect(result).toMatchObject({ valid: true, status: 'ACTIVE', expiresAt: null, graceEndsAt: null });
  });

  it('matches the machine by fpn and reports a mismatch', () => {
    const text = licence({ fp, fpn: 4 });
    const threeAlike = buildFingerprint({ machine: 'm', host: 'h', mac: 'a', cpu: 'other', disk: 'other' });
    const fourAlike = buildFingerprint({ machine: 'm', host: 'h', mac: 'a', cpu: 'c', disk: 'other' });
    expect(verifyLicence(text, publicKeyPem, { now: iat * 1000, fingerprint: fourAlike })).toMatchObject({ valid: true, fingerprintMatch: true });
    expect(verifyLicence(text, publicKeyPem, { now: iat * 1000, fingerprint: threeAlike })).toMatchObject({
      valid: false,
      fingerprintMatch: false,
      reasons: ['FINGERPRINT_MISMATCH'],
    });
    // Without fpn the service's default need of 3 applies.
    expect(verifyLicence(licence({ fp }), publicKeyPem, { now: iat * 1000, fingerprint: threeAlike }).valid).toBe(true);
  });

  it('accepts any of several signed-in machines and lists every refusal that applies', () => {
    const text = licence({ fp: [stranger, fp] });
    expect(verifyLicence(text, publicKeyPem, at(iat)).valid).toBe(true);
    const other = buildFingerprint({ machine: '1', host: '2', mac: '3', cpu: '4', disk: '5' });
    const result = verifyLicence(text, publicKeyPem, { now: (iat + 40 * DAY) * 1000, fingerprint: other });
    expect(result.reasons).toEqual(['EXPIRED', 'FINGERPRINT_MISMATCH']);
  });

  it("collects this machine's fingerprint when none is given", () => {
    // This machine is not the stranger, so the licence signed for the stranger is refused.
    expect(verifyLicence(licence({ fp: stranger }), publicKeyPem, { now: iat * 1000 }).reasons).toEqual(['FINGERPRINT_MISMATCH']);
  });

  it('throws INVALID_KEY for keys it cannot read, a private key or none', () => {
    const text = licence();
    for (const bad of ['not a pem', [], keys.privateKey]) {
      expect(() => verifyLicence(text, bad as never)).toThrow(LicensorError);
    }
    try {
      verifyLicence(text, [otherKeys.publicKey, 'garbage']);
    } catch (error) {
      expect((error as LicensorError).code).toBe('INVALID_KEY');
    }
    expect.assertions(4);
  });
});

describe('readLicenceFile', () => {
  it('reads a .lic file without the byte-order mark and whitespace around it; verifyLicence stays strict', () => {
    const vector = vectors.algorithms[0]!;
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'licensor-lic-')), 'licence.lic');
    writeFileSync(file, `\uFEFF \r\n${vector.licence}\r\n\n`);
    expect(readLicenceFile(file)).toBe(vector.licence);
    expect(verifyLicence(readLicenceFile(file), vector.publicKeyPem, inTerm(vector.claims)).valid).toBe(true);
    expect(verifyLicence(`${vector.licence}\n`, vector.publicKeyPem, inTerm(vector.claims)).reasons).toEqual(['MALFORMED']);
  });
});
