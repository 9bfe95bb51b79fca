// Golden vectors shared by the service's and the SDK's tests. Import by relative path:
//   import { loadVectors, keysOf } from '../../protocol/test-vectors/index.js';
import { readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

export type Refusal = 'MALFORMED' | 'BAD_SIGNATURE';
type Maybe<T> = T | null;

export interface ReceiptFieldsVector {
  lid: Maybe<string>;
  status: Maybe<string>;
  nonce: Maybe<string>;
  checkedAt: Maybe<string>;
  boundAt: Maybe<string>;
  fpDigest: Maybe<string>;
  /** SVCR2 receipts only. */
  leaseEndsAt?: Maybe<string>;
}

export interface ReceiptVector {
  name: string;
  /** Absent means SVCR1 (the vectors made before floating licences). */
  tag?: 'SVCR1' | 'SVCR2';
  fields: ReceiptFieldsVector;
  /** Hex of the exact bytes signed. */
  messageHex: string;
  receipt: string;
  /** receiptGrantsLicence for these fields. */
  grants: boolean;
}

export interface AlgorithmVector {
  algorithm: 'ED25519' | 'RSA_2048' | 'RSA_3072' | 'RSA_4096' | 'EC_P256' | 'EC_P384';
  signatureAlgorithm: string;
  privateKeyPem: string;
  publicKeyPem: string;
  /** Ed25519 and RSA PKCS#1 v1.5 signatures are deterministic; ECDSA ones are not. */
  deterministic: boolean;
  /** Input to orderClaims / signLicence (params as [key, value] pairs in declared order). */
  claimsInput: Record<string, unknown>;
  /** The payload JSON text signLicence must produce, byte for byte. */
  payloadJson: string;
  /** The decoded payload. */
  claims: Record<string, unknown>;
  licence: string;
  receipts: ReceiptVector[];
  /** Receipts that must not verify against their fields with this key. */
  badReceipts: Array<{ name: string; fields: ReceiptFieldsVector; receipt: string }>;
  tampered: Array<{ name: string; licence: string; expected: Refusal }>;
  /** A floating licence (`v` 5, DESIGN.md 13) of the same key, and its SVCR2 receipts. */
  floating?: FloatingVector;
}

export interface FloatingVector {
  claimsInput: Record<string, unknown>;
  payloadJson: string;
  claims: Record<string, unknown>;
  licence: string;
  /** Every one has tag SVCR2. */
  receipts: ReceiptVector[];
  /** Must not verify under their tag with this key. */
  badReceipts: Array<{ name: string; tag: 'SVCR1' | 'SVCR2'; fields: ReceiptFieldsVector; receipt: string }>;
  tampered: Array<{ name: string; licence: string; expected: Refusal }>;
}

export interface FingerprintVector {
  name: string;
  raw: Record<string, string | null>;
  parts: Record<'machine' | 'host' | 'mac' | 'cpu' | 'disk', string>;
  fingerprint: string;
  fpDigest: string;
}

/** A text a parser must refuse, and how. */
export interface BadText {
  name: string;
  text: string;
  expected: Refusal;
}

/** DESIGN.md 14: air-gapped activation texts. Device keys are B64U Ed25519 seeds. */
export interface AirGapVectors {
  description: string;
  deviceKey: { seed: string; dpk: string };
  otherDeviceKey: { seed: string; dpk: string };
  request: { fields: object; text: string; groups: string };
  badRequests: BadText[];
  deactivation: { fields: object; text: string };
  badDeactivations: BadText[];
  responses: Array<{ algorithm: AlgorithmVector['algorithm']; fields: object; text: string }>;
  badResponses: BadText[];
}

export interface Vectors {
  description: string;
  algorithms: AlgorithmVector[];
  claimOrder: Array<{ name: string; claimsInput: Record<string, unknown>; payloadJson: string }>;
  fingerprints: FingerprintVector[];
  badFingerprints: Array<{ name: string; fingerprint: string; problem: string }>;
  matches: Array<{ a: string; b: string; need: number; score: number; match: boolean }>;
  statuses: Array<{ claims: { nbf?: number; exp?: number; grace: number }; now: number; status: string; graceEndsAt: number | null }>;
  /** Added after the first release (make-vectors.ts adds missing sections only). */
  airGap?: AirGapVectors;
}

let cached: Vectors | undefined;

export function loadVectors(): Vectors {
  cached ??= JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8')) as Vectors;
  return cached;
}

export function keysOf(vector: AlgorithmVector): { privateKey: KeyObject; publicKey: KeyObject } {
  return { privateKey: createPrivateKey(vector.privateKeyPem), publicKey: createPublicKey(vector.publicKeyPem) };
}
