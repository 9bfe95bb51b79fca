// @peculiar/x509 resolves its services through tsyringe, which needs the reflect polyfill first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto, type KeyObject } from 'node:crypto';
import { ALGORITHM_INFO, type Algorithm } from '@licensor/protocol';
import { invalid } from '../core/errors.js';
import { derToRaw } from './ecdsa.js';
import type { Signer } from './keyring.js';

x509.cryptoProvider.set(webcrypto);

type CertificateCrypto = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[1];

export interface Certificate {
  pem: string;
  subject: string;
  expiresAt: number;
}

const VALID_YEARS = 10;

/** WebCrypto's names for an algorithm's keys and for the certificate signature made with them. */
function webCryptoParams(algorithm: Algorithm) {
  const { keyGeneration, digest } = ALGORITHM_INFO[algorithm];
  const hash = digest === 'sha384' ? 'SHA-384' : 'SHA-256';
  switch (keyGeneration.type) {
    case 'ed25519':
      return { key: { name: 'Ed25519' }, signing: { name: 'Ed25519' } };
    case 'rsa':
      return { key: { name: 'RSASSA-PKCS1-v1_5', hash }, signing: { name: 'RSASSA-PKCS1-v1_5' } };
    case 'ec':
      return { key: { name: 'ECDSA', namedCurve: keyGeneration.options.namedCurve }, signing: { name: 'ECDSA', hash } };
  }
}

function certificateOf(certificate: x509.X509Certificate): Certificate {
  return { pem: `${certificate.toString('pem')}\n`, subject: certificate.subject, expiresAt: certificate.notAfter.getTime() };
}

/**
 * WebCrypto whose `sign` is the product's signer, wherever its key lives (a token's key cannot be
 * imported into WebCrypto). WebCrypto's ECDSA signatures are raw r‖s; the signer's are DER.
 */
function signingCrypto(signer: Signer): CertificateCrypto {
  const size = signer.algorithm === 'EC_P384' ? 48 : 32;
  const sign = async (_algorithm: unknown, _key: unknown, data: ArrayBuffer) => {
    const signature = await signer.sign(Buffer.from(data));
    return new Uint8Array(ALGORITHM_INFO[signer.algorithm].keyFactory === 'EC' ? derToRaw(signature, size) : signature).buffer;
  };
  const subtle = new Proxy(webcrypto.subtle, { get: (target, name) => (name === 'sign' ? sign : Reflect.get(target, name).bind(target)) });
  return {
    subtle,
    getRandomValues: webcrypto.getRandomValues.bind(webcrypto),
    randomUUID: webcrypto.randomUUID.bind(webcrypto),
  } as unknown as CertificateCrypto;
}

/**
 * A certificate over the product's public key, signed by the product key itself and naming
 * the product and the organisation, valid for ten years from `now`.
 */
export async function selfSignedCertificate(signer: Signer, names: { product: string; organisation: string }, now: number): Promise<Certificate> {
  const params = webCryptoParams(signer.algorithm);
  const publicKey = await webcrypto.subtle.importKey('spki', signer.publicKey.export({ type: 'spki', format: 'der' }), params.key, true, ['verify']);
  // Stands in for the private key: only its algorithm is read; the signer signs.
  const privateKey = { algorithm: params.key, type: 'private', extractable: false, usages: ['sign'] } as unknown as webcrypto.CryptoKey;
  const notAfter = new Date(now);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + VALID_YEARS);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned(
    {
      // Typed attribute values: plain strings would be parsed as DN syntax (quotes, backslashes).
      name: new x509.Name([{ CN: [{ utf8String: names.product }] }, { O: [{ utf8String: names.organisation }] }]),
      notBefore: new Date(now),
      notAfter,
      keys: { privateKey, publicKey },
      signingAlgorithm: params.signing,
      extensions: [new x509.BasicConstraintsExtension(false, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true)],
    },
    signingCrypto(signer),
  );
  return certificateOf(certificate);
}

/** An operator's own certificate: exactly one PEM certificate whose public key is the product's. */
export function importedCertificate(pem: string, publicKey: KeyObject): Certificate {
  if ((pem.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length !== 1) {
    throw invalid('certificatePem', 'send exactly one PEM certificate (-----BEGIN CERTIFICATE-----)');
  }
  let certificate: x509.X509Certificate;
  try {
    certificate = new x509.X509Certificate(pem);
  } catch {
    throw invalid('certificatePem', 'not a readable X.509 certificate');
  }
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  if (!Buffer.from(certificate.publicKey.rawData).equals(spki)) {
    throw invalid('certificatePem', "the certificate's public key is not the product's key");
  }
  return certificateOf(certificate);
}
