import type { Kysely, Migration } from 'kysely';

/**
 * DESIGN.md 10: a key that stays on a PKCS#11 token. Its row names the token, the key's label and
 * CKA_ID; `sealed_private_key` then holds the sealed PIN, as it holds the sealed key otherwise.
 */
export function tokenKeys(): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const column of ['pkcs11_token', 'pkcs11_label', 'pkcs11_id']) {
        await db.schema.alterTable('product_keys').addColumn(column, 'text').execute();
      }
    },
  };
}
