import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 22 (mail): the outbox of licence emails (one row per email, its attempts counted on
 * it, a lease so no two instances attempt it at once), each organisation's template (null fields:
 * the defaults), and the control plane's `mailEnabled` on the organisation.
 */
export function mail(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('emails'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('to_address', 'text')
        .addColumn('trigger', 'text', notNull)
        .addColumn('status', 'text', notNull)
        .addColumn('attempts', 'integer', notNull)
        .addColumn('last_error', 'text')
        .addColumn('next_attempt_at', 'bigint')
        .addColumn('lease', 'text')
        .addColumn('lease_until', 'bigint')
        .addColumn('admitted_at', 'bigint')
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text', notNull)
        .addColumn('sent_at', 'bigint')
        .addColumn('term_issued_at', 'bigint')
        .addColumn('portal_link_id', 'bigint')
        .execute();
      await db.schema.createIndex('emails_licence').on('emails').columns(['org_id', 'licence_id', 'id']).execute();
      await db.schema.createIndex('emails_admitted').on('emails').columns(['org_id', 'admitted_at']).execute();
      await db.schema.createIndex('emails_created').on('emails').column('created_at').execute();
      await db.schema.createIndex('emails_pending').on('emails').columns(['next_attempt_at']).where(sql.ref('status'), '=', sql.lit('pending')).execute();

      await withId(db.schema.createTable('mail_settings'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().unique().references('organisations.id'))
        .addColumn('sender_name', 'text')
        .addColumn('reply_to', 'text')
        .addColumn('subject', 'text')
        .addColumn('text_body', 'text')
        .addColumn('html_body', 'text')
        .addColumn('updated_at', 'bigint', notNull)
        .addColumn('updated_by', 'text', notNull)
        .execute();

      await db.schema
        .alterTable('organisations')
        .addColumn('mail_enabled', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
    },
  };
}
