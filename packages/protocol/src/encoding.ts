import { MalformedError } from './errors.js';

// Index of each base64url character's 6-bit value, -1 for anything else.
const VALUE = new Int8Array(128).fill(-1);
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

/** Base64url without padding. Strings are taken as UTF-8. */
export function b64uEncode(data: Uint8Array | string): string {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buffer.toString('base64url');
}

/**
 * True when `text` is the canonical unpadded base64url form of some byte string, i.e. it
 * would re-encode to itself. Node's own decoder silently skips stray characters and
 * ignores trailing bits, which would let many strings name the same bytes.
 */
export function isCanonicalB64u(text: string): boolean {
  const length = text.length;
  if (length % 4 === 1) return false;
  let last = 0;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    const value = code < 128 ? VALUE[code]! : -1;
    if (value < 0) return false;
    last = value;
  }
  // The final character of a short group carries bits past the end of the data; they must be 0.
  if (length % 4 === 2) return (last & 0x0f) === 0;
  if (length % 4 === 3) return (last & 0x03) === 0;
  return true;
}

/**
 * Strict base64url decoding: refuses padding, stray characters, non-zero trailing bits and
 * (unless `allowEmpty`) the empty string.
 */
export function b64uDecode(text: string, what = 'value', allowEmpty = false): Buffer {
  if (typeof text !== 'string') throw new MalformedError(`${what} is not a string`);
  if (text.length === 0 && !allowEmpty) throw new MalformedError(`${what} is empty`);
  if (!isCanonicalB64u(text)) throw new MalformedError(`${what} is not canonical unpadded base64url`);
  return Buffer.from(text, 'base64url');
}
