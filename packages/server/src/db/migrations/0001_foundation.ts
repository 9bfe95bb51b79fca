import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

export function foundation(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('organisations'), dialect)
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', notNull)
        .addColumn('plan_limit', 'bigint')
        .addColumn('timezone', 'text', (c) => c.notNull().defaultTo('UTC'))
        .addColumn('settings_updated_at', 'bigint')
        .addColumn('settings_updated_by', 'text')
        .addColumn('created_at', 'bigint', notNull)
        .execute();

      await withId(db.schema.createTable('users'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('username', 'text', notNull)
        .addColumn('display_name', 'text', notNull)
        .addColumn('email', 'text')
        .addColumn('role', 'text', notNull)
        .addColumn('active', 'integer', notNull)
        .addColumn('password_hash', 'text')
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text')
        .addColumn('last_login_at', 'bigint')
        .addUniqueConstraint('users_org_username', ['org_id', 'username'])
        .execute();

      await db.schema
        .createTable('sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('last_seen_at', 'bigint', notNull)
        .addColumn('expires_at', 'bigint', notNull)
        .execute();
      await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();

      await db.schema
        .createTable('api_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('name', 'text', notNull)
        .addColumn('scopes', 'text', notNull)
        .addColumn('secret_hash', 'text', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text', notNull)
        .addColumn('expires_at', 'bigint')
        .addColumn('last_used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('api_tokens_org_name').on('api_tokens').columns(['org_id', 'name']).unique().execute();

      await withId(db.schema.createTable('login_failures'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('username', 'text', notNull)
        .addColumn('address', 'text', notNull)
        .addColumn('at', 'bigint', notNull)
        .execute();
      await db.schema.createIndex('login_failures_address').on('login_failures').columns(['address', 'at']).execute();

      await withId(db.schema.createTable('audit_entries'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('at', 'bigint', notNull)
        .addColumn('actor', 'text', notNull)
        .addColumn('action', 'text', notNull)
        .addColumn('subject_type', 'text', notNull)
        .addColumn('subject_id', 'text')
        .addColumn('lid', 'text')
        .addColumn('summary', 'text', notNull)
        .addColumn('details', 'text')
        .execute();
      await db.schema.createIndex('audit_entries_org').on('audit_entries').columns(['org_id', 'id']).execute();
      await db.schema.createIndex('audit_entries_lid').on('audit_entries').columns(['org_id', 'lid', 'id']).execute();
    },
  };
}
