import { generateKeyPair, type KeyObject } from 'node:crypto';

export const ALGORITHMS = ['ED25519', 'RSA_2048', 'RSA_3072', 'RSA_4096', 'EC_P256', 'EC_P384'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

export type SignatureAlgorithmName = 'Ed25519' | 'SHA256withRSA' | 'SHA256withECDSA' | 'SHA384withECDSA';

/** Node's generateKeyPair arguments for an algorithm. */
export type KeyGenerationParams =
  | { type: 'ed25519'; options: Record<string, never> }
  | { type: 'rsa'; options: { modulusLength: number; publicExponent: number } }
  | { type: 'ec'; options: { namedCurve: 'P-256' | 'P-384' } };

export interface AlgorithmInfo {
  id: Algorithm;
  label: string;
  /** The JDK `Signature.getInstance` name a Java verifier uses. */
  signatureAlgorithm: SignatureAlgorithmName;
  /** The JDK `KeyFactory.getInstance` name for the public key. */
  keyFactory: 'Ed25519' | 'RSA' | 'EC';
  /** Digest passed to node:crypto sign/verify; null for Ed25519, which hashes internally. */
  digest: 'sha256' | 'sha384' | null;
  keyGeneration: KeyGenerationParams;
}

const RSA_EXPONENT = 65537;

function rsa(id: Algorithm, bits: number): AlgorithmInfo {
  return {
    id,
    label: `RSA ${bits}-bit`,
    signatureAlgorithm: 'SHA256withRSA',
    keyFactory: 'RSA',
    digest: 'sha256',
    keyGeneration: { type: 'rsa', options: { modulusLength: bits, publicExponent: RSA_EXPONENT } },
  };
}

export const ALGORITHM_INFO: Readonly<Record<Algorithm, Readonly<AlgorithmInfo>>> = Object.freeze({
  ED25519: {
    id: 'ED25519',
    label: 'Ed25519',
    signatureAlgorithm: 'Ed25519',
    keyFactory: 'Ed25519',
    digest: null,
    keyGeneration: { type: 'ed25519', options: {} },
  },
  RSA_2048: rsa('RSA_2048', 2048),
  RSA_3072: rsa('RSA_3072', 3072),
  RSA_4096: rsa('RSA_4096', 4096),
  EC_P256: {
    id: 'EC_P256',
    label: 'ECDSA P-256',
    signatureAlgorithm: 'SHA256withECDSA',
    keyFactory: 'EC',
    digest: 'sha256',
    keyGeneration: { type: 'ec', options: { namedCurve: 'P-256' } },
  },
  EC_P384: {
    id: 'EC_P384',
    label: 'ECDSA P-384',
    signatureAlgorithm: 'SHA384withECDSA',
    keyFactory: 'EC',
    digest: 'sha384',
    keyGeneration: { type: 'ec', options: { namedCurve: 'P-384' } },
  },
});

export function isAlgorithm(value: unknown): value is Algorithm {
  return typeof value === 'string' && (ALGORITHMS as readonly string[]).includes(value);
}

// OpenSSL reports curves by these names; the NIST names are accepted too for safety.
const CURVES: Record<string, Algorithm> = {
  prime256v1: 'EC_P256',
  'P-256': 'EC_P256',
  secp384r1: 'EC_P384',
  'P-384': 'EC_P384',
};

/** The algorithm a key (private or public) belongs to, or null when it is none of the six. */
export function algorithmOfKey(key: KeyObject): Algorithm | null {
  if (key.type !== 'private' && key.type !== 'public') return null;
  switch (key.asymmetricKeyType) {
    case 'ed25519':
      return 'ED25519';
    case 'rsa': {
      const bits = key.asymmetricKeyDetails?.modulusLength;
      if (bits === 2048) return 'RSA_2048';
      if (bits === 3072) return 'RSA_3072';
      if (bits === 4096) return 'RSA_4096';
      return null;
    }
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      return (curve !== undefined && CURVES[curve]) || null;
    }
    default:
      return null;
  }
}

/** Generates a key pair off the main thread (RSA-4096 takes seconds). */
export function generateAlgorithmKeyPair(algorithm: Algorithm): Promise<{ privateKey: KeyObject; publicKey: KeyObject }> {
  const { type, options } = ALGORITHM_INFO[algorithm].keyGeneration;
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, publicKey: KeyObject, privateKey: KeyObject) => (error ? reject(error) : resolve({ privateKey, publicKey }));
    // The overloads are per literal type, so each branch calls its own.
    if (type === 'ed25519') generateKeyPair('ed25519', {}, done);
    else if (type === 'rsa') generateKeyPair('rsa', options, done);
    else generateKeyPair('ec', options, done);
  });
}
