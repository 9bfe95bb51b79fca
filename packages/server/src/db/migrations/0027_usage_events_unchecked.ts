import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The events' rows lose their foreign keys (organisation, licence). Only the usage transaction
 * writes them, for licences it holds locked in the organisation it runs in, and licences and
 * organisations are never deleted, so the keys guarded nothing; on PostgreSQL each was a query
 * per event row taking a share lock on the parent row, the organisation's shared by every batch
 * at once: 16% of PostgreSQL's time in bench:usage, a third of the events' INSERT
 * (docs/benchmarks.md). SQLite drops a constraint only with its table, so the table is made again
 * from its own definition, the references taken out.
 */
export function usageEventsUnchecked(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`alter table usage_events drop constraint usage_events_org_id_fkey, drop constraint usage_events_licence_id_fkey`.execute(db);
        return;
      }
      const { rows } = await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'usage_events'`.execute(db);
      const definition = rows[0]!.sql.replace('"usage_events"', '"usage_events_next"').replace(/ references "\w+" \("id"\)/g, '');
      await sql.raw(definition).execute(db);
      await sql`insert into usage_events_next select * from usage_events`.execute(db);
      await db.schema.dropTable('usage_events').execute();
      await db.schema.alterTable('usage_events_next').renameTo('usage_events').execute();
      await db.schema.createIndex('usage_events_recent').on('usage_events').columns(['licence_id', 'received_at']).execute();
      await db.schema.createIndex('usage_events_expiry').on('usage_events').columns(['expires_at']).execute();
    },
  };
}
