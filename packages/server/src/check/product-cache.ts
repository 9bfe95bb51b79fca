import type { Tenant } from '../db/tenant.js';
import { readProduct } from './repo.js';
import type { Keyring, OpenedKey } from '../keys/keyring.js';

/** What the check path needs of a product: its row's few hot columns and its opened keys. */
export interface CheckProduct {
  id: number;
  /** Raised by every change to the product, its keys and its check token. */
  version: number;
  productKey: string;
  active: boolean;
  fetchEnabled: boolean;
  fingerprintNeed: number;
  /** DESIGN.md 12: self-service releases per licence in any 30 days; null = no limit. */
  selfReleaseLimit: number | null;
  /** DESIGN.md 13: how many leases of one floating licence may be borrowed at once. */
  maxBorrowedSeats: number;
  tokenHash: string | null;
  /** Every key the product has had, current first: a licence may be signed by any of them. */
  keys: OpenedKey[];
}

const CACHE_LIMIT = 10_000;

/** Thrown where a check finds its cached product changed: the request is judged again on the product as it is. */
export class StaleProduct extends Error {}

/**
 * Products by check id, with their opened keys. A check takes its product from here without a
 * query; the check's own licence query reads the product's version (check/service.ts), and a
 * changed version (any change to the product, its keys or its check token raises it) sends the
 * request back through the gate on the product read afresh (DESIGN.md 11: a rotated token or a
 * deactivation is never served stale).
 */
export class CheckProductCache {
  private readonly products = new Map<string, CheckProduct>();
  private readonly keys = new Map<number, { version: number; keys: OpenedKey[] }>();

  constructor(private readonly keyring: Keyring) {}

  /** The cached product, or the product read now (`fresh`, or not cached); undefined when the organisation at `slug` has none. */
  async find(t: Tenant, checkId: string, slug: string, fresh = false): Promise<CheckProduct | undefined> {
    const key = `${t.orgId}:${checkId}`;
    const cached = this.products.get(key);
    if (cached && !fresh) return cached;
    const [row] = await readProduct(t, checkId, slug);
    if (!row) {
      this.products.delete(key);
      return undefined;
    }
    const product = {
      id: row.id,
      version: row.version,
      productKey: row.product_key,
      active: row.active === 1,
      fetchEnabled: row.licence_fetch_enabled === 1,
      fingerprintNeed: row.fingerprint_need,
      selfReleaseLimit: row.self_release_limit,
      maxBorrowedSeats: row.max_borrowed_seats,
      tokenHash: row.check_token_hash,
      keys: await this.keysOf(t, row.id, row.version),
    };
    if (!cached && this.products.size >= CACHE_LIMIT) this.products.delete(this.products.keys().next().value!);
    this.products.set(key, product);
    return product;
  }

  private async keysOf(t: Tenant, productId: number, version: number): Promise<OpenedKey[]> {
    const cached = this.keys.get(productId);
    if (cached?.version === version) return cached.keys;
    const keys = await this.keyring.keysFor(t, productId);
    if (!cached && this.keys.size >= CACHE_LIMIT) this.keys.delete(this.keys.keys().next().value!);
    this.keys.set(productId, { version, keys });
    return keys;
  }
}
