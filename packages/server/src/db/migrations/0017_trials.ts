import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 18: trials. Products gain the trial policy (off: an upgrade turns nothing on), the
 * lowest `fpn` of their ledger's entries (`trial_need`, which bounds the components a lookup
 * reads) and the keyed check value `restore --check` reports. Licences gain the trial fields;
 * organisations the control plane's `trialLimit`. The ledger keeps one entry per trial: keyed
 * hashes of each present component and of the client address, never a raw value; one index per
 * component, so a lookup reads candidates by (product, component, hash), never by a scan.
 */
export function trials(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      const products = [
        ['trial_days', 'integer', 0],
        ['trial_params', 'text', '{}'],
        ['trial_meters', 'text', '{}'],
      ] as const;
      for (const [name, type, value] of products)
        await db.schema
          .alterTable('products')
          .addColumn(name, type, (c) => c.notNull().defaultTo(value))
          .execute();
      await db.schema.alterTable('products').addColumn('trial_daily_limit', 'integer').execute();
      await db.schema
        .alterTable('products')
        .addColumn('trial_address_daily_limit', 'integer', (c) => c.defaultTo(20))
        .execute();
      await db.schema.alterTable('products').addColumn('trial_need', 'integer').execute();
      await db.schema.alterTable('products').addColumn('trial_check', 'text').execute();

      await db.schema
        .alterTable('licences')
        .addColumn('trial', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      for (const name of ['trial_started_at', 'trial_converted_at', 'trial_ledger_reset_at'])
        await db.schema.alterTable('licences').addColumn(name, 'bigint').execute();
      await db.schema
        .alterTable('licences')
        .addColumn('trial_installations', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('licences').addColumn('trial_converted_to', 'text').execute();
      await db.schema.alterTable('licences').addColumn('converted_from_trial', 'text').execute();
      await db.schema.alterTable('organisations').addColumn('trial_limit', 'bigint').execute();

      await withId(db.schema.createTable('trial_entries'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('product_id', 'bigint', (c) => c.notNull().references('products.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().unique().references('licences.id'))
        .addColumn('fpn', 'integer', notNull)
        .addColumn('machine', 'text')
        .addColumn('host', 'text')
        .addColumn('mac', 'text')
        .addColumn('cpu', 'text')
        .addColumn('disk', 'text')
        .addColumn('addr', 'text', notNull)
        .addColumn('addr48', 'text')
        .addColumn('started_at', 'bigint', notNull)
        .addColumn('reset_at', 'bigint')
        .execute();
      for (const component of ['machine', 'host', 'mac', 'cpu', 'disk']) {
        await db.schema.createIndex(`trial_entries_${component}`).on('trial_entries').columns(['product_id', component]).execute();
      }
      await db.schema.createIndex('trial_entries_started').on('trial_entries').columns(['product_id', 'started_at']).execute();
      await db.schema.createIndex('trial_entries_addr').on('trial_entries').columns(['product_id', 'addr', 'started_at']).execute();
      await db.schema.createIndex('trial_entries_addr48').on('trial_entries').columns(['product_id', 'addr48', 'started_at']).execute();

      await db.schema
        .createTable('trial_installations')
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('device_public_key', 'text', notNull)
        .addColumn('first_seen_at', 'bigint', notNull)
        .addPrimaryKeyConstraint('trial_installations_pkey', ['licence_id', 'device_public_key'])
        .execute();
    },
  };
}
