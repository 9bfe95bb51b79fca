import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 19: usage metering. Products and licences gain their meter lists (JSON, `[]` for
 * every existing one, so an upgrade meters nothing). A count is one row per licence, meter and
 * period key, updated under the licence-row lock; an event is one row per licence and client id
 * (an adjustment has none), kept until `expires_at`; a threshold mark is written once per
 * licence, meter, period key, limit and threshold.
 */
export function usageMetering(dialect: DialectName): Migration {
  const id = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('products')
        .addColumn('meters', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      await db.schema
        .alterTable('licences')
        .addColumn('meters', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      await db.schema
        .createTable('usage_counts')
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', id, (c) => c.notNull().references('licences.id'))
        .addColumn('meter', 'text', notNull)
        .addColumn('period_key', 'text', notNull)
        .addColumn('used', 'bigint', notNull)
        .addPrimaryKeyConstraint('usage_counts_pk', ['licence_id', 'meter', 'period_key'])
        .execute();
      await withId(db.schema.createTable('usage_events'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', id, (c) => c.notNull().references('licences.id'))
        // The client's id; null for an operator's adjustment.
        .addColumn('event_id', 'text')
        .addColumn('meter', 'text', notNull)
        .addColumn('amount', 'bigint', notNull)
        .addColumn('at', 'bigint')
        .addColumn('received_at', 'bigint', notNull)
        .addColumn('result', 'text', notNull)
        .addColumn('period_key', 'text', notNull)
        .addColumn('source', 'text', notNull)
        .addColumn('machine_id', 'bigint')
        .addColumn('actor', 'text', notNull)
        .addColumn('reason', 'text')
        .addColumn('expires_at', 'bigint', notNull)
        .addUniqueConstraint('usage_events_id', ['licence_id', 'event_id'])
        .execute();
      await db.schema.createIndex('usage_events_period').on('usage_events').columns(['licence_id', 'period_key']).execute();
      await db.schema.createIndex('usage_events_recent').on('usage_events').columns(['licence_id', 'received_at']).execute();
      await db.schema.createIndex('usage_events_expiry').on('usage_events').columns(['expires_at']).execute();
      await db.schema
        .createTable('usage_marks')
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', id, (c) => c.notNull().references('licences.id'))
        .addColumn('meter', 'text', notNull)
        .addColumn('period_key', 'text', notNull)
        .addColumn('limit_value', 'bigint', notNull)
        .addColumn('threshold', 'integer', notNull)
        .addColumn('marked_at', 'bigint', notNull)
        .addPrimaryKeyConstraint('usage_marks_pk', ['licence_id', 'meter', 'period_key', 'limit_value', 'threshold'])
        .execute();
    },
  };
}
