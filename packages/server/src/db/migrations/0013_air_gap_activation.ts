import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 14: air-gapped activation. Products gain the switch (off, so an upgrade turns nothing
 * on) and the activation length. An activation's seat is a binding that lapses at its end,
 * `lease_ends_at` (the column floating licences' leases use, added by 0012 on a tree that has it:
 * one "live" rule for both), until a check from that machine makes it an ordinary binding (null).
 * Activations live in a table of their own: the request as received (its nonce once per licence),
 * the response's fields (signed after the commit, then stored), and how the activation ended.
 */
export function airGapActivation(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('products')
        .addColumn('air_gap_activation', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('products')
        .addColumn('air_gap_activation_days', 'integer', (c) => c.notNull().defaultTo(90))
        .execute();

      const columns =
        dialect === 'postgres'
          ? await sql<{
              name: string;
            }>`select column_name as name from information_schema.columns where table_schema = current_schema() and table_name = 'machine_bindings'`.execute(db)
          : await sql<{ name: string }>`select name from pragma_table_info('machine_bindings')`.execute(db);
      if (!columns.rows.some((c) => c.name === 'lease_ends_at')) {
        await db.schema.alterTable('machine_bindings').addColumn('lease_ends_at', 'bigint').execute();
      }

      await withId(db.schema.createTable('air_gap_activations'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('binding_id', 'bigint', (c) => c.notNull().references('machine_bindings.id'))
        .addColumn('request', 'text', notNull)
        .addColumn('nonce', 'text', notNull)
        .addColumn('dpk', 'text', notNull)
        .addColumn('fingerprint', 'text', notNull)
        .addColumn('status', 'text', notNull)
        .addColumn('issued_at', 'bigint', notNull)
        .addColumn('bound_at', 'bigint', notNull)
        .addColumn('until', 'bigint', notNull)
        .addColumn('response', 'text')
        .addColumn('created_by', 'text', notNull)
        .addColumn('ended_at', 'bigint')
        .addColumn('ended_by', 'text')
        .addColumn('released', 'integer')
        .addColumn('counted', 'integer', (c) => c.notNull().defaultTo(0))
        .addUniqueConstraint('air_gap_activations_nonce', ['licence_id', 'nonce'])
        .execute();
      await db.schema.createIndex('air_gap_activations_binding').on('air_gap_activations').columns(['binding_id']).execute();
    },
  };
}
