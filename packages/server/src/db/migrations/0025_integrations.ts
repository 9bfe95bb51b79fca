import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { notNull, withId } from './ddl.js';

/**
 * DESIGN.md 22 (payment connections): the connections (the provider's signing secret sealed), the
 * ledger of events each received (one row per event id), the links of licences to the provider's
 * customer, subscription, price, order and payment ids, the order lines applied (each once,
 * whichever events name it), and the Paddle customers a connection has seen.
 */
export function integrations(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('integrations'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('name', 'text', notNull)
        .addColumn('provider', 'text', notNull)
        .addColumn('secret', 'text', notNull)
        .addColumn('enabled', 'integer', notNull)
        .addColumn('send_on_issue', 'integer', notNull)
        .addColumn('send_on_renew', 'integer', notNull)
        .addColumn('mappings', 'text', notNull)
        .addColumn('created_at', 'bigint', notNull)
        .addColumn('created_by', 'text', notNull)
        .addColumn('updated_at', 'bigint', notNull)
        .addColumn('last_event_at', 'bigint')
        .addColumn('last_failure_at', 'bigint')
        .addColumn('last_failure', 'text')
        .addColumn('failed_hour', 'bigint')
        .addUniqueConstraint('integrations_org_name', ['org_id', 'name'])
        .execute();

      await withId(db.schema.createTable('integration_events'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('integration_id', 'bigint', (c) => c.notNull().references('integrations.id'))
        .addColumn('event_id', 'text', notNull)
        .addColumn('type', 'text', notNull)
        .addColumn('outcome', 'text', notNull)
        .addColumn('error', 'text')
        .addColumn('lids', 'text', notNull)
        .addColumn('deliveries', 'integer', notNull)
        .addColumn('last_delivery_at', 'bigint')
        .addColumn('received_at', 'bigint', notNull)
        .addColumn('retry_order', 'text')
        .addUniqueConstraint('integration_events_event', ['integration_id', 'event_id'])
        .execute();
      await db.schema.createIndex('integration_events_received').on('integration_events').column('received_at').execute();
      await db.schema.createIndex('integration_events_listed').on('integration_events').columns(['integration_id', 'id']).execute();

      await withId(db.schema.createTable('integration_links'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('integration_id', 'bigint', (c) => c.notNull().references('integrations.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('customer_ref', 'text')
        .addColumn('subscription_ref', 'text')
        .addColumn('price_ref', 'text', notNull)
        .addColumn('order_ref', 'text')
        .addColumn('payment_ref', 'text')
        .addColumn('period_end', 'bigint')
        .addColumn('created_at', 'bigint', notNull)
        .execute();
      await db.schema
        .createIndex('integration_links_subscription')
        .on('integration_links')
        .columns(['integration_id', 'subscription_ref', 'price_ref'])
        .execute();
      await db.schema.createIndex('integration_links_licence').on('integration_links').column('licence_id').execute();

      await withId(db.schema.createTable('integration_lines'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('integration_id', 'bigint', (c) => c.notNull().references('integrations.id'))
        .addColumn('line_ref', 'text', notNull)
        .addColumn('event_id', 'text', notNull)
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('outcome', 'text', notNull)
        .addColumn('order_ref', 'text')
        .addColumn('payment_ref', 'text')
        .addColumn('applied_at', 'bigint', notNull)
        .addUniqueConstraint('integration_lines_line', ['integration_id', 'line_ref'])
        .execute();
      await db.schema.createIndex('integration_lines_order').on('integration_lines').columns(['integration_id', 'order_ref']).execute();
      await db.schema.createIndex('integration_lines_payment').on('integration_lines').columns(['integration_id', 'payment_ref']).execute();

      // Stripe's invoice_payment.paid: which invoice a payment paid, before or after its invoice.paid.
      await withId(db.schema.createTable('integration_payments'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('integration_id', 'bigint', (c) => c.notNull().references('integrations.id'))
        .addColumn('payment_ref', 'text', notNull)
        .addColumn('order_ref', 'text', notNull)
        .addUniqueConstraint('integration_payments_payment', ['integration_id', 'payment_ref', 'order_ref'])
        .execute();

      // What each event revoked, and when; a dispute's or a pause's (`cause`) is reinstated by its end while no operator touched it since.
      await withId(db.schema.createTable('integration_revocations'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('integration_id', 'bigint', (c) => c.notNull().references('integrations.id'))
        .addColumn('licence_id', 'bigint', (c) => c.notNull().references('licences.id'))
        .addColumn('event_id', 'text', notNull)
        .addColumn('cause', 'text')
        .addColumn('revoked_at', 'bigint', notNull)
        .addColumn('reinstated_by', 'text')
        .execute();
      await db.schema.createIndex('integration_revocations_event').on('integration_revocations').columns(['integration_id', 'event_id']).execute();
      await db.schema.createIndex('integration_revocations_cause').on('integration_revocations').columns(['integration_id', 'cause']).execute();

      await withId(db.schema.createTable('paddle_customers'), dialect)
        .addColumn('org_id', 'bigint', (c) => c.notNull().references('organisations.id'))
        .addColumn('integration_id', 'bigint', (c) => c.notNull().references('integrations.id'))
        .addColumn('customer_ref', 'text', notNull)
        .addColumn('email', 'text')
        .addColumn('name', 'text')
        .addColumn('occurred_at', 'bigint', notNull)
        .addUniqueConstraint('paddle_customers_customer', ['integration_id', 'customer_ref'])
        .execute();
    },
  };
}
