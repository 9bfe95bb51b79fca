import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/*
 * Envelope encryption for private keys at rest. Each key gets its own random 32-byte data key,
 * which encrypts the key with AES-256-GCM; the data key is itself encrypted (wrapped) with
 * AES-256-GCM under the master key. One text form carries everything, parts in base64:
 *
 *   sealed-v1$<wrap iv>$<wrapped data key>$<wrap tag>$<iv>$<ciphertext>$<tag>
 *
 * The caller's `context` (the key's fingerprint) is authenticated with both layers, so a sealed
 * blob copied onto another key's row does not open there.
 */
const TAG = 'sealed-v1';
const IV_BYTES = 12;

/** A sealed value that does not open: the message is safe to show (it holds no key material). */
export class UnsealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsealError';
  }
}

function encrypt(key: Buffer, plaintext: Buffer, context: string): [Buffer, Buffer, Buffer] {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [iv, ciphertext, cipher.getAuthTag()];
}

function decrypt(key: Buffer, [iv, ciphertext, tag]: Buffer[], context: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, iv!).setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(tag!);
  return Buffer.concat([decipher.update(ciphertext!), decipher.final()]);
}

export function seal(masterKey: Buffer, plaintext: Buffer, context: string): string {
  const dataKey = randomBytes(32);
  const wrapped = encrypt(masterKey, dataKey, context);
  const sealed = encrypt(dataKey, plaintext, context);
  return [TAG, ...wrapped, ...sealed].map((part) => (typeof part === 'string' ? part : part.toString('base64'))).join('$');
}

export function unseal(masterKey: Buffer, text: string, context: string): Buffer {
  const [tag, ...parts] = text.split('$');
  if (tag !== TAG || parts.length !== 6) throw new UnsealError('the sealed key is not in a format this version reads');
  const buffers = parts.map((part) => Buffer.from(part, 'base64'));
  try {
    const dataKey = decrypt(masterKey, buffers.slice(0, 3), context);
    return decrypt(dataKey, buffers.slice(3), context);
  } catch {
    throw new UnsealError('the sealed private key does not open with this master key (was LICENSOR_MASTER_KEY changed?)');
  }
}
