import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { invalid } from '../core/errors.js';

export interface OpenedKeystore {
  privateKey: KeyObject;
  /** The certificate of the key (the chain's leaf), or null when the keystore holds none. */
  certificatePem: string | null;
}

// Base64 of the 150 KB the route accepts; anything longer is not a signing keystore.
const MAX_BASE64 = 200_000;

/**
 * Key-derivation rounds one keystore may ask for, over its MAC and every encrypted bag. forge
 * derives in JavaScript (about 5 µs a round here, on the event loop), and a keystore names its
 * own counts: 2^31 rounds would hold the service for hours. OpenSSL exports 2,048 and keytool
 * 10,000 per derivation; Bouncy Castle 1.86+'s 600,000 is refused with a way out.
 */
const MAX_ROUNDS = 200_000;
let roundsLeft = Infinity;
const tooManyRounds = () =>
  invalid(
    'keystorePkcs12',
    `the keystore asks for more than ${MAX_ROUNDS.toLocaleString('en')} key-derivation rounds; export it again with fewer (openssl pkcs12 -export -iter 2048)`,
  );
class RoundBudgetExceeded extends Error {}

// forge looks these three up on its own objects at call time, so the budget is kept in front of
// them once, for every caller; outside openKeystore it is unlimited.
type Derive = (...args: unknown[]) => unknown;
function budget(holder: object, name: string, iterationsAt: number) {
  const functions = holder as Record<string, Derive>;
  const derive = functions[name]!;
  functions[name] = (...args) => {
    const rounds = Number(args[iterationsAt]);
    if (!(rounds <= roundsLeft)) throw new RoundBudgetExceeded();
    roundsLeft -= rounds;
    return derive(...args);
  };
}
budget(forge.pkcs5, 'pbkdf2', 2);
budget(forge.pkcs12, 'generateKey', 3);
budget((forge.pki as unknown as { pbe: object }).pbe, 'generatePkcs12Key', 3);

const unreadable = () => invalid('keystorePkcs12', 'not a readable PKCS#12 keystore (base64 of a .p12 or .pfx file)');

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
  if (base64.length > MAX_BASE64) throw unreadable();
  // Whitespace out first: a pattern that allows it between the characters backtracks quadratically.
  const compact = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw unreadable();
  let p12: forge.pkcs12.Pkcs12Pfx;
  roundsLeft = MAX_ROUNDS;
  try {
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(Buffer.from(compact, 'base64').toString('binary')), password);
  } catch (err) {
    if (err instanceof RoundBudgetExceeded) throw tooManyRounds();
    // forge's own words for a MAC that does not verify and a bag that does not decrypt.
    if (/Invalid password\?|wrong password\?|Failed to decrypt/.test((err as Error).message)) throw invalid('keystorePassword', 'does not open the keystore');
    throw unreadable();
  } finally {
    roundsLeft = Infinity;
  }
  const bagsOf = (type: string) => p12.getBags({ bagType: type })[type] ?? [];
  const keys = [...bagsOf(forge.pki.oids.pkcs8ShroudedKeyBag!), ...bagsOf(forge.pki.oids.keyBag!)];
  if (keys.length === 0) throw invalid('keystorePkcs12', 'the keystore holds no private key');
  if (keys.length > 1) throw invalid('keystorePkcs12', 'the keystore holds several private keys; export the one to use alone');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: Buffer.from(keyDer(keys[0]!), 'binary'), format: 'der', type: 'pkcs8' });
  } catch {
    throw invalid('keystorePkcs12', 'the key is not Ed25519, RSA 2048/3072/4096, ECDSA P-256 or ECDSA P-384');
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
