import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * DESIGN.md amendments: the licensee sort ignores case (an index on the folded name serves it),
 * and machine bindings carry the label an application sends and when the seat was last seen.
 */
export function consoleAmendments(_dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.dropIndex('licences_page_licensee').execute();
      await sql`create index licences_page_licensee on licences (org_id, archived, lower(licensee), lid)`.execute(db);
      await db.schema.alterTable('machine_bindings').addColumn('label', 'text').execute();
      await db.schema.alterTable('machine_bindings').addColumn('last_seen_at', 'bigint').execute();
    },
  };
}
