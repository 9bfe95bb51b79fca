import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 9: passkeys of members (`passkeys`) and of platform accounts (`platform_passkeys`),
 * deleted with their owner, and the single-use challenges of both, kept server-side so any
 * instance finishes what another started.
 */
export function passkeys(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      // A member's passkeys belong to the organisation (tenant-scoped); a platform account's to no organisation.
      for (const [table, owner] of [
        ['passkeys', 'user_id'],
        ['platform_passkeys', 'account_id'],
      ] as const) {
        let create = withId(db.schema.createTable(table), dialect);
        if (table === 'passkeys') create = create.addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'));
        await create
          .addColumn(owner, 'bigint', (c) =>
            c
              .notNull()
              .references(owner === 'user_id' ? 'users.id' : 'platform_accounts.id')
              .onDelete('cascade'),
          )
          .addColumn('credential_id', 'text', (c) => c.notNull().unique())
          .addColumn('public_key', 'text', notNull)
          .addColumn('counter', 'bigint', notNull)
          .addColumn('transports', 'text', notNull)
          .addColumn('name', 'text', notNull)
          .addColumn('created_at', 'bigint', notNull)
          .addColumn('last_used_at', 'bigint')
          .execute();
        await db.schema.createIndex(`${table}_owner`).on(table).column(owner).execute();
      }

      await db.schema
        .createTable('webauthn_challenges')
        .addColumn('challenge', 'text', (c) => c.primaryKey())
        .addColumn('realm', 'text', notNull)
        .addColumn('purpose', 'text', notNull)
        .addColumn('subject', 'bigint')
        .addColumn('expires_at', 'bigint', notNull)
        .execute();
    },
  };
}
