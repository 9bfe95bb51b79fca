import { createHash, createHmac, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { Selectable } from 'kysely';
import { ALGORITHM_INFO, algorithmOfKey, generateAlgorithmKeyPair, signBytes, type Algorithm } from '@licensor/protocol';
import type { ProductKeysTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { ApiError, invalid, notFound } from '../core/errors.js';
import { TokenUnavailable, type Hsm, type TokenKey, type TokenKeyRef } from './pkcs11.js';
import { seal, unseal, UnsealError } from './sealing.js';
import { currentKeyWithVersion, keysWithVersion } from './repo.js';

export type ProductKeyRow = Selectable<ProductKeysTable>;

/** A key pair held in this process (generated here or imported), sealed at rest. */
export interface KeyPair {
  algorithm: Algorithm;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** A key pair on a PKCS#11 token, with the PIN that logs in to it. */
export interface TokenKeyPair extends TokenKey {
  pin: string;
}

export type NewKey = KeyPair | TokenKeyPair;

export const isTokenKey = (key: NewKey): key is TokenKeyPair => 'pin' in key;

/** Signs with a product key wherever its private half lives; signatures are in the wire format (DER for ECDSA). */
export interface Signer {
  algorithm: Algorithm;
  publicKey: KeyObject;
  sign(data: Buffer): Promise<Buffer>;
  /** Resolves once the key can sign (a key on a token: the token reached, logged in, the key found). */
  ready(): Promise<void>;
}

/** A stored key made usable: the signer is null (with the reason) when it does not open. */
export interface OpenedKey {
  keyId: number;
  publicKey: KeyObject;
  signer: Signer | null;
  /** Why the key cannot sign; for a key on a token, as last seen. */
  error: string | null;
}

/** Signs with a key held in this process. */
export const softwareSigner = (pair: KeyPair): Signer => ({
  algorithm: pair.algorithm,
  publicKey: pair.publicKey,
  sign: async (data) => signBytes(pair.privateKey, data),
  ready: async () => {},
});

/** SHA-256 of the public key's SPKI DER, lowercase hex. */
function keyFingerprint(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

/** Where a stored key is on its token, or null for a key held here. */
export const tokenRefOf = (row: ProductKeyRow): TokenKeyRef | null =>
  row.pkcs11_token === null ? null : { token: row.pkcs11_token, label: row.pkcs11_label!, id: row.pkcs11_id! };

/** A fresh managed key pair, generated off the event loop. */
export async function generateKeyPair(algorithm: Algorithm): Promise<KeyPair> {
  return { algorithm, ...(await generateAlgorithmKeyPair(algorithm)) };
}

// Messages name the problem only: never the key, its PEM or the passphrase.
function unreadableKey(err: unknown, encrypted: boolean): ApiError {
  const code = (err as { code?: string }).code;
  // OpenSSL reports a missing passphrase as an interrupted prompt.
  if (code === 'ERR_MISSING_PASSPHRASE' || code === 'ERR_OSSL_CRYPTO_INTERRUPTED_OR_CANCELLED')
    return invalid('privateKeyPassphrase', 'the key is encrypted: send its passphrase');
  // A wrong passphrase usually fails the padding check, but about once in 256 it decrypts to
  // bytes that then fail to parse: for an encrypted key given a passphrase, both mean the same.
  if (code === 'ERR_OSSL_BAD_DECRYPT' || encrypted) return invalid('privateKeyPassphrase', 'does not open the key');
  return invalid('privateKeyPem', 'not a readable PEM private key (PKCS#8 or traditional, optionally encrypted)');
}

/** The pair of an imported private key, whose algorithm must be the one asked for (with none asked for, the key's own). */
export function importedPair(privateKey: KeyObject, algorithm: Algorithm | undefined, field: string): KeyPair {
  const actual = algorithmOfKey(privateKey);
  if (actual === null) throw invalid(field, 'the key is not Ed25519, RSA 2048/3072/4096, ECDSA P-256 or ECDSA P-384');
  if (algorithm !== undefined && actual !== algorithm) {
    throw invalid(field, `the key is ${ALGORITHM_INFO[actual].label} but the algorithm asked for is ${algorithm}`);
  }
  return { algorithm: actual, privateKey, publicKey: createPublicKey(privateKey) };
}

/** Reads an imported PEM private key (PKCS#8 or traditional, optionally encrypted). */
export function importPrivateKey(pem: string, passphrase: string | undefined, algorithm: Algorithm | undefined): KeyPair {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem', ...(passphrase === undefined ? {} : { passphrase }) });
  } catch (err) {
    throw unreadableKey(err, passphrase !== undefined && /^-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type: 4,ENCRYPTED/m.test(pem));
  }
  return importedPair(privateKey, algorithm, 'privateKeyPem');
}

/** Refused signing: the service cannot open this key (sealed under another master key, or its token cannot be used). */
export const keyUnavailable = (error: string) => new ApiError(503, `the product's signing key is unavailable: ${error}`);

// Opened keys kept per process; enough for every product of a large deployment.
const CACHE_LIMIT = 10_000;

/**
 * DESIGN.md 18: the key of a product's trial ledger, HMAC-SHA256(master key, `trial-ledger␟` +
 * the product id): derived, so nothing new is sealed and a restore under the same master key
 * keeps matching.
 */
export const ledgerKeyOf = (masterKey: Buffer, productId: number) => createHmac('sha256', masterKey).update(`trial-ledger\u001f${productId}`).digest();

/**
 * HMAC-SHA256(k, `check`) under a ledger key k, in hex: a product's ledger hashes match only
 * under the master key whose k gives its stored value (`restore --check`, DESIGN.md 17).
 */
export const ledgerCheckOf = (k: Buffer) => createHmac('sha256', k).update('check').digest('hex');

/**
 * Seals new private keys under the master key and opens stored ones, caching the KeyObjects
 * so signing never re-parses a key. An entry is keyed by the key row and the product's
 * version, which any change to the product raises, so a cached view is never trusted past it.
 */
export class Keyring {
  private readonly cache = new Map<string, OpenedKey>();
  /** Each product's current signing key (by organisation and product), with the product version it was found at. */
  private readonly signing = new Map<string, { version: number; keyId: number; signer: Signer }>();
  private readonly ledgerKeys = new Map<number, Buffer>();

  constructor(
    private readonly masterKey: Buffer,
    /** The deployment's PKCS#11 module, or null when none is configured. */
    readonly hsm: Hsm | null,
  ) {}

  /** The columns of a new `product_keys` row that hold the key itself (for a key on a token: where it is, and its sealed PIN). */
  seal(key: NewKey) {
    const fingerprint = keyFingerprint(key.publicKey);
    const token = isTokenKey(key);
    return {
      algorithm: key.algorithm,
      public_key_pem: key.publicKey.export({ type: 'spki', format: 'pem' }) as string,
      sealed_private_key: token
        ? this.sealPin(key.pin, fingerprint)
        : seal(this.masterKey, key.privateKey.export({ type: 'pkcs8', format: 'der' }), fingerprint),
      key_fingerprint: fingerprint,
      pkcs11_token: token ? key.token : null,
      pkcs11_label: token ? key.label : null,
      pkcs11_id: token ? key.id : null,
    };
  }

  sealPin(pin: string, fingerprint: string): string {
    return seal(this.masterKey, Buffer.from(pin, 'utf8'), fingerprint);
  }

  open(row: ProductKeyRow, productVersion: number): OpenedKey {
    const cacheKey = `${row.id}:${productVersion}`;
    let opened = this.cache.get(cacheKey);
    if (!opened) {
      opened = { keyId: row.id, publicKey: createPublicKey(row.public_key_pem), signer: null, error: null };
      try {
        const secret = unseal(this.masterKey, row.sealed_private_key, row.key_fingerprint);
        const algorithm = row.algorithm as Algorithm;
        if (row.pkcs11_token === null) {
          opened.signer = softwareSigner({
            algorithm,
            publicKey: opened.publicKey,
            privateKey: createPrivateKey({ key: secret, format: 'der', type: 'pkcs8' }),
          });
        } else if (this.hsm === null) {
          opened.error = 'the key is on a PKCS#11 token, and no PKCS#11 module is configured';
        } else {
          opened.signer = this.tokenSigner(opened, tokenRefOf(row)!, secret.toString('utf8'), algorithm);
        }
      } catch (err) {
        if (!(err instanceof UnsealError)) throw err;
        opened.error = err.message;
      }
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(cacheKey, opened);
    }
    return opened;
  }

  /** Signs on the token, keeping the opened key's error as last seen: set by a failure, cleared by a success. */
  private tokenSigner(opened: OpenedKey, ref: TokenKeyRef, pin: string, algorithm: Algorithm): Signer {
    const hsm = this.hsm!;
    const tracked = async <T>(work: () => Promise<T>): Promise<T> => {
      try {
        const result = await work();
        opened.error = null;
        return result;
      } catch (err) {
        if (!(err instanceof TokenUnavailable)) throw err;
        opened.error = err.message;
        throw keyUnavailable(err.message);
      }
    };
    return {
      algorithm,
      publicKey: opened.publicKey,
      sign: (data) => tracked(() => hsm.sign(ref, pin, algorithm, data)),
      ready: () => tracked(() => hsm.reach(ref, pin)),
    };
  }

  /** Signs with a key not stored yet (a new key's self-signed certificate). */
  signerFor(key: NewKey): Signer {
    if (!isTokenKey(key)) return softwareSigner(key);
    return this.tokenSigner({ keyId: 0, publicKey: key.publicKey, signer: null, error: null }, key, key.pin, key.algorithm);
  }

  /** The PIN of a stored key on a token. */
  pinOf(row: ProductKeyRow): string {
    try {
      return unseal(this.masterKey, row.sealed_private_key, row.key_fingerprint).toString('utf8');
    } catch (err) {
      if (!(err instanceof UnsealError)) throw err;
      throw keyUnavailable(err.message);
    }
  }

  /** Why the key cannot sign now, or null; a key on a token is looked for on the token (cheap once found). */
  async keyError(row: ProductKeyRow, productVersion: number): Promise<string | null> {
    const opened = this.open(row, productVersion);
    try {
      await opened.signer?.ready();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
    }
    return opened.error;
  }

  /** What signs with a stored key, or a 503 saying why it cannot be used. */
  signerOf(row: ProductKeyRow, productVersion: number): Signer {
    const opened = this.open(row, productVersion);
    if (!opened.signer) throw keyUnavailable(opened.error!);
    return opened.signer;
  }

  /**
   * The key new licences and renewals of the product are signed with, and its row id. A product's
   * key changes only with its version (products/service.ts), so the version the caller has just
   * read confirms the key found last time without asking the database again.
   */
  async signingKeyFor(t: Tenant, product: { id: number; version: number }): Promise<{ keyId: number; signer: Signer }> {
    const known = this.signing.get(`${t.orgId} ${product.id}`);
    if (known?.version === product.version) return known;
    const row = await currentKeyWithVersion(t, product.id);
    if (!row) throw notFound(`no product ${product.id}`);
    const found = { version: row.version, keyId: row.id, signer: this.signerOf(row, row.version) };
    this.signing.set(`${t.orgId} ${product.id}`, found);
    return found;
  }

  /** DESIGN.md 18: the key of a product's trial ledger (ledgerKeyOf), cached. */
  ledgerKey(productId: number): Buffer {
    let key = this.ledgerKeys.get(productId);
    if (!key) {
      key = ledgerKeyOf(this.masterKey, productId);
      if (this.ledgerKeys.size >= CACHE_LIMIT) this.ledgerKeys.delete(this.ledgerKeys.keys().next().value!);
      this.ledgerKeys.set(productId, key);
    }
    return key;
  }

  /** What a product that turns trials on stores, so `restore --check` can tell whether this master key still derives its ledger's key. */
  ledgerCheck(productId: number): string {
    return ledgerCheckOf(this.ledgerKey(productId));
  }

  /** Every key the product has had, opened, current first: what a licence of it may be signed with. */
  async keysFor(t: Tenant, productId: number): Promise<OpenedKey[]> {
    const rows = await keysWithVersion(t, productId);
    return rows.map((row) => this.open(row, row.version));
  }
}
