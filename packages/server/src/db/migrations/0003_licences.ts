import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

export function licences(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('licences'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('lid', 'text', (c) => c.notNull().unique())
        .addColumn('product_id', 'bigint', (c) => c.notNull().references('products.id'))
        .addColumn('customer_id', 'bigint', (c) => c.references('customers.id'))
        .addColumn('licensee', 'text', notNull)
        .addColumn('licensee_email', 'text')
        .addColumn('licence_type', 'text', notNull)
        .addColumn('activation', 'text')
        .addColumn('issued_at', 'bigint', notNull)
        .addColumn('starts_at', 'bigint')
        .addColumn('expires_at', 'bigint')
        .addColumn('grace_days', 'integer', notNull)
        // Stored beside expires_at so calendar filters and plan counts stay plain SQL comparisons.
        .addColumn('grace_ends_at', 'bigint')
        .addColumn('max_machines', 'integer', notNull)
        .addColumn('check_every_seconds', 'integer')
        .addColumn('check_max_seconds', 'integer')
        .addColumn('params', 'text', notNull)
        .addColumn('licence_string', 'text', notNull)
        .addColumn('key_id', 'bigint', (c) => c.notNull().references('product_keys.id'))
        // Raised by every renewal: a renewal commits only if the term it renewed is still current.
        .addColumn('term_version', 'integer', notNull)
        .addColumn('revoked', 'integer', notNull)
        .addColumn('revoked_at', 'bigint')
        .addColumn('revoked_reason', 'text')
        .addColumn('archived', 'integer', notNull)
        .addColumn('archived_at', 'bigint')
        .addColumn('issued_by', 'text', notNull)
        .addColumn('last_checked_at', 'bigint')
        .addColumn('renewed_at', 'bigint')
        .addColumn('rebind_count', 'integer', notNull)
        .addColumn('notes', 'text')
        // Lower-cased licensee, email, lid and notes: what `q` searches, in one indexable column.
        .addColumn('search_text', 'text', notNull)
        .execute();
      // Each page sort walks one of these in order; the default sort's also carries the calendar
      // columns, so walking it filters without reading the table.
      const calendar = ['revoked', 'starts_at', 'expires_at', 'grace_ends_at'];
      const pageIndexes: Record<string, string[]> = {
        issued_at: ['issued_at', 'lid', ...calendar],
        expires_at: ['expires_at', 'lid', 'issued_at'],
        licensee: ['licensee', 'lid'],
        last_checked_at: ['last_checked_at', 'lid'],
      };
      for (const [column, rest] of Object.entries(pageIndexes)) {
        await db.schema
          .createIndex(`licences_page_${column}`)
          .on('licences')
          .columns(['org_id', 'archived', ...rest])
          .execute();
      }
      // Narrow filters (windows, statuses) and every count are answered from these alone.
      await db.schema
        .createIndex('licences_calendar')
        .on('licences')
        .columns(['org_id', 'archived', 'revoked', 'grace_ends_at', 'expires_at', 'starts_at', 'licence_type', 'issued_at', 'lid'])
        .execute();
      await db.schema.createIndex('licences_expiry').on('licences').columns(['org_id', 'archived', 'revoked', 'expires_at', 'issued_at', 'lid']).execute();
      if (dialect === 'sqlite') {
        // Substring search: an FTS5 trigram index over search_text, kept in step by triggers.
        await sql`create virtual table licences_search using fts5(search_text, content='licences', content_rowid='id', tokenize='trigram')`.execute(db);
        await sql`create trigger licences_search_insert after insert on licences begin
          insert into licences_search (rowid, search_text) values (new.id, new.search_text); end`.execute(db);
        await sql`create trigger licences_search_delete after delete on licences begin
          insert into licences_search (licences_search, rowid, search_text) values ('delete', old.id, old.search_text); end`.execute(db);
        await sql`create trigger licences_search_update after update of search_text on licences begin
          insert into licences_search (licences_search, rowid, search_text) values ('delete', old.id, old.search_text);
          insert into licences_search (rowid, search_text) values (new.id, new.search_text); end`.execute(db);
      }
      if (dialect === 'postgres') {
        // Substring search: a trigram index serves LIKE '%...%' (pg_trgm is a trusted extension).
        await sql`create extension if not exists pg_trgm`.execute(db);
        await sql`create index licences_search on licences using gin (search_text gin_trgm_ops)`.execute(db);
      }
      await db.schema.createIndex('licences_org_product').on('licences').columns(['org_id', 'product_id']).execute();
      await db.schema.createIndex('licences_org_customer').on('licences').columns(['org_id', 'customer_id']).execute();

      await withId(db.schema.createTable('licence_versions'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('version_no', 'integer', notNull)
        .addColumn('issued_at', 'bigint', notNull)
        .addColumn('starts_at', 'bigint')
        .addColumn('expires_at', 'bigint')
        .addColumn('grace_days', 'integer', notNull)
        .addColumn('issued_by', 'text', notNull)
        .addColumn('revoked_reason', 'text')
        .addColumn('licence_string', 'text', notNull)
        .addColumn('key_id', 'bigint', (c) => c.notNull().references('product_keys.id'))
        .addColumn('superseded_at', 'bigint', notNull)
        .addUniqueConstraint('licence_versions_no', ['licence_id', 'version_no'])
        .execute();

      await withId(db.schema.createTable('machine_bindings'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('fingerprint', 'text', notNull)
        .addColumn('parts', 'text', notNull)
        .addColumn('bound_at', 'bigint', notNull)
        .addColumn('released_at', 'bigint')
        .addColumn('released_by', 'text')
        .addColumn('at_issue', 'integer', notNull)
        .execute();
      await db.schema.createIndex('machine_bindings_licence').on('machine_bindings').columns(['licence_id', 'released_at']).execute();

      await withId(db.schema.createTable('idempotency_keys'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('key', 'text', notNull)
        .addColumn('request_hash', 'text', notNull)
        .addColumn('status_code', 'integer', notNull)
        .addColumn('body', 'text', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addUniqueConstraint('idempotency_keys_org_key', ['org_id', 'key'])
        .execute();

      // Checks answered, per 15-minute bucket (every zone offset is a multiple of 15 minutes), so
      // the dashboard can count them per local day in any timezone; written in batches, not per check.
      await db.schema
        .createTable('check_counts')
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('bucket', 'bigint', notNull)
        .addColumn('count', 'bigint', notNull)
        .addPrimaryKeyConstraint('check_counts_pk', ['org_id', 'bucket'])
        .execute();
    },
  };
}
