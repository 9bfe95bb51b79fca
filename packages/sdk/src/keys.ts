import { createPublicKey, KeyObject } from 'node:crypto';
import { LicensorError } from './errors.js';

/** A product public key as SPKI PEM text or a KeyObject. */
export type PublicKeyInput = string | KeyObject;
/** One key, or a product's key history (`GET /products/{id}/keys`): any of them may have signed. */
export type PublicKeys = PublicKeyInput | readonly PublicKeyInput[];

/** Reads every key once; a key that cannot be read is a programming error, so it throws. */
export function readPublicKeys(keys: PublicKeys): KeyObject[] {
  const list = Array.isArray(keys) ? (keys as readonly PublicKeyInput[]) : [keys as PublicKeyInput];
  if (list.length === 0) throw new LicensorError('INVALID_KEY', 'at least one public key is needed');
  return list.map((key, index) => {
    try {
      // Verifying needs only the public half; a private key has no place inside an application.
      const object = key instanceof KeyObject ? key : createPublicKey(key);
      if (object.type !== 'public') throw new Error('not a public key');
      return object;
    } catch (error) {
      throw new LicensorError('INVALID_KEY', `public key ${index + 1} cannot be read: ${(error as Error).message}`);
    }
  });
}
