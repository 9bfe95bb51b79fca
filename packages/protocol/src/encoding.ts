import { MalformedError } from './errors.js';

/** Base64url without padding. Strings are taken as UTF-8. */
export function b64uEncode(data: Uint8Array | string): string {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buffer.toString('base64url');
}

// Signing, verifying and parsing turn the payload text into bytes on every call; reusing one
// buffer saves an allocation (and garbage) per operation. Safe because every user is
// synchronous (node:crypto's one-shot sign and verify, TextDecoder) and keeps no view.
const scratch = Buffer.allocUnsafe(16 * 1024);

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

/**
 * Decodes `text` when it is the canonical unpadded base64url form of some bytes (it would
 * re-encode to itself), else null. Node's decoder skips or stops at foreign characters, reads
 * `+` and `/` as well, and ignores trailing bits; so a text is canonical exactly when none of
 * its characters was dropped (the output has the full length), it has no `+` or `/`, and its
 * unused trailing bits are zero. This is several times cheaper than a regular expression or a
 * re-encoding on the hot path; a test holds it to the re-encoding definition.
 */
function decodeCanonical(text: string, transient = false): Buffer | null {
  const length = text.length;
  const rest = length % 4;
  if (rest === 1) return null;
  const size = (length * 3) >>> 2;
  const bytes = transient && size <= scratch.length ? scratch.subarray(0, scratch.write(text, 0, 'base64url')) : Buffer.from(text, 'base64url');
  if (bytes.length !== size || text.includes('+') || text.includes('/')) return null;
  if (rest !== 0) {
    const code = text.charCodeAt(length - 1);
    const value = code < 128 ? VALUE[code]! : -1;
    if (value < 0 || (value & (rest === 2 ? 0x0f : 0x03)) !== 0) return null;
  }
  return bytes;
}

/**
 * Strict base64url decoding: refuses padding, stray characters, the `+` `/` alphabet,
 * non-zero trailing bits and (unless `allowEmpty`) the empty string.
 */
export function b64uDecode(text: string, what = 'value', allowEmpty = false): Buffer {
  if (typeof text !== 'string') throw new MalformedError(`${what} is not a string`);
  if (text.length === 0 && !allowEmpty) throw new MalformedError(`${what} is empty`);
  const bytes = decodeCanonical(text);
  if (bytes === null) throw new MalformedError(`${what} is not canonical unpadded base64url`);
  return bytes;
}

/** True when `text` is the canonical unpadded base64url form of some byte string. */
export function isCanonicalB64u(text: string): boolean {
  return typeof text === 'string' && decodeCanonical(text, true) !== null;
}

/** b64uDecode into the shared buffer (see transientBytes): use the result at once, never keep it. */
export function b64uDecodeTransient(text: string, what = 'value'): Buffer {
  if (text.length === 0) throw new MalformedError(`${what} is empty`);
  const bytes = decodeCanonical(text, true);
  if (bytes === null) throw new MalformedError(`${what} is not canonical unpadded base64url`);
  return bytes;
}

/** Base64url of the UTF-8 of `text`, without allocating its bytes. */
export function b64uEncodeText(text: string): string {
  if (text.length * 3 > scratch.length) return Buffer.from(text, 'utf8').toString('base64url');
  return scratch.toString('base64url', 0, scratch.write(text, 0, 'utf8'));
}

/**
 * The bytes of `text` in `encoding`, as a view into a shared buffer that the next call
 * overwrites: use it at once, never keep it.
 */
export function transientBytes(text: string, encoding: 'latin1' | 'utf8'): Buffer {
  // UTF-8 needs at most three bytes per UTF-16 unit, so this bound means nothing is cut off.
  if (text.length * (encoding === 'utf8' ? 3 : 1) > scratch.length) return Buffer.from(text, encoding);
  return scratch.subarray(0, scratch.write(text, 0, encoding));
}
