import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

export function products(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('products'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('product_key', 'text', notNull)
        .addColumn('name', 'text', notNull)
        .addColumn('description', 'text')
        .addColumn('active', 'integer', notNull)
        .addColumn('algorithm', 'text', notNull)
        .addColumn('key_origin', 'text', notNull)
        .addColumn('certificate_type', 'text', notNull)
        .addColumn('licence_type', 'text', notNull)
        .addColumn('allowed_licence_types', 'text', notNull)
        // Unique across organisations: the check API finds the product by it alone.
        .addColumn('check_id', 'text', (c) => c.notNull().unique())
        .addColumn('check_token_hash', 'text')
        .addColumn('check_rotated_at', 'bigint')
        .addColumn('licence_fetch_enabled', 'integer', notNull)
        .addColumn('check_interval_seconds', 'bigint', notNull)
        .addColumn('max_offline_seconds', 'bigint', notNull)
        .addColumn('fingerprint_need', 'integer', notNull)
        .addColumn('max_machines', 'integer', notNull)
        .addColumn('default_validity_months', 'integer')
        .addColumn('default_grace_days', 'integer', notNull)
        .addColumn('params', 'text', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text')
        .addColumn('updated_at', 'bigint', notNull)
        .addColumn('version', 'integer', notNull)
        .addUniqueConstraint('products_org_product_key', ['org_id', 'product_key'])
        .execute();

      await withId(db.schema.createTable('product_keys'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('product_id', 'bigint', (c) => c.notNull().references('products.id'))
        .addColumn('algorithm', 'text', notNull)
        .addColumn('public_key_pem', 'text', notNull)
        .addColumn('sealed_private_key', 'text', notNull)
        .addColumn('key_fingerprint', 'text', notNull)
        .addColumn('certificate_pem', 'text')
        .addColumn('certificate_subject', 'text')
        .addColumn('certificate_expires_at', 'bigint')
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('retired_at', 'bigint')
        .execute();
      await db.schema.createIndex('product_keys_product').on('product_keys').columns(['product_id', 'id']).execute();
      // At most one current key per product, whatever two writers do at once.
      await db.schema.createIndex('product_keys_current').on('product_keys').column('product_id').unique().where(sql.ref('retired_at'), 'is', null).execute();

      await withId(db.schema.createTable('customers'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('name', 'text', notNull)
        .addColumn('email', 'text')
        .addColumn('email_lower', 'text')
        .addColumn('notes', 'text')
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text')
        .execute();
      // Both dialects let any number of rows hold a null email under a unique index.
      await db.schema.createIndex('customers_org_email').on('customers').columns(['org_id', 'email_lower']).unique().execute();
      await db.schema.createIndex('customers_org_name').on('customers').columns(['org_id', 'name']).execute();
    },
  };
}
