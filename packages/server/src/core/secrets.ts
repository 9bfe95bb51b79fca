import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Compares two hex digests in constant time. */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** 256 bits of random output as 64 lowercase hex characters. */
export function newSecret(): string {
  return randomBytes(32).toString('hex');
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A public identifier of `[a-z0-9]` (token ids, check ids). */
export function newPublicId(length = 16): string {
  let id = '';
  for (let i = 0; i < length; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}
