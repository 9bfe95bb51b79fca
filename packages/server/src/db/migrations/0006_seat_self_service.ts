import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 12: a product's self-service release limit. Products that exist when it is added
 * get 0, so an upgrade turns nothing on; new products get 3 from the product defaults. Portal
 * links (only the code's SHA-256 kept) and the portal sessions they open.
 */
export function seatSelfService(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('products')
        .addColumn('self_release_limit', 'integer', (c) => c.defaultTo(0))
        .execute();

      await withId(db.schema.createTable('portal_links'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('code_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text', notNull)
        .addColumn('expires_at', 'bigint', notNull)
        .addColumn('used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('portal_links_customer').on('portal_links').columns(['org_id', 'customer_id']).execute();

      await db.schema
        .createTable('portal_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('link_id', 'bigint', (c) => c.notNull().references('portal_links.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('expires_at', 'bigint', notNull)
        .execute();
    },
  };
}
