import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 21: one OIDC configuration per organisation (the client secret sealed), the pending
 * sign-ins' state (single use, ten minutes, never in a backup), members' link to the IdP's `sub`,
 * and how each session was opened, so enforcement and the SSO session's hard end are judged when
 * it is read.
 */
export function singleSignOn(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('sso_configs'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().unique().references('organisations.id'))
        .addColumn('enabled', 'integer', notNull)
        .addColumn('display_name', 'text', notNull)
        .addColumn('issuer', 'text', notNull)
        .addColumn('client_id', 'text', notNull)
        .addColumn('client_secret', 'text', notNull)
        .addColumn('client_secret_updated_at', 'bigint', notNull)
        .addColumn('scopes', 'text', notNull)
        .addColumn('allowed_domains', 'text', notNull)
        .addColumn('role_claim', 'text')
        .addColumn('role_rules', 'text', notNull)
        .addColumn('default_role', 'text')
        .addColumn('jit_provisioning', 'integer', notNull)
        .addColumn('enforce', 'integer', notNull)
        .addColumn('break_glass', 'text', notNull)
        .addColumn('verified_at', 'bigint')
        .addColumn('last_attempt', 'text')
        .addColumn('version', 'integer', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('updated_at', 'bigint', notNull)
        .addColumn('updated_by', 'text', notNull)
        .execute();

      await withId(db.schema.createTable('sso_states'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('state_hash', 'text', (c) => c.notNull().unique())
        .addColumn('nonce', 'text', notNull)
        .addColumn('code_verifier', 'text', notNull)
        .addColumn('return_to', 'text', notNull)
        .addColumn('binding', 'text', notNull)
        .addColumn('link_user_id', 'bigint')
        .addColumn('expires_at', 'bigint', notNull)
        .execute();
      await db.schema.createIndex('sso_states_expires').on('sso_states').column('expires_at').execute();

      await db.schema.alterTable('users').addColumn('sso_sub', 'text').execute();
      await db.schema.alterTable('users').addColumn('sso_linked_at', 'bigint').execute();
      await db.schema.alterTable('users').addColumn('sso_signed_in_at', 'bigint').execute();
      await db.schema.createIndex('users_sso_sub').on('users').columns(['org_id', 'sso_sub']).unique().execute();

      await db.schema
        .alterTable('sessions')
        .addColumn('method', 'text', (c) => c.notNull().defaultTo('password'))
        .execute();
      await db.schema.alterTable('sessions').addColumn('sso_at', 'bigint').execute();
      await db.schema.alterTable('sessions').addColumn('hard_end', 'bigint').execute();
    },
  };
}
