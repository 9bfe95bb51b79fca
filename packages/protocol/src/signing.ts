import { sign, verify, type KeyObject } from 'node:crypto';
import { ALGORITHM_INFO, algorithmOfKey, type Algorithm } from './algorithms.js';

// Reading asymmetricKeyDetails allocates a fresh object on every access; the hot path
// (every check signs a receipt) looks each key up once.
const detected = new WeakMap<KeyObject, Algorithm | null>();

function detect(key: KeyObject): Algorithm | null {
  let algorithm = detected.get(key);
  if (algorithm === undefined) {
    algorithm = algorithmOfKey(key);
    detected.set(key, algorithm);
  }
  return algorithm;
}

/** Signs with the digest the key's algorithm prescribes; ECDSA signatures are DER. */
export function signBytes(privateKey: KeyObject, data: Uint8Array): Buffer {
  const algorithm = detect(privateKey);
  if (algorithm === null || privateKey.type !== 'private') {
    throw new TypeError('signing needs an Ed25519, RSA 2048/3072/4096, P-256 or P-384 private key');
  }
  return sign(ALGORITHM_INFO[algorithm].digest, data, privateKey);
}

/** False for any signature that does not verify, including garbage and unsupported keys. */
export function verifyBytes(publicKey: KeyObject, data: Uint8Array, signature: Uint8Array): boolean {
  const algorithm = detect(publicKey);
  if (algorithm === null) return false;
  try {
    return verify(ALGORITHM_INFO[algorithm].digest, data, publicKey, signature);
  } catch {
    // OpenSSL throws rather than answering false for some undecodable DER signatures.
    return false;
  }
}
