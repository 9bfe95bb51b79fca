import { sql, type Kysely, type Migration } from 'kysely';
import { notNull } from './ddl.js';

/**
 * Issue 15: exact licence totals kept on write (listings/repos/tallies.ts). `licence_tallies` holds how
 * many licences had each key at the organisation's `as_of`; the clock row appears with the first
 * tally, so organisations that existed before this migration are counted once, on first use.
 * The partial index finds licences whose start falls between two instants, as the other two
 * calendar boundaries already are by licences_expiry and licences_calendar.
 */
export function licenceTallies(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('licence_tally_clocks')
        .addColumn('org_id', 'bigint', (c) => c.primaryKey().references('organisations.id'))
        .addColumn('as_of', 'bigint', notNull)
        .execute();
      await db.schema
        .createTable('licence_tallies')
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('archived', 'integer', notNull)
        .addColumn('product_id', 'bigint', (c) => c.notNull().references('products.id'))
        .addColumn('licence_type', 'text', notNull)
        .addColumn('perpetual', 'integer', notNull)
        .addColumn('status', 'text', notNull)
        .addColumn('n', 'bigint', notNull)
        .addPrimaryKeyConstraint('licence_tallies_pk', ['org_id', 'archived', 'product_id', 'licence_type', 'perpetual', 'status'])
        .execute();
      // Each licence's status at the clock's instant, judged on write and as the clock moves.
      await db.schema.alterTable('licences').addColumn('status_rank', 'integer').execute();
      await db.schema.createIndex('licences_starts').on('licences').columns(['org_id', 'starts_at']).where(sql.ref('starts_at'), 'is not', null).execute();
    },
  };
}
