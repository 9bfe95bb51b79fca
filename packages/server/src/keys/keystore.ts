import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { badRequest } from '../http/errors.js';

export interface OpenedKeystore {
  privateKey: KeyObject;
  /** The certificate of the key (the chain's leaf), or null when the keystore holds none. */
  certificatePem: string | null;
}

// Base64 of the 150 KB the route accepts; anything longer is not a signing keystore.
const MAX_BASE64 = 200_000;

const unreadable = () => badRequest('keystorePkcs12: not a readable PKCS#12 keystore (base64 of a .p12 or .pfx file)');

/** forge parses RSA keys and certificates into its own objects and leaves the rest (EC, Ed25519) as ASN.1. */
const keyDer = (bag: forge.pkcs12.Bag) =>
  bag.key ? forge.asn1.toDer(forge.pki.wrapRsaPrivateKey(forge.pki.privateKeyToAsn1(bag.key))).getBytes() : forge.asn1.toDer(bag.asn1).getBytes();
const certificateDer = (bag: forge.pkcs12.Bag) =>
  bag.cert ? forge.asn1.toDer(forge.pki.certificateToAsn1(bag.cert)).getBytes() : forge.asn1.toDer(bag.asn1).getBytes();

/**
 * Opens a PKCS#12 keystore: exactly one private key, handed to node:crypto, and its certificate.
 * node-forge reads every kind tried (OpenSSL 3's AES-256/PBKDF2 default, OpenSSL's `-legacy`
 * RC2/3DES, Java keytool's); the password is used here only and never appears in an error.
 */
export function openKeystore(base64: string, password: string): OpenedKeystore {
  if (base64.length > MAX_BASE64 || !/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(base64)) throw unreadable();
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(Buffer.from(base64, 'base64').toString('binary')), password);
  } catch (err) {
    // forge says "Invalid password?" for a MAC that does not verify and a bag that does not decrypt.
    if (/password/i.test((err as Error).message)) throw badRequest('keystorePassword: does not open the keystore');
    throw unreadable();
  }
  const bagsOf = (type: string) => p12.getBags({ bagType: type })[type] ?? [];
  const keys = [...bagsOf(forge.pki.oids.pkcs8ShroudedKeyBag!), ...bagsOf(forge.pki.oids.keyBag!)];
  if (keys.length === 0) throw badRequest('keystorePkcs12: the keystore holds no private key');
  if (keys.length > 1) throw badRequest('keystorePkcs12: the keystore holds several private keys; export the one to use alone');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: Buffer.from(keyDer(keys[0]!), 'binary'), format: 'der', type: 'pkcs8' });
  } catch {
    throw badRequest('keystorePkcs12: the key is not Ed25519, RSA 2048/3072/4096, ECDSA P-256 or ECDSA P-384');
  }
  // The key's own certificate among the chain's: the one whose public key is the key's.
  let certificatePem: string | null = null;
  for (const bag of bagsOf(forge.pki.oids.certBag!)) {
    try {
      const certificate = new X509Certificate(Buffer.from(certificateDer(bag), 'binary'));
      if (certificate.checkPrivateKey(privateKey)) certificatePem = certificate.toString();
    } catch {
      throw unreadable();
    }
  }
  return { privateKey, certificatePem };
}
