import type { Insertable, Selectable, Updateable } from 'kysely';
import { ALGORITHM_INFO, type Algorithm } from '@licensor/protocol';
import type { ProductKeysTable, ProductsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { countLicencesBy } from '../listings/repos/views.js';
import { iso } from '../core/schemas.js';
import type { ProductKeyRow } from '../keys/keyring.js';
import { shapeOf } from './shape.js';

export type ProductRow = Selectable<ProductsTable>;

export const listProductRows = (t: Tenant) => t.selectFrom('products').selectAll().orderBy('id').execute();

export const findProductRow = (t: Tenant, id: number) => t.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();

export const findProductByKey = (t: Tenant, productKey: string) =>
  t.selectFrom('products').selectAll().where('product_key', '=', productKey).executeTakeFirst();

/** The current key of each product, by product id. */
export async function currentKeyRows(t: Tenant, productIds: readonly number[]): Promise<Map<number, ProductKeyRow>> {
  if (productIds.length === 0) return new Map();
  const rows = await t.selectFrom('product_keys').selectAll().where('retired_at', 'is', null).where('product_id', 'in', productIds).execute();
  return new Map(rows.map((row) => [row.product_id, row]));
}

/** Every key the product has had; keys are only added, so the newest (current) comes first. */
export const keyRowsOf = (t: Tenant, productId: number) =>
  t.selectFrom('product_keys').selectAll().where('product_id', '=', productId).orderBy('id', 'desc').execute();

/** How many licences each product has: the count shown, and what refuses a delete or a new productKey. */
export const countLicences = (t: Tenant, ids: readonly number[]) => countLicencesBy(t, 'product_id', ids);

/** A product with releases is not deleted: their artifacts would lose their product. */
export const countReleases = async (t: Tenant, productId: number) =>
  Number(
    (
      await t
        .selectFrom('releases')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('product_id', '=', productId)
        .executeTakeFirstOrThrow()
    ).n,
  );

/**
 * A product as the API shows it, with its current key: public key material only, never the
 * sealed key or the check token's hash. `keyState` says whether this service can open the key.
 */
export function toProduct(row: ProductRow, key: ProductKeyRow, keyError: string | null, licenseCount: number, now: number) {
  const { params, ...shape } = shapeOf(row);
  const algorithm = ALGORITHM_INFO[row.algorithm as Algorithm];
  return {
    id: row.id,
    ...shape,
    algorithm: algorithm.id,
    algorithmLabel: algorithm.label,
    signatureAlgorithm: algorithm.signatureAlgorithm,
    certificateType: row.certificate_type,
    keyOrigin: row.key_origin,
    pkcs11: key.pkcs11_token === null ? null : { tokenLabel: key.pkcs11_token, keyLabel: key.pkcs11_label! },
    keyFingerprint: key.key_fingerprint,
    certificateExpiresAt: iso(key.certificate_expires_at),
    certificateExpired: key.certificate_expires_at !== null && key.certificate_expires_at <= now,
    paramCount: params.length,
    licenseCount,
    checkId: row.check_id,
    checkTokenSet: row.check_token_hash !== null,
    checkRotatedAt: iso(row.check_rotated_at),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    params,
    publicKeyPem: key.public_key_pem,
    certificatePem: key.certificate_pem,
    certificateSubject: key.certificate_subject,
    keyState: keyError === null ? ('OK' as const) : ('ERROR' as const),
    keyError,
    createdBy: row.created_by,
  };
}

export const insertProductRow = (t: Tenant, values: Omit<Insertable<ProductsTable>, 'org_id'>) =>
  t.insertInto('products', values).returningAll().executeTakeFirstOrThrow();

/** The product with its new columns, only while it is still at `version`; undefined otherwise. */
export const updateProductAt = (t: Tenant, id: number, version: number, set: Updateable<ProductsTable>) =>
  t.updateTable('products').set(set).where('id', '=', id).where('version', '=', version).returningAll().executeTakeFirst();

/** A new check token's digest: the product's version moves on, so every cache of it is stale. */
export const setCheckToken = (t: Tenant, id: number, tokenHash: string, now: number) =>
  t
    .updateTable('products')
    .set((eb) => ({ check_token_hash: tokenHash, check_rotated_at: now, updated_at: now, version: eb('version', '+', 1) }))
    .where('id', '=', id)
    .returning(['check_id', 'name'])
    .executeTakeFirst();

/** Removes a product without licences, its keys and its (all zero) tallies. */
export async function deleteProductRows(t: Tenant, id: number): Promise<void> {
  await t.deleteFrom('product_keys').where('product_id', '=', id).execute();
  await t.deleteFrom('licence_tallies').where('product_id', '=', id).execute();
  await t.deleteFrom('products').where('id', '=', id).execute();
}

export const insertKeyRow = (t: Tenant, values: Omit<Insertable<ProductKeysTable>, 'org_id'>) =>
  t.insertInto('product_keys', values).returningAll().executeTakeFirstOrThrow();

export const updateKeyRow = (t: Tenant, id: number, set: Updateable<ProductKeysTable>) =>
  t.updateTable('product_keys').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow();

export async function retireKey(t: Tenant, id: number, now: number): Promise<void> {
  await t.updateTable('product_keys').set({ retired_at: now }).where('id', '=', id).execute();
}

/**
 * A product event's data (DESIGN.md 15), read in the change's transaction, as the API returns the
 * product. Its `keyError` belongs to the instance that answers, not to the product: null here.
 */
export async function productData(t: Tenant, id: number, now: number) {
  const row = (await findProductRow(t, id))!;
  const key = (await currentKeyRows(t, [id])).get(id)!;
  return { product: toProduct(row, key, null, (await countLicences(t, [id])).get(id) ?? 0, now) };
}

export function toKeyRecord(row: ProductKeyRow) {
  return {
    keyFingerprint: row.key_fingerprint,
    algorithm: row.algorithm as Algorithm,
    publicKeyPem: row.public_key_pem,
    createdAt: iso(row.created_at),
    retiredAt: iso(row.retired_at),
    current: row.retired_at === null,
  };
}

/** The names of the payment connections (DESIGN.md 22) whose mappings name the product. */
export async function mappingIntegrations(t: Tenant, productId: number): Promise<string[]> {
  const rows = await t.selectFrom('integrations').select(['name', 'mappings']).orderBy('name').execute();
  return rows.filter((r) => (JSON.parse(r.mappings) as Array<{ productId: number }>).some((m) => m.productId === productId)).map((r) => r.name);
}
