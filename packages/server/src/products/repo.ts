import type { Selectable } from 'kysely';
import { ALGORITHM_INFO, type Algorithm } from '@licensor/protocol';
import type { ProductsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { countLicencesBy } from '../listings/repos/views.js';
import { iso } from '../core/schemas.js';
import type { ProductKeyRow } from '../keys/keyring.js';
import { shapeOf } from './shape.js';

export type ProductRow = Selectable<ProductsTable>;

export const listProductRows = (t: Tenant) => t.selectFrom('products').selectAll().orderBy('id').execute();

export const findProductRow = (t: Tenant, id: number) =>
  t.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();

/** The current key of each product, by product id. */
export async function currentKeyRows(t: Tenant, productIds: readonly number[]): Promise<Map<number, ProductKeyRow>> {
  if (productIds.length === 0) return new Map();
  const rows = await t
    .selectFrom('product_keys')
    .selectAll()
    .where('retired_at', 'is', null)
    .where('product_id', 'in', productIds)
    .execute();
  return new Map(rows.map((row) => [row.product_id, row]));
}

/** Every key the product has had; keys are only added, so the newest (current) comes first. */
export const keyRowsOf = (t: Tenant, productId: number) =>
  t.selectFrom('product_keys').selectAll().where('product_id', '=', productId).orderBy('id', 'desc').execute();

/** How many licences each product has: the count shown, and what refuses a delete or a new productKey. */
export const countLicences = (t: Tenant, ids: readonly number[]) => countLicencesBy(t, 'product_id', ids);

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
