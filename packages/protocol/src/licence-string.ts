import type { KeyObject } from 'node:crypto';
import { b64uDecode, b64uDecodeTransient, b64uEncodeText, transientBytes } from './encoding.js';
import { MalformedError } from './errors.js';
import { strictJsonProblem } from './strict-json.js';
import { signBytes, verifyBytes } from './signing.js';

export type LicenceType = 'OFFLINE' | 'ONLINE' | 'HYBRID';
export type Activation = 'ONLINE' | 'OFFLINE';
/** A product parameter's claim value (STRING, ENUM, DATE → string; INTEGER; BOOLEAN; STRING_LIST). */
export type ParamValue = string | number | boolean | readonly string[];

/** The issuer's claims of every licence, in wire order (DESIGN.md 2). Product parameters follow them. */
export const CLAIM_NAMES = ['v', 'lid', 'prd', 'org', 'typ', 'act', 'lic', 'iat', 'nbf', 'exp', 'grace', 'fp', 'fpn', 'mm', 'chk', 'max'] as const;
export type ClaimName = (typeof CLAIM_NAMES)[number];

/**
 * The claims a floating licence (`v` 5) adds after `max` (DESIGN.md 13). They are issuer claims
 * only in `v` 5 payloads: a node-locked product may still have a parameter of either name.
 */
export const FLOATING_CLAIM_NAMES = ['lse', 'brw'] as const;

/**
 * The claims of update windows, meters and trials (`upd`, `mtr`, `trl`; DESIGN.md 2, sections
 * 18 to 20), in wire order after `brw`. A new parameter may not take one of these keys; a product
 * whose parameter had one before they existed keeps it, and that product cannot use the feature.
 */
export const FEATURE_CLAIM_NAMES = ['upd', 'mtr', 'trl'] as const;

/** Bounds of `lse` (a product's leaseSeconds) and `brw` (its maxBorrowSeconds), DESIGN.md 13. */
export const LEASE_SECONDS_RANGE = { min: 60, max: 3_600 } as const;
export const BORROW_SECONDS_MAX = 2_592_000;

const RESERVED = new Set<string>(CLAIM_NAMES);
const RESERVED_FLOATING = new Set<string>([...CLAIM_NAMES, ...FLOATING_CLAIM_NAMES]);
const reservedFor = (v: unknown): Set<string> => (v === 5 ? RESERVED_FLOATING : RESERVED);

/** True when a product parameter may not use this key (an issuer claim; `floating` adds lse and brw). */
export function isReservedClaimName(key: string, floating = false): boolean {
  return (floating ? RESERVED_FLOATING : RESERVED).has(key);
}

export interface IssuerClaims {
  /** 3; 4 when `fp` is a list; 5 for a floating licence (`lse` present). */
  v: 3 | 4 | 5;
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
  /** Lease length in seconds (`v` 5 only). */
  lse?: number;
  /** Longest borrow in seconds (`v` 5 only, omitted when borrowing is off). */
  brw?: number;
  /**
   * DESIGN.md 20: the end of the update window, Unix seconds, only with a window. A product whose
   * parameter kept the name `upd` signs that parameter's value here instead (and has no window).
   */
  upd?: number;
  /** The licence's meters (DESIGN.md 19), only with meters. */
  mtr?: MeterClaim[];
  /** DESIGN.md 18: a trial exactly when this is the boolean `true`. */
  trl?: boolean;
}

/** A meter as signed in `mtr` (DESIGN.md 19): key, period, limit and overage, null for unlimited or no ceiling. */
export interface MeterClaim {
  k: string;
  p: 'NONE' | 'DAY' | 'MONTH' | 'YEAR';
  l: number | null;
  o: number | null;
}

export const METER_PERIODS = ['NONE', 'DAY', 'MONTH', 'YEAR'] as const;

/**
 * True when `mtr` holds the meters claim: a non-empty array of objects. A product whose parameter
 * kept the name `mtr` from before meters existed signs a parameter value there, never an object.
 */
export function isMeterClaim(value: unknown): value is MeterClaim[] {
  return Array.isArray(value) && value.length > 0 && value.every((item) => item !== null && typeof item === 'object' && !Array.isArray(item));
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
  /** A floating licence's lease length: given, it makes `v` 5 (which allows no `fp`). */
  lse?: Maybe<number>;
  /** A floating licence's longest borrow; omitted when 0 or without `lse`. */
  brw?: Maybe<number>;
  /** The end of the licence's update window (DESIGN.md 20), Unix seconds; omitted without a window. */
  upd?: Maybe<number>;
  /** The licence's meters, in its order; omitted when empty (DESIGN.md 19). */
  mtr?: Maybe<readonly MeterClaim[]>;
  /** A trial (DESIGN.md 18): `true` writes `trl`; anything else omits it. */
  trl?: Maybe<boolean>;
  /** Product parameters in declared order; entries whose value is null or undefined are omitted. */
  params?: Maybe<ReadonlyArray<readonly [string, Maybe<ParamValue>]> | Readonly<Record<string, Maybe<ParamValue>>>>;
}

// JSON objects list array-index keys ("0", "17") first whatever the insertion order, so such
// a parameter could never appear in its declared position.
const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;

function isParamValue(value: unknown): boolean {
  if (typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isSafeInteger(value);
  if (!Array.isArray(value)) return false;
  for (const item of value) if (typeof item !== 'string') return false;
  return true;
}

type Entry = [key: string, value: unknown];

/** Issuer claims after omission, in a fixed shape (absent = undefined), and the parameters. */
interface Normalised {
  claims: {
    v: 3 | 4 | 5;
    lid: string;
    prd: string;
    org: string;
    typ: LicenceType | undefined;
    act: Activation | undefined;
    lic: string | undefined;
    iat: number;
    nbf: number | undefined;
    exp: number | undefined;
    grace: number;
    fp: string | string[] | undefined;
    fpn: number | undefined;
    mm: number;
    chk: number | undefined;
    max: number | undefined;
    lse: number | undefined;
    brw: number | undefined;
    upd: number | undefined;
    mtr: MeterClaim[] | undefined;
    trl: true | undefined;
  };
  params: Entry[];
}

/**
 * Applies DESIGN.md 2's omission rules (null is never written; `act` only for HYBRID, `chk` and
 * `max` not for OFFLINE, `fpn` only with `fp`, `brw` only with `lse` and above 0), collapses
 * `fp`, and type-checks everything.
 */
function normalise(input: ClaimsInput): Normalised {
  let fp: string | string[] | undefined;
  if (typeof input.fp === 'string') fp = input.fp;
  else if (input.fp != null) {
    const unique = [...new Set(input.fp)];
    if (unique.length === 1) fp = unique[0];
    else if (unique.length > 1) fp = unique;
  }
  const online = input.typ !== 'OFFLINE';
  const lse = input.lse ?? undefined;
  const claims: Normalised['claims'] = {
    v: lse !== undefined ? 5 : Array.isArray(fp) ? 4 : 3,
    lid: input.lid,
    prd: input.prd,
    org: input.org,
    typ: input.typ ?? undefined,
    act: input.typ === 'HYBRID' ? (input.act ?? undefined) : undefined,
    lic: input.lic ?? undefined,
    iat: input.iat,
    nbf: input.nbf ?? undefined,
    exp: input.exp ?? undefined,
    grace: input.grace,
    fp,
    fpn: fp === undefined ? undefined : (input.fpn ?? undefined),
    mm: input.mm,
    chk: online ? (input.chk ?? undefined) : undefined,
    max: online ? (input.max ?? undefined) : undefined,
    lse,
    brw: lse !== undefined && input.brw !== 0 ? (input.brw ?? undefined) : undefined,
    upd: input.upd ?? undefined,
    // Each meter written with exactly its four fields in wire order.
    mtr: input.mtr == null || input.mtr.length === 0 ? undefined : input.mtr.map((m) => ({ k: m.k, p: m.p, l: m.l, o: m.o })),
    trl: input.trl === true ? true : undefined,
  };
  const problem =
    claimsProblem(claims) ??
    (claims.upd !== undefined && !(isInt(claims.upd) && claims.upd >= 0) ? 'claim "upd" must be an integer of at least 0' : null) ??
    (claims.mtr === undefined ? null : meterProblem(claims.mtr));
  if (problem !== null) throw new TypeError(problem);

  const params: Entry[] = [];
  const reserved = reservedFor(claims.v);
  const given = input.params;
  if (given != null) {
    const pairs = (Array.isArray(given) ? given : Object.entries(given)) as Array<readonly [string, Maybe<ParamValue>]>;
    for (let i = 0; i < pairs.length; i++) {
      const key = pairs[i]![0];
      const value = pairs[i]![1];
      if (value == null) continue;
      if (reserved.has(key) || (key === 'upd' && claims.upd !== undefined) || (key === 'mtr' && claims.mtr !== undefined) || (key === 'trl' && claims.trl))
        throw new TypeError(`parameter "${key}" shadows an issuer claim`);
      const first = key.charCodeAt(0);
      if (first >= 0x30 && first <= 0x39 && INDEX_KEY.test(key)) {
        throw new TypeError(`parameter "${key}" cannot be kept in declared order`);
      }
      // Assigning it sets an object's prototype instead of a property; no consumer handles it alike.
      if (key === '__proto__') throw new TypeError('parameter "__proto__" is not allowed');
      for (let j = 0; j < params.length; j++) {
        if (params[j]![0] === key) throw new TypeError(`parameter "${key}" is given twice`);
      }
      if (!isParamValue(value)) throw new TypeError(`parameter "${key}" must be a string, an integer, a boolean or a list of strings`);
      params.push([key, value]);
    }
  }
  return { claims, params };
}

/**
 * The payload object with its keys in wire order (DESIGN.md 2), `v` derived from `fp`.
 * Throws TypeError for a claim of the wrong type or a parameter named like an issuer claim.
 */
export function orderClaims(input: ClaimsInput): LicenceClaims {
  const { claims, params } = normalise(input);
  const entries: Entry[] = [];
  for (const name of CLAIM_NAMES) if (claims[name] !== undefined) entries.push([name, claims[name]]);
  for (const name of FLOATING_CLAIM_NAMES) if (claims[name] !== undefined) entries.push([name, claims[name]]);
  if (claims.upd !== undefined) entries.push(['upd', claims.upd]);
  if (claims.mtr !== undefined) entries.push(['mtr', claims.mtr]);
  if (claims.trl) entries.push(['trl', true]);
  return Object.fromEntries([...entries, ...params]) as LicenceClaims;
}

// Strings without these characters serialise as themselves between quotes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const quote = (text: string): string => (NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`);

function quoteList(list: readonly string[]): string {
  let json = '[';
  for (let i = 0; i < list.length; i++) json += (i === 0 ? '' : ',') + quote(list[i]!);
  return `${json}]`;
}

/**
 * The canonical payload JSON: exactly JSON.stringify(orderClaims(input)) (a test holds the two
 * together), written out directly because JSON.stringify of a freshly built object with many
 * keys costs several microseconds, more than a tenth of an Ed25519 or P-256 signature.
 */
export function licencePayload(input: ClaimsInput): string {
  const { claims: c, params } = normalise(input);
  let json = `{"v":${c.v},"lid":${quote(c.lid)},"prd":${quote(c.prd)},"org":${quote(c.org)}`;
  if (c.typ !== undefined) json += `,"typ":"${c.typ}"`;
  if (c.act !== undefined) json += `,"act":"${c.act}"`;
  if (c.lic !== undefined) json += `,"lic":${quote(c.lic)}`;
  json += `,"iat":${c.iat}`;
  if (c.nbf !== undefined) json += `,"nbf":${c.nbf}`;
  if (c.exp !== undefined) json += `,"exp":${c.exp}`;
  json += `,"grace":${c.grace}`;
  if (c.fp !== undefined) json += `,"fp":${typeof c.fp === 'string' ? quote(c.fp) : quoteList(c.fp)}`;
  if (c.fpn !== undefined) json += `,"fpn":${c.fpn}`;
  json += `,"mm":${c.mm}`;
  if (c.chk !== undefined) json += `,"chk":${c.chk}`;
  if (c.max !== undefined) json += `,"max":${c.max}`;
  if (c.lse !== undefined) json += `,"lse":${c.lse}`;
  if (c.brw !== undefined) json += `,"brw":${c.brw}`;
  if (c.upd !== undefined) json += `,"upd":${c.upd}`;
  if (c.mtr !== undefined) json += `,"mtr":${JSON.stringify(c.mtr)}`;
  if (c.trl) json += ',"trl":true';
  for (let i = 0; i < params.length; i++) {
    const value = params[i]![1];
    // Values are checked ParamValues: a string, a safe integer, a boolean or a list of strings.
    const text = typeof value === 'string' ? quote(value) : Array.isArray(value) ? quoteList(value) : String(value);
    json += `,${quote(params[i]![0])}:${text}`;
  }
  return `${json}}`;
}

/** `B64U(payloadJSON) + "." + B64U(signature over the ASCII of the first part)`. */
export function signLicence(input: ClaimsInput, privateKey: KeyObject): string {
  const payloadPart = b64uEncodeText(licencePayload(input));
  const signature = signBytes(privateKey, transientBytes(payloadPart, 'latin1'));
  return `${payloadPart}.${signature.toString('base64url')}`;
}

/** `signLicence` with any signer, such as a key on a PKCS#11 token; its signature in the wire format (DER for ECDSA). */
export async function signLicenceWith(input: ClaimsInput, sign: (data: Buffer) => Promise<Buffer>): Promise<string> {
  const payloadPart = b64uEncodeText(licencePayload(input));
  return `${payloadPart}.${(await sign(Buffer.from(payloadPart, 'latin1'))).toString('base64url')}`;
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
function claimsProblem(c: { readonly [name: string]: unknown }): string | null {
  const fpIsList = Array.isArray(c.fp);
  if (c.v !== 3 && c.v !== 4 && c.v !== 5) return 'claim "v" must be 3, 4 or 5';
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
  if (c.v !== 5 && (c.v === 4) !== fpIsList) return 'claim "v" must be 4 exactly when "fp" is a list';
  if (c.fpn !== undefined && (!isInt(c.fpn) || c.fpn < 1 || c.fpn > 5)) return 'claim "fpn" must be an integer from 1 to 5';
  if (!isInt(c.mm) || c.mm < 1) return 'claim "mm" must be an integer of at least 1';
  if (c.chk !== undefined && (!isInt(c.chk) || c.chk < 0)) return 'claim "chk" must be an integer of at least 0';
  if (c.max !== undefined && (!isInt(c.max) || c.max < 0)) return 'claim "max" must be an integer of at least 0';
  // In v 3 and 4 payloads `lse` and `brw` are product parameters like any other name.
  if (c.v === 5) return floatingProblem(c);
  return null;
}

const isCount = (value: unknown) => value === null || (isInt(value) && value >= 0 && value <= 1e12);

/** The first meter of `mtr` that is not `{k, p, l, o}` with a parameter-like key, a period and counts 0 to 10^12 or null. */
function meterProblem(meters: readonly MeterClaim[]): string | null {
  for (const [i, m] of meters.entries()) {
    if (typeof m.k !== 'string' || !/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(m.k)) return `claim "mtr"[${i}].k must be a meter key`;
    if (!(METER_PERIODS as readonly string[]).includes(m.p)) return `claim "mtr"[${i}].p must be NONE, DAY, MONTH or YEAR`;
    if (!isCount(m.l) || !isCount(m.o)) return `claim "mtr"[${i}] limit and overage must be integers 0 to 10^12 or null`;
  }
  return null;
}

/** A floating licence (DESIGN.md 13): ONLINE, no at-issue fingerprints, a lease length, maybe a borrow limit. */
function floatingProblem(c: { readonly [name: string]: unknown }): string | null {
  if (!isInt(c.lse) || c.lse < LEASE_SECONDS_RANGE.min || c.lse > LEASE_SECONDS_RANGE.max) {
    return `claim "lse" must be an integer from ${LEASE_SECONDS_RANGE.min} to ${LEASE_SECONDS_RANGE.max} when "v" is 5`;
  }
  if (c.brw !== undefined && (!isInt(c.brw) || c.brw < 1 || c.brw > BORROW_SECONDS_MAX)) {
    return `claim "brw" must be an integer from 1 to ${BORROW_SECONDS_MAX}`;
  }
  if (c.typ !== 'ONLINE') return 'claim "typ" must be ONLINE when "v" is 5';
  if (c.fp !== undefined) return 'claim "fp" is not allowed when "v" is 5';
  return null;
}

/** Strict structural parse; the signature is not checked here (see verifyLicence). */
export function parseLicence(text: string): ParsedLicence {
  if (typeof text !== 'string') throw new MalformedError('licence is not a string');
  const dot = text.indexOf('.');
  if (dot < 0 || text.indexOf('.', dot + 1) >= 0) throw new MalformedError('licence must have exactly two parts separated by "."');
  const payloadPart = text.slice(0, dot);
  const signature = b64uDecode(text.slice(dot + 1), 'licence signature');
  // Decoded into the shared buffer: the bytes are consumed by the UTF-8 decoder right here.
  const payloadBytes = b64uDecodeTransient(payloadPart, 'licence payload');

  let claims: unknown;
  let json: string;
  try {
    json = utf8.decode(payloadBytes);
    claims = JSON.parse(json);
  } catch {
    throw new MalformedError('licence payload is not UTF-8 JSON');
  }
  const strictness = strictJsonProblem(json);
  if (strictness !== null) throw new MalformedError(`licence payload: ${strictness}`);
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) {
    throw new MalformedError('licence payload is not a JSON object');
  }
  const problem = claimsProblem(claims as Record<string, unknown>);
  if (problem !== null) throw new MalformedError(`licence ${problem}`);
  return { payloadPart, claims: claims as LicenceClaims, signature };
}

/** The key (of a product's key history) whose signature the licence carries, or null. */
export function verifyLicence(parsed: ParsedLicence, publicKeys: readonly KeyObject[]): KeyObject | null {
  // The signed bytes are the payload text itself, so a payloadPart altered after parsing
  // (even one that decodes alike) cannot verify.
  const data = transientBytes(parsed.payloadPart, 'latin1');
  for (const key of publicKeys) {
    if (verifyBytes(key, data, parsed.signature)) return key;
  }
  return null;
}

export type LicenceReading = { ok: true; parsed: ParsedLicence; key: KeyObject } | { ok: false; reason: 'MALFORMED' | 'BAD_SIGNATURE'; message: string };

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
  const reserved = reservedFor(claims.v);
  // fromEntries defines own properties, so a "__proto__" key from JSON.parse stays data.
  // A trial's `trl` is its claim; a product whose parameter kept the name has no trials (DESIGN.md 2).
  const trial = claims.trl === true;
  return Object.fromEntries(
    Object.entries(claims).filter(([key, value]) => !reserved.has(key) && !(key === 'mtr' && isMeterClaim(value)) && !(trial && key === 'trl')),
  );
}
