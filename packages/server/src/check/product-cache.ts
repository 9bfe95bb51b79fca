import { preparedQuery, type Tenant } from '../db/tenant.js';
import type { Keyring, OpenedKey } from '../keys/keyring.js';

/** What the check path needs of a product: its row's few hot columns and its opened keys. */
export interface CheckProduct {
  id: number;
  productKey: string;
  active: boolean;
  fetchEnabled: boolean;
  fingerprintNeed: number;
  /** DESIGN.md 12: self-service releases per licence in any 30 days; null = no limit. */
  selfReleaseLimit: number | null;
  tokenHash: string | null;
  /** Every key the product has had, current first: a licence may be signed by any of them. */
  keys: OpenedKey[];
}

const CACHE_LIMIT = 10_000;

// Joined to its organisation by id and filtered by slug: this confirms the check path's cached
// organisation (orgs/repo.ts OrganisationCache) in the query it makes anyway.
const readProduct = preparedQuery((t, checkId: string, slug: string) =>
  t
    .selectFrom('products')
    .innerJoin('organisations as o', 'o.id', 'products.org_id')
    .select([
      'products.id',
      'products.version',
      'products.product_key',
      'products.active',
      'products.licence_fetch_enabled',
      'products.fingerprint_need',
      'products.self_release_limit',
      'products.check_token_hash',
    ])
    .where('products.check_id', '=', checkId)
    .where('o.slug', '=', slug),
);

/**
 * Looks a product up by its check id on every request (one indexed row: token hash, active,
 * version, and its organisation's row), and keeps its opened keys per product version. Every change to a product, a key
 * or check-token rotation included, raises the version, so a stale entry is never used.
 */
export class CheckProductCache {
  private readonly keys = new Map<number, { version: number; keys: OpenedKey[] }>();

  constructor(private readonly keyring: Keyring) {}

  /** The product of a check id with its opened keys; undefined when the organisation has none or is no longer at `slug`. */
  async find(t: Tenant, checkId: string, slug: string): Promise<CheckProduct | undefined> {
    const [row] = await readProduct(t, checkId, slug);
    if (!row) return undefined;
    return {
      id: row.id,
      productKey: row.product_key,
      active: row.active === 1,
      fetchEnabled: row.licence_fetch_enabled === 1,
      fingerprintNeed: row.fingerprint_need,
      selfReleaseLimit: row.self_release_limit,
      tokenHash: row.check_token_hash,
      keys: await this.keysOf(t, row.id, row.version),
    };
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
