import type { Tenant } from '../db/tenant.js';

/** A product's keys with the product's version (which an opened key is cached under), newest (current) first. */
const keyRowsWithVersion = (t: Tenant, productId: number) =>
  t
    .selectFrom('product_keys')
    .innerJoin('products', 'products.id', 'product_keys.product_id')
    .selectAll('product_keys')
    .select('products.version')
    .where('product_keys.product_id', '=', productId)
    // Keys are only ever added, the new one current: the highest id is the current key.
    .orderBy('product_keys.id', 'desc');

export const keysWithVersion = (t: Tenant, productId: number) => keyRowsWithVersion(t, productId).execute();

export const currentKeyWithVersion = (t: Tenant, productId: number) =>
  keyRowsWithVersion(t, productId).where('product_keys.retired_at', 'is', null).executeTakeFirst();

/** One key with its product's version. */
export const findKeyWithVersion = (t: Tenant, keyId: number) =>
  t
    .selectFrom('product_keys')
    .innerJoin('products', 'products.id', 'product_keys.product_id')
    .selectAll('product_keys')
    .select('products.version')
    .where('product_keys.id', '=', keyId)
    .executeTakeFirstOrThrow();
