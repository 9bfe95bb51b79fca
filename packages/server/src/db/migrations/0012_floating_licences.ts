import { sql, type Kysely, type Migration } from 'kysely';
import { notNull } from './ddl.js';

/**
 * DESIGN.md 13: floating licences. Products gain a seat model (those made before stay
 * NODE_LOCKED, so an upgrade changes nothing), a lease length and borrowing limits (existing
 * products may borrow as many seats as they have, borrowing itself being off); each licence
 * keeps the seat model it was issued under. A binding row of a floating licence is a lease: found
 * by its fingerprint's digest, live until `lease_ends_at`, borrowed until `borrowed_until`.
 * Node-locked rows keep a null end (live until released) and need no digest, so nothing is
 * backfilled. A licence's daily peak of live leases (UTC days) is kept as leases are written.
 */
export function floatingLicences(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('products')
        .addColumn('seat_model', 'text', (c) => c.notNull().defaultTo('NODE_LOCKED'))
        .execute();
      await db.schema
        .alterTable('products')
        .addColumn('lease_seconds', 'integer', (c) => c.notNull().defaultTo(900))
        .execute();
      await db.schema
        .alterTable('products')
        .addColumn('max_borrow_seconds', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('products')
        .addColumn('max_borrowed_seats', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      await sql`update products set max_borrowed_seats = max_machines`.execute(db);

      await db.schema
        .alterTable('licences')
        .addColumn('seat_model', 'text', (c) => c.notNull().defaultTo('NODE_LOCKED'))
        .execute();

      await db.schema.alterTable('machine_bindings').addColumn('fp_digest', 'text').execute();
      await db.schema.alterTable('machine_bindings').addColumn('lease_ends_at', 'bigint').execute();
      await db.schema.alterTable('machine_bindings').addColumn('borrowed_until', 'bigint').execute();
      await db.schema.createIndex('machine_bindings_fp_digest').on('machine_bindings').columns(['licence_id', 'fp_digest']).execute();

      await db.schema
        .createTable('licence_lease_peaks')
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id').onDelete('cascade'))
        .addColumn('day', 'text', notNull)
        .addColumn('peak', 'integer', notNull)
        .addPrimaryKeyConstraint('licence_lease_peaks_pk', ['licence_id', 'day'])
        .execute();
    },
  };
}
