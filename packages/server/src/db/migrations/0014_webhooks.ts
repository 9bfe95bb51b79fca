import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 15: webhook endpoints (secrets sealed like private keys), the outbox of events
 * written in the change's own transaction, one delivery per event and endpoint with its attempts,
 * each organisation's sequence counter, and the marks that raise `licence.expiring` and
 * `licence.expired` once per term.
 */
export function webhooks(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      const org = (c: any) => c.notNull().references('organisations.id');
      await withId(db.schema.createTable('webhook_endpoints'), dialect)
        .addColumn('org_id', 'bigint', org)
        .addColumn('url', 'text', notNull)
        .addColumn('description', 'text')
        .addColumn('events', 'text', notNull)
        .addColumn('enabled', 'integer', notNull)
        .addColumn('disabled_reason', 'text')
        .addColumn('secret', 'text', notNull)
        .addColumn('previous_secret', 'text')
        .addColumn('previous_until', 'bigint')
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text', notNull)
        .addColumn('updated_at', 'bigint', notNull)
        .addColumn('last_delivery_at', 'bigint')
        .addColumn('last_status', 'integer')
        .addColumn('failing_since', 'bigint')
        .execute();
      await db.schema.createIndex('webhook_endpoints_org').on('webhook_endpoints').columns(['org_id']).execute();

      await withId(db.schema.createTable('webhook_state'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().unique().references('organisations.id'))
        .addColumn('last_sequence', 'bigint', notNull)
        .addColumn('since', 'bigint', notNull)
        .execute();

      await withId(db.schema.createTable('webhook_events'), dialect)
        .addColumn('org_id', 'bigint', org)
        .addColumn('event_id', 'text', (c) => c.notNull().unique())
        .addColumn('type', 'text', notNull)
        .addColumn('data', 'text', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('sequence', 'bigint')
        .addColumn('body', 'text')
        .execute();
      await db.schema.createIndex('webhook_events_unsequenced').on('webhook_events').column('id').where(sql.ref('body'), 'is', null).execute();
      await db.schema.createIndex('webhook_events_created').on('webhook_events').column('created_at').execute();

      await withId(db.schema.createTable('webhook_deliveries'), dialect)
        .addColumn('org_id', 'bigint', org)
        .addColumn('endpoint_id', 'bigint', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('event_id', 'bigint', (c) => c.notNull().references('webhook_events.id').onDelete('cascade'))
        .addColumn('status', 'text', notNull)
        .addColumn('attempts', 'integer', notNull)
        .addColumn('next_at', 'bigint')
        .addColumn('lease', 'text')
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('updated_at', 'bigint', notNull)
        .addUniqueConstraint('webhook_deliveries_endpoint_event', ['endpoint_id', 'event_id'])
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_due')
        .on('webhook_deliveries')
        .columns(['next_at'])
        .where(sql.ref('status'), '=', sql.lit('pending'))
        .execute();
      await db.schema.createIndex('webhook_deliveries_endpoint').on('webhook_deliveries').columns(['org_id', 'endpoint_id', 'id']).execute();
      await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').columns(['event_id']).execute();

      await withId(db.schema.createTable('webhook_attempts'), dialect)
        .addColumn('org_id', 'bigint', org)
        .addColumn('delivery_id', 'bigint', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
        .addColumn('at', 'bigint', notNull)
        .addColumn('http_status', 'integer')
        .addColumn('duration_ms', 'integer', notNull)
        .addColumn('response', 'text', notNull)
        .addColumn('error', 'text')
        .execute();
      await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id']).execute();

      await withId(db.schema.createTable('webhook_term_marks'), dialect)
        .addColumn('org_id', 'bigint', org)
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id').onDelete('cascade'))
        .addColumn('kind', 'text', notNull)
        .addColumn('term_version', 'integer', notNull)
        .addUniqueConstraint('webhook_term_marks_term', ['licence_id', 'kind', 'term_version'])
        .execute();
    },
  };
}
