import type { KeyObject } from 'node:crypto';
import { b64uDecode, b64uEncode, isCanonicalB64u } from './encoding.js';
import { MalformedError } from './errors.js';
import { signBytes, verifyBytes } from './signing.js';

export type LicenceType = 'OFFLINE' | 'ONLINE' | 'HYBRID';
export type Activation = 'ONLINE' | 'OFFLINE';
/** A product parameter's claim value (STRING, ENUM, DATE → string; INTEGER; BOOLEAN; STRING_LIST). */
export type ParamValue = string | number | boolean | readonly string[];

/** The issuer's claims, in wire order (DESIGN.md 2). Product parameters follow them. */
export const CLAIM_NAMES = [
  'v', 'lid', 'prd', 'org', 'typ', 'act', 'lic', 'iat', 'nbf', 'exp',
  'grace', 'fp', 'fpn', 'mm', 'chk', 'max',
] as const;
export type ClaimName = (typeof CLAIM_NAMES)[number];

const RESERVED = new Set<string>(CLAIM_NAMES);

/** True when a product parameter may not use this key (it is an issuer claim). */
export function isReservedClaimName(key: string): boolean {
  return RESERVED.has(key);
}

export interface IssuerClaims {
  v: 3 | 4;
  lid: string;
  prd: string;
  org: string;
  typ?: LicenceType;
  act?: Activation;
  lic?: string;
  iat: number;
  nbf?: number;
  exp?: number;
  grace: number;
  fp?: string | string[];
  fpn?: number;
  mm: number;
  chk?: number;
  max?: number;
}

/** A decoded payload: issuer claims, then product parameters (any JSON value once parsed). */
export type LicenceClaims = IssuerClaims & { [param: string]: unknown };

type Maybe<T> = T | null | undefined;

export interface ClaimsInput {
  lid: string;
  prd: string;
  org: string;
  typ?: Maybe<LicenceType>;
  act?: Maybe<Activation>;
  lic?: Maybe<string>;
  iat: number;
  nbf?: Maybe<number>;
  exp?: Maybe<number>;
  grace: number;
  /** `fingerprint` followed by `fingerprints`; duplicates are dropped, order kept. */
  fp?: Maybe<string | readonly string[]>;
  fpn?: Maybe<number>;
  mm: number;
  chk?: Maybe<number>;
  max?: Maybe<number>;
  /** Product parameters in declared order; entries whose value is null or undefined are omitted. */
  params?: Maybe<ReadonlyArray<readonly [string, Maybe<ParamValue>]> | Readonly<Record<string, Maybe<ParamValue>>>>;
}

// JSON objects list array-index keys ("0", "17") first whatever the insertion order, so such
// a parameter could never appear in its declared position.
const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;

function checkParamValue(key: string, value: unknown): void {
  const ok =
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isSafeInteger(value)) ||
    (Array.isArray(value) && value.every((item) => typeof item === 'string'));
  if (!ok) throw new TypeError(`parameter "${key}" must be a string, an integer, a boolean or a list of strings`);
}

/**
 * The payload object with its keys in wire order. Claims that do not apply are omitted:
 * `act` outside HYBRID, `chk`/`max` for OFFLINE, `fpn` without `fp`. Throws TypeError for a
 * claim of the wrong type or a parameter named like an issuer claim.
 */
export function orderClaims(input: ClaimsInput): LicenceClaims {
  let fp: string | string[] | undefined;
  if (typeof input.fp === 'string') fp = input.fp;
  else if (input.fp != null) {
    const unique = [...new Set(input.fp)];
    if (unique.length === 1) fp = unique[0];
    else if (unique.length > 1) fp = unique;
  }
  const online = input.typ !== 'OFFLINE';

  const claims: Record<string, unknown> = { v: Array.isArray(fp) ? 4 : 3 };
  claims.lid = input.lid;
  claims.prd = input.prd;
  claims.org = input.org;
  if (input.typ != null) claims.typ = input.typ;
  if (input.act != null && input.typ === 'HYBRID') claims.act = input.act;
  if (input.lic != null) claims.lic = input.lic;
  claims.iat = input.iat;
  if (input.nbf != null) claims.nbf = input.nbf;
  if (input.exp != null) claims.exp = input.exp;
  claims.grace = input.grace;
  if (fp !== undefined) {
    claims.fp = fp;
    if (input.fpn != null) claims.fpn = input.fpn;
  }
  claims.mm = input.mm;
  if (online && input.chk != null) claims.chk = input.chk;
  if (online && input.max != null) claims.max = input.max;

  const params = input.params;
  if (params != null) {
    const entries = Array.isArray(params) ? params : Object.entries(params);
    for (const [key, value] of entries as Array<readonly [string, Maybe<ParamValue>]>) {
      if (value == null) continue;
      if (RESERVED.has(key)) throw new TypeError(`parameter "${key}" shadows an issuer claim`);
      if (INDEX_KEY.test(key)) throw new TypeError(`parameter "${key}" cannot be kept in declared order`);
      if (key in claims) throw new TypeError(`parameter "${key}" is given twice`);
      checkParamValue(key, value);
      claims[key] = value;
    }
  }

  const problem = claimsProblem(claims);
  if (problem !== null) throw new TypeError(problem);
  return claims as LicenceClaims;
}

/** The canonical payload JSON for the given claims. */
export function licencePayload(input: ClaimsInput): string {
  return JSON.stringify(orderClaims(input));
}

/** `B64U(payloadJSON) + "." + B64U(signature over the ASCII of the first part)`. */
export function signLicence(input: ClaimsInput, privateKey: KeyObject): string {
  const payloadPart = b64uEncode(licencePayload(input));
  const signature = signBytes(privateKey, Buffer.from(payloadPart, 'latin1'));
  return `${payloadPart}.${signature.toString('base64url')}`;
}

export interface ParsedLicence {
  /** The payload's base64url text: the signed bytes, and the identity of a term. */
  payloadPart: string;
  claims: LicenceClaims;
  signature: Buffer;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

const isInt = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);
const isText = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

/** Describes the first claim that is missing or of the wrong type, or null when all are right. */
function claimsProblem(c: Record<string, unknown>): string | null {
  const fpIsList = Array.isArray(c.fp);
  if (c.v !== 3 && c.v !== 4) return 'claim "v" must be 3 or 4';
  if (!isText(c.lid)) return 'claim "lid" must be a non-empty string';
  if (!isText(c.prd)) return 'claim "prd" must be a non-empty string';
  if (!isText(c.org)) return 'claim "org" must be a non-empty string';
  if (c.typ !== undefined && c.typ !== 'OFFLINE' && c.typ !== 'ONLINE' && c.typ !== 'HYBRID') {
    return 'claim "typ" must be OFFLINE, ONLINE or HYBRID';
  }
  if (c.act !== undefined && c.act !== 'ONLINE' && c.act !== 'OFFLINE') return 'claim "act" must be ONLINE or OFFLINE';
  if (c.lic !== undefined && typeof c.lic !== 'string') return 'claim "lic" must be a string';
  if (!isInt(c.iat)) return 'claim "iat" must be an integer';
  if (c.nbf !== undefined && !isInt(c.nbf)) return 'claim "nbf" must be an integer';
  if (c.exp !== undefined && !isInt(c.exp)) return 'claim "exp" must be an integer';
  if (!isInt(c.grace) || c.grace < 0) return 'claim "grace" must be an integer of at least 0';
  if (c.fp !== undefined) {
    const fpOk = fpIsList ? (c.fp as unknown[]).length > 1 && (c.fp as unknown[]).every(isText) : isText(c.fp);
    if (!fpOk) return 'claim "fp" must be a fingerprint or a list of several fingerprints';
  }
  // A verifier that predates multi-machine binding must refuse a list, hence the version.
  if ((c.v === 4) !== fpIsList) return 'claim "v" must be 4 exactly when "fp" is a list';
  if (c.fpn !== undefined && (!isInt(c.fpn) || c.fpn < 1 || c.fpn > 5)) return 'claim "fpn" must be an integer from 1 to 5';
  if (!isInt(c.mm) || c.mm < 1) return 'claim "mm" must be an integer of at least 1';
  if (c.chk !== undefined && (!isInt(c.chk) || c.chk < 0)) return 'claim "chk" must be an integer of at least 0';
  if (c.max !== undefined && (!isInt(c.max) || c.max < 0)) return 'claim "max" must be an integer of at least 0';
  return null;
}

/** Strict structural parse; the signature is not checked here (see verifyLicence). */
export function parseLicence(text: string): ParsedLicence {
  if (typeof text !== 'string') throw new MalformedError('licence is not a string');
  const dot = text.indexOf('.');
  if (dot < 0 || text.indexOf('.', dot + 1) >= 0) throw new MalformedError('licence must have exactly two parts separated by "."');
  const payloadPart = text.slice(0, dot);
  const payloadBytes = b64uDecode(payloadPart, 'licence payload');
  const signature = b64uDecode(text.slice(dot + 1), 'licence signature');

  let claims: unknown;
  try {
    claims = JSON.parse(utf8.decode(payloadBytes));
  } catch {
    throw new MalformedError('licence payload is not UTF-8 JSON');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) {
    throw new MalformedError('licence payload is not a JSON object');
  }
  const problem = claimsProblem(claims as Record<string, unknown>);
  if (problem !== null) throw new MalformedError(`licence ${problem}`);
  return { payloadPart, claims: claims as LicenceClaims, signature };
}

/** The key (of a product's key history) whose signature the licence carries, or null. */
export function verifyLicence(parsed: ParsedLicence, publicKeys: readonly KeyObject[]): KeyObject | null {
  if (!isCanonicalB64u(parsed.payloadPart)) return null;
  const data = Buffer.from(parsed.payloadPart, 'latin1');
  for (const key of publicKeys) {
    if (verifyBytes(key, data, parsed.signature)) return key;
  }
  return null;
}

export type LicenceReading =
  | { ok: true; parsed: ParsedLicence; key: KeyObject }
  | { ok: false; reason: 'MALFORMED' | 'BAD_SIGNATURE'; message: string };

/** Parse and verify in one step, with the refusal the service and SDK both report. */
export function readLicence(text: string, publicKeys: readonly KeyObject[]): LicenceReading {
  let parsed: ParsedLicence;
  try {
    parsed = parseLicence(text);
  } catch (error) {
    if (error instanceof MalformedError) return { ok: false, reason: 'MALFORMED', message: error.message };
    throw error;
  }
  const key = verifyLicence(parsed, publicKeys);
  if (key === null) return { ok: false, reason: 'BAD_SIGNATURE', message: 'licence signature does not verify' };
  return { ok: true, parsed, key };
}

/** Product parameters of a parsed payload, in payload order. */
export function licenceParams(claims: LicenceClaims): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const key of Object.keys(claims)) if (!RESERVED.has(key)) params[key] = claims[key];
  return params;
}
