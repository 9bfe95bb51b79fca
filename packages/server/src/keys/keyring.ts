import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { Selectable } from 'kysely';
import { ALGORITHM_INFO, algorithmOfKey, generateAlgorithmKeyPair, type Algorithm } from '@licensor/protocol';
import type { ProductKeysTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { ApiError, badRequest, notFound } from '../http/errors.js';
import { seal, unseal, UnsealError } from './sealing.js';

export type ProductKeyRow = Selectable<ProductKeysTable>;

export interface KeyPair {
  algorithm: Algorithm;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** A stored key made usable: the private half is null (with the reason) when it does not open. */
export interface OpenedKey {
  keyId: number;
  publicKey: KeyObject;
  privateKey: KeyObject | null;
  error: string | null;
}

/** SHA-256 of the public key's SPKI DER, lowercase hex. */
function keyFingerprint(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex');
}

/** A fresh managed key pair, generated off the event loop. */
export async function generateKeyPair(algorithm: Algorithm): Promise<KeyPair> {
  return { algorithm, ...(await generateAlgorithmKeyPair(algorithm)) };
}

// Messages name the problem only: never the key, its PEM or the passphrase.
function unreadableKey(err: unknown): ApiError {
  const code = (err as { code?: string }).code;
  // OpenSSL reports a missing passphrase as an interrupted prompt.
  if (code === 'ERR_MISSING_PASSPHRASE' || code === 'ERR_OSSL_CRYPTO_INTERRUPTED_OR_CANCELLED') return badRequest('privateKeyPassphrase: the key is encrypted: send its passphrase');
  if (code === 'ERR_OSSL_BAD_DECRYPT') return badRequest('privateKeyPassphrase: does not open the key');
  return badRequest('privateKeyPem: not a readable PEM private key (PKCS#8 or traditional, optionally encrypted)');
}

/**
 * Reads an imported PEM private key (PKCS#8 or traditional, optionally encrypted). Its algorithm
 * must be the one asked for; with none asked for, the key's own is taken.
 */
export function importPrivateKey(pem: string, passphrase: string | undefined, algorithm: Algorithm | undefined): KeyPair {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem', ...(passphrase === undefined ? {} : { passphrase }) });
  } catch (err) {
    throw unreadableKey(err);
  }
  const actual = algorithmOfKey(privateKey);
  if (actual === null) {
    throw badRequest('privateKeyPem: the key is not Ed25519, RSA 2048/3072/4096, ECDSA P-256 or ECDSA P-384');
  }
  if (algorithm !== undefined && actual !== algorithm) {
    throw badRequest(`privateKeyPem: the key is ${ALGORITHM_INFO[actual].label} but algorithm is ${algorithm}`);
  }
  return { algorithm: actual, privateKey, publicKey: createPublicKey(privateKey) };
}

/** Refused signing: the service cannot open this key (it was sealed under another master key). */
export const keyUnavailable = (error: string) => new ApiError(503, `the product's signing key is unavailable: ${error}`);

// Opened keys kept per process; enough for every product of a large deployment.
const CACHE_LIMIT = 10_000;

/**
 * Seals new private keys under the master key and opens stored ones, caching the KeyObjects
 * so signing never re-parses a key. An entry is keyed by the key row and the product's
 * version, which any change to the product raises, so a cached view is never trusted past it.
 */
export class Keyring {
  private readonly cache = new Map<string, OpenedKey>();

  constructor(private readonly masterKey: Buffer) {}

  /** The columns of a new `product_keys` row that hold the key itself. */
  seal(pair: KeyPair) {
    const fingerprint = keyFingerprint(pair.publicKey);
    const der = pair.privateKey.export({ type: 'pkcs8', format: 'der' });
    return {
      algorithm: pair.algorithm,
      public_key_pem: pair.publicKey.export({ type: 'spki', format: 'pem' }) as string,
      sealed_private_key: seal(this.masterKey, der, fingerprint),
      key_fingerprint: fingerprint,
    };
  }

  open(row: ProductKeyRow, productVersion: number): OpenedKey {
    const cacheKey = `${row.id}:${productVersion}`;
    let opened = this.cache.get(cacheKey);
    if (!opened) {
      opened = { keyId: row.id, publicKey: createPublicKey(row.public_key_pem), privateKey: null, error: null };
      try {
        const der = unseal(this.masterKey, row.sealed_private_key, row.key_fingerprint);
        opened.privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
      } catch (err) {
        if (!(err instanceof UnsealError)) throw err;
        opened.error = err.message;
      }
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(cacheKey, opened);
    }
    return opened;
  }

  /** The private half of a stored key, or a 503 saying why it cannot be used. */
  privateKeyOf(row: ProductKeyRow, productVersion: number): KeyObject {
    const opened = this.open(row, productVersion);
    if (!opened.privateKey) throw keyUnavailable(opened.error!);
    return opened.privateKey;
  }

  /** A product's key rows with the product's version, newest first (the current key is the newest). */
  private keyRows(t: Tenant, productId: number) {
    return t
      .selectFrom('product_keys')
      .innerJoin('products', 'products.id', 'product_keys.product_id')
      .selectAll('product_keys')
      .select('products.version')
      .where('product_keys.product_id', '=', productId)
      // Keys are only ever added, the new one current: the highest id is the current key.
      .orderBy('product_keys.id', 'desc');
  }

  /** The key new licences and renewals of the product are signed with, and its row id. */
  async signingKeyFor(t: Tenant, productId: number): Promise<{ keyId: number; privateKey: KeyObject }> {
    const row = await this.keyRows(t, productId).where('product_keys.retired_at', 'is', null).executeTakeFirst();
    if (!row) throw notFound(`no product ${productId}`);
    return { keyId: row.id, privateKey: this.privateKeyOf(row, row.version) };
  }

  /** Every key the product has had, opened, current first: what a licence of it may be signed with. */
  async keysFor(t: Tenant, productId: number): Promise<OpenedKey[]> {
    const rows = await this.keyRows(t, productId).execute();
    return rows.map((row) => this.open(row, row.version));
  }
}
