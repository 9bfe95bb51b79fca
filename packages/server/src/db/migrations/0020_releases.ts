import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 20: releases of a product and their artifacts (the bytes live in the artifact store,
 * never in the database), per-artifact download counts per local date, the maintenance window
 * (`updatesMonths` on products and licences, the current term's `upd` on licences) and the
 * licence's feed generation (raised by reset-download-links).
 */
export function releases(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('releases'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('product_id', 'bigint', (c) => c.notNull().references('products.id'))
        .addColumn('version', 'text', notNull)
        .addColumn('channel', 'text', notNull)
        .addColumn('status', 'text', notNull)
        .addColumn('notes', 'text', notNull)
        .addColumn('requires', 'text', notNull)
        .addColumn('bundle_version', 'text')
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text', notNull)
        .addColumn('published_at', 'bigint')
        .addColumn('published_by', 'text')
        .addColumn('yanked_at', 'bigint')
        .addColumn('yanked_reason', 'text')
        .addColumn('manifest', 'text')
        .addColumn('manifest_signatures', 'text')
        .addColumn('row_version', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema.createIndex('releases_product_version').on('releases').columns(['product_id', 'version']).unique().execute();
      await db.schema.createIndex('releases_org_product').on('releases').columns(['org_id', 'product_id', 'status']).execute();

      await withId(db.schema.createTable('artifacts'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('product_id', 'bigint', (c) => c.notNull().references('products.id'))
        .addColumn('release_id', 'bigint', (c) => c.notNull().references('releases.id'))
        .addColumn('filename', 'text', notNull)
        .addColumn('platform', 'text', notNull)
        .addColumn('arch', 'text', notNull)
        .addColumn('size', 'bigint', notNull)
        .addColumn('sha256', 'text', notNull)
        .addColumn('sha512', 'text', notNull)
        .addColumn('content_type', 'text', notNull)
        .addColumn('tauri_signature', 'text')
        .addColumn('ed_signature', 'text')
        .addColumn('backend', 'text', notNull)
        .addColumn('storage_key', 'text', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text', notNull)
        .execute();
      await db.schema.createIndex('artifacts_release_filename').on('artifacts').columns(['release_id', 'filename']).unique().execute();
      await db.schema.createIndex('artifacts_org').on('artifacts').columns(['org_id']).execute();

      await db.schema
        .createTable('artifact_downloads')
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('artifact_id', 'bigint', (c) => c.notNull().references('artifacts.id'))
        .addColumn('day', 'text', notNull)
        .addColumn('count', 'bigint', notNull)
        .addPrimaryKeyConstraint('artifact_downloads_pk', ['artifact_id', 'day'])
        .execute();
      await db.schema.createIndex('artifact_downloads_org').on('artifact_downloads').columns(['org_id', 'day']).execute();

      await db.schema.alterTable('products').addColumn('updates_months', 'integer').execute();
      await db.schema.alterTable('licences').addColumn('updates_months', 'integer').execute();
      // The current term's `upd` claim (Unix seconds); null when the term is signed without one.
      await db.schema.alterTable('licences').addColumn('updates_until', 'bigint').execute();
      await db.schema
        .alterTable('licences')
        .addColumn('feed_generation', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
    },
  };
}
