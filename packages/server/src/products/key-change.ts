import { createPublicKey } from 'node:crypto';
import type { Algorithm } from '@licensor/protocol';
import { badRequest } from '../http/errors.js';
import { importedCertificate, selfSignedCertificate, type Certificate } from '../keys/certificates.js';
import { generateKeyPair, importPrivateKey, type KeyPair, type Keyring, type ProductKeyRow } from '../keys/keyring.js';
import type { ProductRow } from './repo.js';
import { withoutOutputOnly } from '../http/schemas.js';
import { PRODUCT_OUTPUT_ONLY, type CertificateType, type KeyOrigin, type UpdateProductInput } from './schemas.js';

export interface KeyChange {
  algorithm: Algorithm;
  keyOrigin: KeyOrigin;
  certificateType: CertificateType;
  /** A new key pair that replaces the current one; null keeps the current key. */
  pair: KeyPair | null;
  /** The certificate of the key that will be current; undefined leaves the current key's as it is. */
  certificate: Certificate | null | undefined;
}

export interface CurrentKey {
  product: ProductRow;
  key: ProductKeyRow;
}

function keyOriginProblem(asked: KeyOrigin, newKey: boolean): string {
  if (asked === 'pkcs11') return 'keyOrigin: pkcs11 is not available in this deployment';
  if (asked === 'imported') return 'privateKeyPem: required for an imported key';
  return newKey ? 'keyOrigin: a privateKeyPem makes the key imported' : 'keyOrigin: changes only with a new key (regenerateKey or privateKeyPem)';
}

/**
 * Takes out what a record read with GET carries back without asking for anything: its
 * output-only fields, and a `certificatePem` that is null or the current certificate's text.
 */
export function withoutEchoes<T extends UpdateProductInput>(input: T, current: CurrentKey | null): T {
  const kept = withoutOutputOnly(input, PRODUCT_OUTPUT_ONLY);
  const newKey = kept.privateKeyPem !== undefined || kept.regenerateKey === true;
  if (kept.certificatePem === null || (!newKey && current && kept.certificatePem?.trim() === current.key.certificate_pem?.trim())) {
    delete kept.certificatePem;
  }
  return kept;
}

/**
 * Works out, and does the heavy part of, what a create (no current key) or an edit asks of the
 * product's key and certificate: key generation, import and certificate signing all happen
 * here, before any database transaction.
 */
export async function prepareKeyChange(
  input: UpdateProductInput,
  current: CurrentKey | null,
  keyring: Keyring,
  names: { product: string; organisation: string },
  now: number,
): Promise<KeyChange> {
  const importing = input.privateKeyPem !== undefined;
  if (input.privateKeyPassphrase !== undefined && !importing) throw badRequest('privateKeyPassphrase: only with privateKeyPem');
  if (importing && input.regenerateKey) throw badRequest('regenerateKey: cannot be combined with privateKeyPem');
  if (input.regenerateKey && current?.product.key_origin !== 'managed' && input.keyOrigin !== 'managed') {
    throw badRequest('regenerateKey: the key is imported: send a new privateKeyPem, or keyOrigin "managed" to generate one here');
  }
  const newKey = current === null || importing || input.regenerateKey === true;
  const keyOrigin: KeyOrigin = importing ? 'imported' : newKey ? 'managed' : (current.product.key_origin as KeyOrigin);
  if (input.keyOrigin !== undefined && input.keyOrigin !== keyOrigin) throw badRequest(keyOriginProblem(input.keyOrigin, newKey));
  if (!newKey && input.algorithm !== undefined && input.algorithm !== current.product.algorithm) {
    throw badRequest('algorithm: changes only with a new key (regenerateKey or privateKeyPem)');
  }

  const currentType = current?.product.certificate_type as CertificateType | undefined;
  const certificateType = input.certificateType ?? (input.certificatePem !== undefined ? 'IMPORTED' : (currentType ?? 'SELF_SIGNED'));
  if (input.certificatePem !== undefined && certificateType !== 'IMPORTED') {
    throw badRequest('certificatePem: only with certificateType IMPORTED');
  }
  if (certificateType === 'IMPORTED' && input.certificatePem === undefined && (newKey || currentType !== 'IMPORTED')) {
    throw badRequest(newKey ? 'certificatePem: a new key needs its own certificate' : 'certificatePem: required with certificateType IMPORTED');
  }

  const pair = importing
    ? importPrivateKey(input.privateKeyPem!, input.privateKeyPassphrase, input.algorithm)
    : newKey
      ? await generateKeyPair(input.algorithm ?? (current?.product.algorithm as Algorithm | undefined) ?? 'ED25519')
      : null;
  const unchanged = pair === null && certificateType === currentType && input.certificatePem === undefined;

  let certificate: Certificate | null | undefined;
  if (unchanged) certificate = undefined;
  else if (certificateType === 'NONE') certificate = null;
  else if (certificateType === 'IMPORTED') {
    certificate = importedCertificate(input.certificatePem!, pair?.publicKey ?? createPublicKey(current!.key.public_key_pem));
  } else {
    // A self-signed certificate for a key that stays needs that key to sign it.
    const signer = pair ?? {
      algorithm: current!.product.algorithm as Algorithm,
      privateKey: keyring.privateKeyOf(current!.key, current!.product.version),
      publicKey: createPublicKey(current!.key.public_key_pem),
    };
    certificate = await selfSignedCertificate(signer, names, now);
  }
  return { algorithm: pair?.algorithm ?? (current!.product.algorithm as Algorithm), keyOrigin, certificateType, pair, certificate };
}
