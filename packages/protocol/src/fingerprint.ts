import { createHash } from 'node:crypto';
import { b64uDecode, b64uEncode } from './encoding.js';
import { MalformedError } from './errors.js';

/** The five components, in the order the body lists them. */
export const FINGERPRINT_COMPONENTS = ['machine', 'host', 'mac', 'cpu', 'disk'] as const;
export type FingerprintComponent = (typeof FINGERPRINT_COMPONENTS)[number];

/** A component's 16 lowercase hex characters, or `-` when it could not be read. */
export type FingerprintParts = Record<FingerprintComponent, string>;
export type RawComponents = Partial<Record<FingerprintComponent, string | null | undefined>>;

export const MISSING_COMPONENT = '-';
const PREFIX = 'SVC1';
// The longest well-formed fingerprint is 161 characters; refuse big inputs before hashing them.
const MAX_LENGTH = 256;
const PART = /^(?:[0-9a-f]{16}|-)$/;
const CHECKSUM = /^[0-9a-f]{8}$/;

export type FingerprintProblem = 'PREFIX' | 'STRUCTURE' | 'ENCODING' | 'COMPONENTS' | 'COMPONENT_VALUE' | 'CHECKSUM';

export class FingerprintError extends MalformedError {
  constructor(
    readonly problem: FingerprintProblem,
    message: string,
  ) {
    super(message);
    this.name = 'FingerprintError';
  }
}

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** First 16 lowercase hex characters of SHA-256 over the raw value's UTF-8 bytes. */
export function hashComponent(raw: string): string {
  return sha256Hex(raw).slice(0, 16);
}

function checksumOf(body: string): string {
  return sha256Hex(`${PREFIX}.${body}`).slice(0, 8);
}

/** Assembles the string from already hashed parts (the SDK hashes; the service only parses). */
export function fingerprintFromParts(parts: FingerprintParts): string {
  const fields = FINGERPRINT_COMPONENTS.map((name) => {
    const value = parts[name];
    if (typeof value !== 'string' || !PART.test(value)) {
      throw new TypeError(`fingerprint part "${name}" must be 16 lowercase hex characters or "-"`);
    }
    return `${name}=${value}`;
  });
  const body = b64uEncode(fields.join(';'));
  return `${PREFIX}.${body}.${checksumOf(body)}`;
}

/**
 * Hashes raw component values into a fingerprint. A missing, null or empty value counts as
 * unreadable: an empty string would otherwise make two machines agree on nothing.
 */
export function buildFingerprint(raw: RawComponents): string {
  const parts = {} as FingerprintParts;
  for (const name of FINGERPRINT_COMPONENTS) {
    const value = raw[name];
    parts[name] = value == null || value === '' ? MISSING_COMPONENT : hashComponent(value);
  }
  return fingerprintFromParts(parts);
}

/** Decodes and checks a fingerprint; any deviation from the exact form is a FingerprintError. */
export function parseFingerprint(text: string): FingerprintParts {
  if (typeof text !== 'string') throw new FingerprintError('STRUCTURE', 'fingerprint must be a string');
  if (!text.startsWith(`${PREFIX}.`)) throw new FingerprintError('PREFIX', `fingerprint must start with "${PREFIX}."`);
  if (text.length > MAX_LENGTH) throw new FingerprintError('STRUCTURE', 'fingerprint is too long');
  const pieces = text.split('.');
  if (pieces.length !== 3) {
    throw new FingerprintError('STRUCTURE', 'fingerprint must have three dot-separated parts: SVC1.<body>.<checksum>');
  }
  const body = pieces[1]!;
  const checksum = pieces[2]!;
  let decoded: Buffer;
  try {
    decoded = b64uDecode(body, 'fingerprint body');
  } catch {
    throw new FingerprintError('ENCODING', 'fingerprint body is not canonical unpadded base64url');
  }
  if (!CHECKSUM.test(checksum)) {
    throw new FingerprintError('STRUCTURE', 'fingerprint checksum must be 8 lowercase hex characters');
  }

  const fields = decoded.toString('latin1').split(';');
  if (fields.length !== FINGERPRINT_COMPONENTS.length) {
    throw new FingerprintError('COMPONENTS', `fingerprint body must list exactly ${FINGERPRINT_COMPONENTS.join(', ')}`);
  }
  const parts = {} as FingerprintParts;
  for (let i = 0; i < FINGERPRINT_COMPONENTS.length; i++) {
    const name = FINGERPRINT_COMPONENTS[i]!;
    const field = fields[i]!;
    if (!field.startsWith(`${name}=`)) {
      throw new FingerprintError('COMPONENTS', `fingerprint body must list exactly ${FINGERPRINT_COMPONENTS.join(', ')}, in that order`);
    }
    const value = field.slice(name.length + 1);
    if (!PART.test(value)) {
      throw new FingerprintError('COMPONENT_VALUE', `fingerprint component "${name}" must be 16 lowercase hex characters or "-"`);
    }
    parts[name] = value;
  }
  if (checksumOf(body) !== checksum) throw new FingerprintError('CHECKSUM', 'fingerprint checksum does not match its body');
  return parts;
}

/** Number of components present in both and equal; picks the best of several matching seats. */
export function matchScore(a: FingerprintParts, b: FingerprintParts): number {
  let score = 0;
  for (const name of FINGERPRINT_COMPONENTS) {
    if (a[name] !== MISSING_COMPONENT && a[name] === b[name]) score++;
  }
  return score;
}

/** Same machine when at least `need` (1 to 5) components are present in both and equal. */
export function fingerprintsMatch(a: FingerprintParts, b: FingerprintParts, need: number): boolean {
  if (!Number.isInteger(need) || need < 1 || need > FINGERPRINT_COMPONENTS.length) {
    throw new RangeError('fingerprint need must be an integer from 1 to 5');
  }
  return matchScore(a, b) >= need;
}

/** First 32 lowercase hex characters of SHA-256 over the fingerprint exactly as sent. */
export function fpDigest(fingerprint: string): string {
  return sha256Hex(fingerprint).slice(0, 32);
}
