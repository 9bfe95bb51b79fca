import {
  calendarStatus,
  fingerprintsMatch,
  graceEndsAt,
  licenceParams,
  parseFingerprint,
  readLicence,
  type CalendarStatus,
  type FingerprintParts,
  type LicenceClaims,
} from '@licensor/protocol';
import { collectFingerprint } from './fingerprint.js';
import { readPublicKeys, type PublicKeys } from './keys.js';

/**
 * Why a licence string is refused offline:
 * - `MALFORMED`: not exactly the wire form (strict base64url, JSON object, claim types).
 * - `BAD_SIGNATURE`: no given key signed it.
 * - `NOT_YET_VALID`: before `nbf`.
 * - `EXPIRED`: at or after `exp` + `grace` days.
 * - `FINGERPRINT_MISMATCH`: `fp` is signed in and this machine matches none of its fingerprints by `fpn`.
 * - `WRONG_PRODUCT`: signed, but for another product (`prd`) or organisation (`org`) than the
 *   application expects: a key shared by two products never lets one's licence run the other.
 */
export type LicenceRefusal = 'MALFORMED' | 'BAD_SIGNATURE' | 'WRONG_PRODUCT' | 'NOT_YET_VALID' | 'EXPIRED' | 'FINGERPRINT_MISMATCH';

/** A licence whose signature verified: the claims are trustworthy, whatever the verdict. */
export interface SignedLicence {
  signed: true;
  /** True exactly when `reasons` is empty. */
  valid: boolean;
  /** Every refusal that applies (calendar and machine), empty when valid. */
  reasons: LicenceRefusal[];
  claims: LicenceClaims;
  /** The product's parameters, in signed order. */
  params: Record<string, unknown>;
  /** The term's calendar status now (DESIGN.md 3). Revocation is known only online. */
  status: CalendarStatus;
  startsAt: Date | null;
  /** Null for a perpetual licence. */
  expiresAt: Date | null;
  /** `exp + grace × 86,400 s` exactly; null for a perpetual licence. */
  graceEndsAt: Date | null;
  /** Whether this machine matches a signed `fp` by `fpn` (default 3); null when none is signed in. */
  fingerprintMatch: boolean | null;
}

/**
 * `upd` (DESIGN.md 20) is the update window's claim exactly when it is a whole number of Unix
 * seconds; a product's parameter that kept the name `upd` (DESIGN.md 2) stays a parameter
 * otherwise, as `mtr` and `trl` do.
 */
export function isUpdatesClaim(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The product's parameters: the licence's claims without the issuer's, `upd` included (DESIGN.md 2). */
function productParams(claims: LicenceClaims): Record<string, unknown> {
  const params = licenceParams(claims);
  if ('upd' in params && isUpdatesClaim(params.upd)) delete params.upd;
  return params;
}

/**
 * The end of the licence's update window (DESIGN.md 20): its `upd`, else its grace end (section
 * 3; a trial's end), else null (every release).
 */
export function updatesUntilOf(claims: LicenceClaims): Date | null {
  const upd = (claims as { upd?: unknown }).upd;
  if (isUpdatesClaim(upd)) return new Date(upd * 1000);
  const end = graceEndsAt(claims.exp, claims.grace);
  return end == null ? null : new Date(end * 1000);
}

/** A string that is not a licence signed by one of the keys: nothing in it can be trusted. */
export interface RefusedLicence {
  signed: false;
  valid: false;
  reasons: ['MALFORMED' | 'BAD_SIGNATURE'];
  message: string;
  claims: null;
}

export type LicenceVerification = SignedLicence | RefusedLicence;

export interface VerifyOptions {
  /** The time to judge the calendar at (default: now). */
  now?: Date | number;
  /** This machine's fingerprint; collected (with `stableId`) only when the licence signs one in. */
  fingerprint?: string;
  stableId?: string;
  /** The product key this application is (the `prd` claim); a licence for another is `WRONG_PRODUCT`. */
  productKey?: string;
  /** The organisation slug that issues this application's licences (the `org` claim). */
  organisation?: string;
}

/** The service's default fingerprintNeed, used when a licence signs `fp` without `fpn`. */
const DEFAULT_FINGERPRINT_NEED = 3;

/**
 * Verifies a licence string offline with the product's public key or key history: signature,
 * calendar (`nbf`, `exp` plus exact grace) and machine. Never touches the network.
 * Throws only for keys that cannot be read (LicensorError `INVALID_KEY`).
 */
export function verifyLicence(licence: string, publicKeys: PublicKeys, options: VerifyOptions = {}): LicenceVerification {
  const reading = readLicence(licence, readPublicKeys(publicKeys));
  if (!reading.ok) return { signed: false, valid: false, reasons: [reading.reason], message: reading.message, claims: null };

  const claims = reading.parsed.claims;
  const nowMs = options.now === undefined ? Date.now() : Number(options.now);
  const status = calendarStatus(claims, Math.floor(nowMs / 1000));
  const reasons: LicenceRefusal[] = [];
  if ((options.productKey !== undefined && claims.prd !== options.productKey) || (options.organisation !== undefined && claims.org !== options.organisation)) {
    reasons.push('WRONG_PRODUCT');
  }
  if (status === 'PENDING') reasons.push('NOT_YET_VALID');
  if (status === 'EXPIRED') reasons.push('EXPIRED');

  let fingerprintMatch: boolean | null = null;
  if (claims.fp !== undefined) {
    const mine = parseFingerprint(options.fingerprint ?? collectFingerprint({ stableId: options.stableId }).fingerprint);
    const need = claims.fpn ?? DEFAULT_FINGERPRINT_NEED;
    fingerprintMatch = (Array.isArray(claims.fp) ? claims.fp : [claims.fp]).some((fp) => matches(fp, mine, need));
    if (!fingerprintMatch) reasons.push('FINGERPRINT_MISMATCH');
  }

  const date = (seconds: number | null | undefined) => (seconds == null ? null : new Date(seconds * 1000));
  return {
    signed: true,
    valid: reasons.length === 0,
    reasons,
    claims,
    params: productParams(claims),
    status,
    startsAt: date(claims.nbf),
    expiresAt: date(claims.exp),
    graceEndsAt: date(graceEndsAt(claims.exp, claims.grace)),
    fingerprintMatch,
  };
}

function matches(signed: string, mine: FingerprintParts, need: number): boolean {
  try {
    return fingerprintsMatch(parseFingerprint(signed), mine, need);
  } catch {
    // A signed-in fingerprint the service should never have accepted matches nothing.
    return false;
  }
}
