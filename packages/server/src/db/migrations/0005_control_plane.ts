import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 8: platform accounts and their sessions live outside every organisation, with their
 * own sign-in failures and audit trail; an organisation can be suspended.
 */
export function controlPlane(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('organisations')
        .addColumn('suspended', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();

      await withId(db.schema.createTable('platform_accounts'), dialect)
        .addColumn('username', 'text', (c) => c.notNull().unique())
        .addColumn('display_name', 'text', notNull)
        .addColumn('role', 'text', notNull)
        .addColumn('active', 'integer', notNull)
        .addColumn('password_hash', 'text', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('last_login_at', 'bigint')
        .execute();

      await db.schema
        .createTable('platform_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'bigint', (c) => c.notNull().references('platform_accounts.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('last_seen_at', 'bigint', notNull)
        .addColumn('expires_at', 'bigint', notNull)
        .execute();
      await db.schema.createIndex('platform_sessions_account').on('platform_sessions').column('account_id').execute();

      await withId(db.schema.createTable('platform_login_failures'), dialect)
        .addColumn('username', 'text', notNull)
        .addColumn('address', 'text', notNull)
        .addColumn('at', 'bigint', notNull)
        .execute();
      await db.schema.createIndex('platform_login_failures_address').on('platform_login_failures').columns(['address', 'at']).execute();

      await withId(db.schema.createTable('platform_audit'), dialect)
        .addColumn('at', 'bigint', notNull)
        .addColumn('actor', 'text', notNull)
        .addColumn('action', 'text', notNull)
        .addColumn('organisation', 'text')
        .addColumn('details', 'text')
        .execute();
    },
  };
}
