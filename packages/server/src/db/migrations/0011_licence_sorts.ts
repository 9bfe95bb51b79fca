import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Issue 15: indexes for the sorts a page walks instead of sorting every match
 * (listings/repos/pages.ts, groups.ts). The status and product sorts read each group's licences in
 * lid order, so there is an index by lid and the product index carries `archived` and `lid`. PostgreSQL cannot read an ascending index
 * backwards as `desc nulls last`, which the two nullable sorts want newest-first; SQLite can
 * (its nulls sort first, so a backwards walk sets them aside for the end).
 */
export function licenceSorts(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      // A status window walks its licences newest first; the calendar index counted statuses, which the tallies now keep.
      await db.schema.createIndex('licences_page_status').on('licences').columns(['org_id', 'archived', 'status_rank', 'issued_at', 'lid']).execute();
      await db.schema.dropIndex('licences_calendar').execute();
      await db.schema.createIndex('licences_grace_ends').on('licences').columns(['org_id', 'archived', 'revoked', 'grace_ends_at']).execute();
      await db.schema.createIndex('licences_page_lid').on('licences').columns(['org_id', 'archived', 'lid']).execute();
      await db.schema.createIndex('licences_page_product').on('licences').columns(['org_id', 'product_id', 'archived', 'lid']).execute();
      await db.schema.dropIndex('licences_org_product').execute();
      if (dialect !== 'postgres') return;
      for (const column of ['expires_at', 'last_checked_at']) {
        await sql`create index ${sql.id(`licences_page_${column}_desc`)} on licences (org_id, archived, ${sql.id(column)} desc nulls last, lid desc)`.execute(
          db,
        );
      }
    },
  };
}
