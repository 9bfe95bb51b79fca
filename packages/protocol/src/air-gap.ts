import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { b64uDecode, b64uEncode } from './encoding.js';
import { MalformedError } from './errors.js';
import { parseFingerprint } from './fingerprint.js';
import { signBytes, verifyBytes } from './signing.js';
import { strictJsonProblem } from './strict-json.js';

/**
 * DESIGN.md 14: the three texts a person carries between an air-gapped machine and the service.
 * Each is `TAG.<B64U(JSON)>.<B64U(signature over the ASCII of "TAG.<B64U(JSON)>")>`: the request
 * (SVCA1) and the deactivation (SVCD1) signed by the installation's Ed25519 device key, the
 * response (SVCX1) by the product key that signed the licence. Times are Unix seconds.
 */
export interface ActivationRequestFields {
  lid: string;
  fp: string;
  /** The device public key: B64U of its 32 raw Ed25519 bytes. */
  dpk: string;
  nonce: string;
  iat: number;
}

export interface ActivationResponseFields {
  lid: string;
  /** The activation's id, as a string. */
  aid: string;
  fp: string;
  dpk: string;
  nonce: string;
  /** The licence's status when it was activated: ACTIVE or GRACE. */
  status: 'ACTIVE' | 'GRACE';
  /** The service's time. */
  iat: number;
  boundAt: number;
  until: number;
}

export interface DeactivationFields {
  lid: string;
  aid: string;
  iat: number;
}

/** A parsed text: the fields, the signed part (`TAG.<payload>`) and the signature bytes. */
export interface Signed<T> {
  text: string;
  signedPart: string;
  fields: T;
  signature: Buffer;
}

export const ACTIVATION_NONCE = /^[A-Za-z0-9_-]{16,128}$/;
const LID_MAX = 128;
const AID = /^[0-9]{1,20}$/;
// Far above any well-formed text (a request is about 450 characters), so big inputs are refused unread.
const MAX_TEXT = 4096;

type Check = (value: unknown) => boolean;
const isSeconds: Check = (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isLid: Check = (v) => typeof v === 'string' && v.length > 0 && v.length <= LID_MAX;
const isNonce: Check = (v) => typeof v === 'string' && ACTIVATION_NONCE.test(v);
const isAid: Check = (v) => typeof v === 'string' && AID.test(v);
const isFingerprint: Check = (v) => {
  try {
    parseFingerprint(v as string);
    return true;
  } catch {
    return false;
  }
};
const isDpk: Check = (v) => {
  try {
    return b64uDecode(v as string).length === 32;
  } catch {
    return false;
  }
};

interface Format<T> {
  tag: 'SVCA1' | 'SVCX1' | 'SVCD1';
  what: string;
  /** Field names in wire order, each with its rule and the words of its refusal. */
  fields: ReadonlyArray<readonly [keyof T & string, Check, string]>;
}

const REQUEST: Format<ActivationRequestFields> = {
  tag: 'SVCA1',
  what: 'activation request',
  fields: [
    ['lid', isLid, 'a licence id of 1 to 128 characters'],
    ['fp', isFingerprint, 'a fingerprint'],
    ['dpk', isDpk, 'base64url of 32 bytes'],
    ['nonce', isNonce, '16 to 128 characters of A-Z a-z 0-9 _ -'],
    ['iat', isSeconds, 'Unix seconds'],
  ],
};

const RESPONSE: Format<ActivationResponseFields> = {
  tag: 'SVCX1',
  what: 'activation response',
  fields: [
    ['lid', isLid, 'a licence id of 1 to 128 characters'],
    ['aid', isAid, 'an activation id of 1 to 20 digits'],
    ['fp', isFingerprint, 'a fingerprint'],
    ['dpk', isDpk, 'base64url of 32 bytes'],
    ['nonce', isNonce, '16 to 128 characters of A-Z a-z 0-9 _ -'],
    ['status', (v) => v === 'ACTIVE' || v === 'GRACE', 'ACTIVE or GRACE'],
    ['iat', isSeconds, 'Unix seconds'],
    ['boundAt', isSeconds, 'Unix seconds'],
    ['until', isSeconds, 'Unix seconds'],
  ],
};

const DEACTIVATION: Format<DeactivationFields> = {
  tag: 'SVCD1',
  what: 'deactivation code',
  fields: [
    ['lid', isLid, 'a licence id of 1 to 128 characters'],
    ['aid', isAid, 'an activation id of 1 to 20 digits'],
    ['iat', isSeconds, 'Unix seconds'],
  ],
};

/** The payload JSON with the fields in wire order; throws TypeError for a field out of its rule. */
function payloadOf<T>(format: Format<T>, fields: T): string {
  const ordered: Record<string, unknown> = {};
  for (const [name, check, rule] of format.fields) {
    if (!check(fields[name])) throw new TypeError(`${format.what} field "${name}" must be ${rule}`);
    ordered[name] = fields[name];
  }
  return JSON.stringify(ordered);
}

async function signFormat<T>(format: Format<T>, fields: T, sign: (data: Buffer) => Buffer | Promise<Buffer>): Promise<string> {
  const signedPart = `${format.tag}.${b64uEncode(payloadOf(format, fields))}`;
  return `${signedPart}.${(await sign(Buffer.from(signedPart, 'latin1'))).toString('base64url')}`;
}

function signFormatNow<T>(format: Format<T>, fields: T, key: KeyObject): string {
  const signedPart = `${format.tag}.${b64uEncode(payloadOf(format, fields))}`;
  return `${signedPart}.${signBytes(key, Buffer.from(signedPart, 'latin1')).toString('base64url')}`;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Strict structural parse: exact tag, canonical base64url, strict JSON, exactly these fields. */
function parseFormat<T>(format: Format<T>, text: string): Signed<T> {
  const { tag, what } = format;
  if (typeof text !== 'string') throw new MalformedError(`${what} is not a string`);
  if (text.length > MAX_TEXT) throw new MalformedError(`${what} is too long`);
  const pieces = text.split('.');
  if (pieces[0] !== tag) throw new MalformedError(`${what} must start with "${tag}."`);
  if (pieces.length !== 3) throw new MalformedError(`${what} must have three parts: ${tag}.<payload>.<signature>`);
  const bytes = b64uDecode(pieces[1]!, `${what} payload`);
  const signature = b64uDecode(pieces[2]!, `${what} signature`);
  let json: string;
  let value: unknown;
  try {
    json = utf8.decode(bytes);
    value = JSON.parse(json);
  } catch {
    throw new MalformedError(`${what} payload is not UTF-8 JSON`);
  }
  const strictness = strictJsonProblem(json);
  if (strictness !== null) throw new MalformedError(`${what} payload: ${strictness}`);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new MalformedError(`${what} payload is not a JSON object`);
  const object = value as Record<string, unknown>;
  const names = format.fields.map(([name]) => name as string);
  const extra = Object.keys(object).find((key) => !names.includes(key));
  if (extra !== undefined) throw new MalformedError(`${what} has an unknown field "${extra}"`);
  for (const [name, check, rule] of format.fields) {
    if (!check(object[name])) throw new MalformedError(`${what} field "${name}" must be ${rule}`);
  }
  return { text, signedPart: `${tag}.${pieces[1]}`, fields: object as T, signature };
}

const verifies = (parsed: Signed<unknown>, key: KeyObject) => verifyBytes(key, Buffer.from(parsed.signedPart, 'latin1'), parsed.signature);

/** The text with every space, tab and line break removed: how a typed or grouped text is read back. */
export function compactText(text: string): string {
  return typeof text === 'string' ? text.replace(/\s+/g, '') : text;
}

/** The text in groups of five characters separated by single spaces, for reading out and typing. */
export function groupsOfFive(text: string): string {
  return (text.match(/.{1,5}/g) ?? []).join(' ');
}

/** The device public key as `dpk`: B64U of the 32 raw bytes of an Ed25519 public (or private) key. */
export function devicePublicKeyText(key: KeyObject): string {
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new TypeError('a device key is an Ed25519 key');
  return jwk.x;
}

/** The Ed25519 public key a `dpk` names. */
export function devicePublicKey(dpk: string): KeyObject {
  if (!isDpk(dpk)) throw new MalformedError('dpk must be base64url of 32 bytes');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: dpk }, format: 'jwk' });
}

/** The 32-byte seed (B64U) of an Ed25519 private key: how every SDK keeps its device key. */
export function devicePrivateKeySeed(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || typeof jwk.d !== 'string') throw new TypeError('a device key is an Ed25519 private key');
  return jwk.d;
}

/** An Ed25519 private key from its 32-byte seed (B64U), as the SDKs keep it. */
export function devicePrivateKey(seed: string): KeyObject {
  const d = b64uDecode(seed, 'device key');
  if (d.length !== 32) throw new MalformedError('device key must be 32 bytes');
  // PKCS#8 of an Ed25519 key is a fixed 16-byte prefix followed by the seed (RFC 8410).
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), d]);
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
}

export const signActivationRequest = (fields: ActivationRequestFields, deviceKey: KeyObject): string => signFormatNow(REQUEST, fields, deviceKey);
export const signDeactivation = (fields: DeactivationFields, deviceKey: KeyObject): string => signFormatNow(DEACTIVATION, fields, deviceKey);
export const signActivationResponse = (fields: ActivationResponseFields, productKey: KeyObject): string => signFormatNow(RESPONSE, fields, productKey);
/** `signActivationResponse` with any signer, such as a key on a PKCS#11 token. */
export const signActivationResponseWith = (fields: ActivationResponseFields, sign: (data: Buffer) => Promise<Buffer>): Promise<string> =>
  signFormat(RESPONSE, fields, sign);

export const parseActivationRequest = (text: string): Signed<ActivationRequestFields> => parseFormat(REQUEST, text);
export const parseActivationResponse = (text: string): Signed<ActivationResponseFields> => parseFormat(RESPONSE, text);
export const parseDeactivation = (text: string): Signed<DeactivationFields> => parseFormat(DEACTIVATION, text);

/** True when the request was signed by the device key it names. */
export const verifyActivationRequest = (parsed: Signed<ActivationRequestFields>): boolean => verifies(parsed, devicePublicKey(parsed.fields.dpk));

/** True when the deactivation was signed by this device key (the activation's stored `dpk`). */
export const verifyDeactivation = (parsed: Signed<DeactivationFields>, dpk: string): boolean => verifies(parsed, devicePublicKey(dpk));

/** The product key (of its key history) that signed the response, or null. */
export function verifyActivationResponse(parsed: Signed<ActivationResponseFields>, publicKeys: readonly KeyObject[]): KeyObject | null {
  return publicKeys.find((key) => verifies(parsed, key)) ?? null;
}
