import { sql, type Kysely, type Migration } from 'kysely';

/**
 * DESIGN.md 19's cap of remembered ids per period key (EVENT_LIMIT) was a count of the licence's
 * event rows in the key on every usage request: its cost grew with the ids, 270 ms at 100,000 on
 * PostgreSQL. Each count row now keeps `ids`, the remembered ids of its meter and key, written with
 * the events and lowered by the pruner as it forgets them. Filled here from the rows kept, a count
 * row made (at 0 used) for a meter and key that recorded only refusals. Then the index that count
 * walked goes: nothing else reads the events by key, and every event written paid for it.
 */
export function usageRemembered(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('usage_counts')
        .addColumn('ids', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`insert into usage_counts (org_id, licence_id, meter, period_key, used)
        select distinct org_id, licence_id, meter, period_key, 0 from usage_events where event_id is not null
        on conflict (licence_id, meter, period_key) do nothing`.execute(db);
      await sql`update usage_counts set ids = (select count(*) from usage_events e
        where e.licence_id = usage_counts.licence_id and e.meter = usage_counts.meter and e.period_key = usage_counts.period_key and e.event_id is not null)`.execute(
        db,
      );
      await db.schema.dropIndex('usage_events_period').execute();
    },
  };
}
