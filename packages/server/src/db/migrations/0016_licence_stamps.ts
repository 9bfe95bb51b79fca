import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull } from './ddl.js';

/**
 * Issue 34: a licence's lastCheckedAt moves to a narrow table of its own, one row per licence.
 * On the licence row it sat in two sort indexes, so every stamp (a second's checks, written
 * together) rewrote the licence and all of its indexes, the trigram expression among them, while
 * checks waited for the two cores. Here a stamp rewrites a row of five columns and its two or
 * three indexes; the licence row is not written by checks at all. `org_id`, `archived` and `lid`
 * are copies the lastCheckedAt sort walks in order (listings/repos/pages.ts), written with the licence.
 */
export function licenceStamps(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('licence_stamps')
        // On SQLite an integer primary key is the rowid itself: no index of its own.
        .addColumn('licence_id', dialect === 'postgres' ? 'bigint' : 'integer', (c) => c.primaryKey().references('licences.id').onDelete('cascade'))
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('archived', 'integer', notNull)
        .addColumn('lid', 'text', notNull)
        .addColumn('last_checked_at', 'bigint')
        .execute();
      await sql`insert into licence_stamps (licence_id, org_id, archived, lid, last_checked_at)
        select id, org_id, archived, lid, last_checked_at from licences`.execute(db);
      await db.schema.createIndex('licence_stamps_page').on('licence_stamps').columns(['org_id', 'archived', 'last_checked_at', 'lid']).execute();
      await db.schema.dropIndex('licences_page_last_checked_at').execute();
      if (dialect === 'postgres') {
        // As 0011: PostgreSQL cannot walk an ascending index backwards as `desc nulls last`.
        await sql`create index licence_stamps_page_desc on licence_stamps (org_id, archived, last_checked_at desc nulls last, lid desc)`.execute(db);
        await db.schema.dropIndex('licences_page_last_checked_at_desc').execute();
      }
      await db.schema.alterTable('licences').dropColumn('last_checked_at').execute();
    },
  };
}
