import { createPublicKey } from 'node:crypto';
import type { Algorithm } from '@licensor/protocol';
import { type ApiError, invalid } from '../core/errors.js';
import { importedCertificate, selfSignedCertificate, type Certificate } from '../keys/certificates.js';
import { generateKeyPair, importedPair, importPrivateKey, tokenRefOf, type Keyring, type NewKey, type ProductKeyRow } from '../keys/keyring.js';
import { openKeystore } from '../keys/keystore.js';
import type { ProductRow } from './repo.js';
import { withoutOutputOnly } from '../core/schemas.js';
import { PRODUCT_OUTPUT_ONLY, type CertificateType, type KeyOrigin, type UpdateProductInput } from './schemas.js';

export interface KeyChange {
  algorithm: Algorithm;
  keyOrigin: KeyOrigin;
  certificateType: CertificateType;
  /** A new key pair that replaces the current one; null keeps the current key. */
  pair: NewKey | null;
  /** A new PIN for the current key on its token (the same token and key, sent with another PIN); null otherwise. */
  pin: string | null;
  /** The certificate of the key that will be current; undefined leaves the current key's as it is. */
  certificate: Certificate | null | undefined;
}

export interface CurrentKey {
  product: ProductRow;
  key: ProductKeyRow;
}

function keyOriginProblem(asked: KeyOrigin, newKey: boolean): ApiError {
  if (asked === 'pkcs11') return invalid('pkcs11', 'required for a key on a PKCS#11 token (its token label, key label and PIN)');
  if (asked === 'imported') return invalid('privateKeyPem', 'required for an imported key (or a PKCS#12 keystore)');
  return newKey
    ? invalid('keyOrigin', 'a key sent as PEM or in a PKCS#12 keystore is an imported key')
    : invalid('keyOrigin', 'changes only with a new key (generated here, imported, or on a PKCS#11 token)');
}

const sameTokenKey = (a: { token: string; label: string; id: string } | null, b: { token: string; label: string; id: string }) =>
  a !== null && a.token === b.token && a.label === b.label && a.id === b.id;

/**
 * Takes out what a record read with GET carries back without asking for anything: its
 * output-only fields, and a `certificatePem` that is null or the current certificate's text.
 */
export function withoutEchoes<T extends UpdateProductInput>(input: T, current: CurrentKey | null): T {
  const kept = withoutOutputOnly(input, PRODUCT_OUTPUT_ONLY);
  // A record's `pkcs11` (token and label, never the PIN) sent back as it is, or its null.
  const token = current ? tokenRefOf(current.key) : null;
  if (kept.pkcs11 === null || (kept.pkcs11?.pin === undefined && token && kept.pkcs11?.tokenLabel === token.token && kept.pkcs11.keyLabel === token.label)) {
    delete kept.pkcs11;
  }
  const newKey = kept.privateKeyPem !== undefined || kept.keystorePkcs12 !== undefined || kept.pkcs11 !== undefined || kept.regenerateKey === true;
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
  names: { product: string; productKey: string; organisation: string; slug: string },
  now: number,
): Promise<KeyChange> {
  const pem = input.privateKeyPem !== undefined;
  const keystore = input.keystorePkcs12 !== undefined;
  const token = input.pkcs11;
  if (input.privateKeyPassphrase !== undefined && !pem) throw invalid('privateKeyPassphrase', 'only with a PEM private key');
  if (input.keystorePassword !== undefined && !keystore) throw invalid('keystorePassword', 'only with a PKCS#12 keystore');
  if (pem && keystore) throw invalid('keystorePkcs12', 'send a PEM private key or a PKCS#12 keystore, not both');
  const importing = pem || keystore;
  if (importing && input.regenerateKey) throw invalid('regenerateKey', `cannot be combined with an imported ${pem ? 'PEM private key' : 'PKCS#12 keystore'}`);
  if (importing && token) throw invalid('pkcs11', 'cannot be combined with an imported key');
  const currentOrigin = current?.product.key_origin as KeyOrigin | undefined;
  let keyOrigin: KeyOrigin;
  if (importing) keyOrigin = 'imported';
  else if (token) keyOrigin = 'pkcs11';
  else if (current === null || input.regenerateKey) keyOrigin = input.keyOrigin ?? (currentOrigin === 'pkcs11' ? 'pkcs11' : 'managed');
  else keyOrigin = currentOrigin!;
  if (input.regenerateKey && input.keyOrigin === undefined && currentOrigin === 'imported') {
    throw invalid('regenerateKey', 'the key is imported: send a new PEM private key or PKCS#12 keystore, or choose a managed key to generate one here');
  }
  const newKeyAsked = current === null || importing || token !== undefined || input.regenerateKey === true;
  // An edit that asks for no new key keeps the current one, imported included (DESIGN.md 4).
  if (keyOrigin === 'imported' && !importing && newKeyAsked) throw keyOriginProblem('imported', true);
  if (input.keyOrigin !== undefined && input.keyOrigin !== keyOrigin) throw keyOriginProblem(input.keyOrigin, newKeyAsked);

  // The key: imported, on a token, generated here, or the current one kept (perhaps with a new PIN).
  let pair: NewKey | null = null;
  let pin: string | null = null;
  let keystoreCertificate: string | null = null;
  if (pem) pair = importPrivateKey(input.privateKeyPem!, input.privateKeyPassphrase, input.algorithm);
  else if (keystore) {
    const opened = openKeystore(input.keystorePkcs12!, input.keystorePassword ?? '');
    pair = importedPair(opened.privateKey, input.algorithm, 'keystorePkcs12');
    keystoreCertificate = opened.certificatePem;
  } else if (keyOrigin === 'pkcs11' && newKeyAsked) {
    const hsm = keyring.hsm;
    const reason = hsm === null ? 'no PKCS#11 module is configured in this deployment' : hsm.unavailableReason;
    if (hsm === null || reason !== null) throw invalid('keyOrigin', `pkcs11 is not available: ${reason}`);
    const currentToken = current ? tokenRefOf(current.key) : null;
    const tokenLabel = token?.tokenLabel ?? currentToken?.token;
    if (tokenLabel === undefined) throw keyOriginProblem('pkcs11', true);
    const tokenPin = token?.pin ?? (currentToken?.token === tokenLabel ? keyring.pinOf(current!.key) : undefined);
    if (tokenPin === undefined) throw invalid('pkcs11.pin', 'required');
    const algorithm = input.algorithm ?? (current?.product.algorithm as Algorithm | undefined) ?? 'ED25519';
    if (token?.keyLabel !== undefined && !input.regenerateKey) {
      const found = await hsm.find(names.slug, tokenLabel, token.keyLabel, tokenPin);
      if (input.algorithm !== undefined && found.algorithm !== input.algorithm) {
        throw invalid('pkcs11.keyLabel', `the key is ${found.algorithm} but the algorithm asked for is ${input.algorithm}`);
      }
      if (sameTokenKey(currentToken, found)) pin = token.pin ?? null;
      else pair = { ...found, pin: tokenPin };
    } else {
      // A new label and CKA_ID; the old key stays on the token to verify what it signed.
      const label = `licensor-${names.productKey}-${now.toString(36)}`.slice(0, 128);
      pair = { ...(await hsm.generate(names.slug, tokenLabel, tokenPin, algorithm, label)), pin: tokenPin };
    }
  } else if (newKeyAsked) pair = await generateKeyPair(input.algorithm ?? (current?.product.algorithm as Algorithm | undefined) ?? 'ED25519');
  if (pair === null && input.algorithm !== undefined && input.algorithm !== current!.product.algorithm) {
    throw invalid('algorithm', 'changes only with a new key (generated here, imported, or on a PKCS#11 token)');
  }

  // A keystore's own certificate becomes the product's, unless the request says otherwise.
  const certificatePem =
    input.certificatePem ?? (input.certificateType === undefined || input.certificateType === 'IMPORTED' ? (keystoreCertificate ?? undefined) : undefined);
  const currentType = current?.product.certificate_type as CertificateType | undefined;
  const certificateType = input.certificateType ?? (certificatePem !== undefined ? 'IMPORTED' : (currentType ?? 'SELF_SIGNED'));
  if (certificatePem !== undefined && certificateType !== 'IMPORTED') {
    throw invalid('certificatePem', 'only with an imported certificate (certificate type IMPORTED)');
  }
  if (certificateType === 'IMPORTED' && certificatePem === undefined && (pair !== null || currentType !== 'IMPORTED')) {
    throw invalid(
      'certificatePem',
      pair !== null ? 'a new key needs its own certificate' : 'required with an imported certificate (certificate type IMPORTED)',
    );
  }
  const unchanged = pair === null && certificateType === currentType && certificatePem === undefined;

  let certificate: Certificate | null | undefined;
  if (unchanged) certificate = undefined;
  else if (certificateType === 'NONE') certificate = null;
  else if (certificateType === 'IMPORTED') {
    certificate = importedCertificate(certificatePem!, pair?.publicKey ?? createPublicKey(current!.key.public_key_pem));
  } else {
    // A self-signed certificate for a key that stays needs that key to sign it.
    const signer = pair ? keyring.signerFor(pair) : keyring.signerOf(current!.key, current!.product.version);
    certificate = await selfSignedCertificate(signer, names, now);
  }
  return { algorithm: pair?.algorithm ?? (current!.product.algorithm as Algorithm), keyOrigin, certificateType, pair, pin, certificate };
}
