import type { Insertable, Selectable, Updateable } from 'kysely';
import { dialectOf, lockRow, type Db } from '../db/database.js';
import type { IntegrationEventsTable, IntegrationLinesTable, IntegrationLinksTable, IntegrationRevocationsTable, IntegrationsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';

export type IntegrationRow = Selectable<IntegrationsTable>;
export type EventRow = Selectable<IntegrationEventsTable>;
export type LinkRow = Selectable<IntegrationLinksTable>;

export const findIntegrationRow = (t: Tenant, id: number) => t.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirst();

export const findIntegrationNamed = (t: Tenant, name: string) => t.selectFrom('integrations').select('id').where('name', '=', name).executeTakeFirst();

export const integrationRows = (t: Tenant) => t.selectFrom('integrations').selectAll().orderBy('id').execute();

export const insertIntegration = (t: Tenant, values: Omit<Insertable<IntegrationsTable>, 'org_id'>) =>
  t.insertInto('integrations', values).returning('id').executeTakeFirstOrThrow();

export async function updateIntegrationRow(t: Tenant, id: number, set: Updateable<IntegrationsTable>): Promise<void> {
  await t.updateTable('integrations').set(set).where('id', '=', id).execute();
}

/** The connection with its ledger, links, applied lines and Paddle customers; never a licence. */
export async function deleteIntegrationRows(t: Tenant, id: number): Promise<void> {
  for (const table of [
    'integration_events',
    'integration_links',
    'integration_lines',
    'integration_payments',
    'integration_revocations',
    'paddle_customers',
  ] as const) {
    await t.deleteFrom(table).where('integration_id', '=', id).execute();
  }
  await t.deleteFrom('integrations').where('id', '=', id).execute();
}

/** Locks the connection row (DESIGN.md 22: every event of a connection is applied under it). */
export async function lockIntegration(t: Tenant, id: number): Promise<void> {
  await lockRow({ dialect: dialectOf(t.db) }, t.db, 'integrations', id);
}

/** The number of the connection's ledger entries in each outcome given. */
export async function countOutcomes(t: Tenant, id: number): Promise<{ failed: number; waiting: number }> {
  const rows = await t
    .selectFrom('integration_events')
    .select(['outcome', (eb) => eb.fn.countAll<number>().as('count')])
    .where('integration_id', '=', id)
    .where('outcome', 'in', ['FAILED', 'WAITING'])
    .groupBy('outcome')
    .execute();
  const of = (outcome: string) => Number(rows.find((r) => r.outcome === outcome)?.count ?? 0);
  return { failed: of('FAILED'), waiting: of('WAITING') };
}

/**
 * Stamps a refused signature on the connection, at most once a minute (DESIGN.md 22), in one
 * statement so that a burst of forged deliveries writes once.
 */
export async function stampFailure(t: Tenant, id: number, failure: string, now: number): Promise<void> {
  await t
    .updateTable('integrations')
    .set({ last_failure_at: now, last_failure: failure })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_failure_at', 'is', null), eb('last_failure_at', '<=', now - 60_000)]))
    .execute();
}

export const findEventRow = (t: Tenant, integrationId: number, eventId: string) =>
  t.selectFrom('integration_events').selectAll().where('integration_id', '=', integrationId).where('event_id', '=', eventId).executeTakeFirst();

export async function insertEventRow(t: Tenant, values: Omit<Insertable<IntegrationEventsTable>, 'org_id'>): Promise<void> {
  await t.insertInto('integration_events', values).execute();
}

export async function updateEventRow(t: Tenant, id: number, set: Updateable<IntegrationEventsTable>): Promise<void> {
  await t.updateTable('integration_events').set(set).where('id', '=', id).execute();
}

/** A provider's delivery of an event already in the ledger: counted, nothing else. */
export async function countDelivery(t: Tenant, id: number, now: number): Promise<void> {
  await t
    .updateTable('integration_events')
    .set((eb) => ({ deliveries: eb('deliveries', '+', 1), last_delivery_at: now }))
    .where('id', '=', id)
    .execute();
}

/** An order line as applied, with the lid of the licence it issued or renewed. */
export const findLine = (t: Tenant, integrationId: number, lineRef: string) =>
  t
    .selectFrom('integration_lines')
    .innerJoin('licences', 'licences.id', 'integration_lines.licence_id')
    .select(['integration_lines.outcome', 'integration_lines.event_id', 'licences.lid'])
    .where('integration_lines.integration_id', '=', integrationId)
    .where('integration_lines.line_ref', '=', lineRef)
    .executeTakeFirst();

export async function insertLine(t: Tenant, values: Omit<Insertable<IntegrationLinesTable>, 'org_id'>) {
  await t.insertInto('integration_lines', values).execute();
}

/** The licence a subscription's price holds through this connection, with its last period end. */
export const findSubscriptionLink = (t: Tenant, integrationId: number, subscription: string, price: string) =>
  t
    .selectFrom('integration_links')
    .innerJoin('licences', 'licences.id', 'integration_links.licence_id')
    .select(['integration_links.id', 'integration_links.period_end', 'licences.lid'])
    .where('integration_links.integration_id', '=', integrationId)
    .where('integration_links.subscription_ref', '=', subscription)
    .where('integration_links.price_ref', '=', price)
    .orderBy('integration_links.id', 'desc')
    .executeTakeFirst();

export async function insertLink(t: Tenant, values: Omit<Insertable<IntegrationLinksTable>, 'org_id'>): Promise<void> {
  await t.insertInto('integration_links', values).execute();
}

export async function updateLink(t: Tenant, id: number, set: Updateable<IntegrationLinksTable>): Promise<void> {
  await t.updateTable('integration_links').set(set).where('id', '=', id).execute();
}

/** The connection's ledger, newest first, one page (DESIGN.md 22). */
export async function eventPage(t: Tenant, integrationId: number, filter: { outcome?: string | undefined; limit: number; offset: number }) {
  let query = t.selectFrom('integration_events').where('integration_id', '=', integrationId);
  if (filter.outcome !== undefined) query = query.where('outcome', '=', filter.outcome);
  const { total } = await query.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  const rows = await query.selectAll().orderBy('id', 'desc').limit(filter.limit).offset(filter.offset).execute();
  return { rows, total: Number(total) };
}

/** Records which invoice a payment paid (unique: a repeat records nothing). */
export async function insertPayment(t: Tenant, integrationId: number, payment: string, order: string): Promise<void> {
  await t
    .insertInto('integration_payments', { integration_id: integrationId, payment_ref: payment, order_ref: order })
    .onConflict((oc) => oc.columns(['integration_id', 'payment_ref', 'order_ref']).doNothing())
    .execute();
}

/**
 * The licences a payment's order lines issued or renewed, in line order: the lines it paid
 * directly (a Checkout session, an invoice before 2025-03-31), or the lines of the invoices
 * invoice_payment.paid tied it to.
 */
export async function paidLicences(t: Tenant, integrationId: number, payment: string) {
  const orders = t.selectFrom('integration_payments').select('order_ref').where('integration_id', '=', integrationId).where('payment_ref', '=', payment);
  const rows = await t
    .selectFrom('integration_lines')
    .innerJoin('licences', 'licences.id', 'integration_lines.licence_id')
    .select(['licences.id', 'licences.lid'])
    .where('integration_lines.integration_id', '=', integrationId)
    .where((eb) => eb.or([eb('integration_lines.payment_ref', '=', payment), eb('integration_lines.order_ref', 'in', orders)]))
    .orderBy('integration_lines.id')
    .execute();
  return [...new Map(rows.map((r) => [r.id, r])).values()];
}

/** The licences a subscription holds through this connection, with the last period end applied. */
export const subscriptionLicences = (t: Tenant, integrationId: number, subscription: string) =>
  t
    .selectFrom('integration_links')
    .innerJoin('licences', 'licences.id', 'integration_links.licence_id')
    .select(['licences.id', 'licences.lid', 'integration_links.period_end', 'integration_links.price_ref'])
    .where('integration_links.integration_id', '=', integrationId)
    .where('integration_links.subscription_ref', '=', subscription)
    .orderBy('integration_links.id')
    .execute();

export async function insertRevocation(t: Tenant, values: Omit<Insertable<IntegrationRevocationsTable>, 'org_id'>): Promise<void> {
  await t.insertInto('integration_revocations', values).execute();
}

/** Whether this event revoked the licence (its repeats answer what it did). */
export const revokedByEvent = async (t: Tenant, integrationId: number, eventId: string, licenceId: number) =>
  (await t
    .selectFrom('integration_revocations')
    .select('id')
    .where('integration_id', '=', integrationId)
    .where('event_id', '=', eventId)
    .where('licence_id', '=', licenceId)
    .executeTakeFirst()) !== undefined;

/** What a cause (a dispute, a pause) revoked, with the revocation time it wrote and the event that reinstated it. */
export const revocationsBy = (t: Tenant, integrationId: number, cause: string) =>
  t
    .selectFrom('integration_revocations')
    .innerJoin('licences', 'licences.id', 'integration_revocations.licence_id')
    .select(['integration_revocations.id', 'integration_revocations.revoked_at', 'integration_revocations.reinstated_by', 'licences.lid'])
    .where('integration_revocations.integration_id', '=', integrationId)
    .where('integration_revocations.cause', '=', cause)
    .orderBy('integration_revocations.id')
    .execute();

export async function markReinstated(t: Tenant, id: number, eventId: string): Promise<void> {
  await t.updateTable('integration_revocations').set({ reinstated_by: eventId }).where('id', '=', id).execute();
}

/** The email and name a Paddle connection last saw for a customer id; undefined when none came yet. */
export const findPaddleCustomer = (t: Tenant, integrationId: number, customer: string) =>
  t
    .selectFrom('paddle_customers')
    .select(['email', 'name'])
    .where('integration_id', '=', integrationId)
    .where('customer_ref', '=', customer)
    .executeTakeFirst();

/** Keeps a Paddle customer's email and name, only the latest by `occurred_at` (a late or replayed older event changes nothing). */
export async function savePaddleCustomer(
  t: Tenant,
  integrationId: number,
  seen: { customer: string; email: string | null; name: string | null; occurredAt: number },
): Promise<void> {
  await t
    .insertInto('paddle_customers', {
      integration_id: integrationId,
      customer_ref: seen.customer,
      email: seen.email,
      name: seen.name,
      occurred_at: seen.occurredAt,
    })
    .onConflict((oc) =>
      oc
        .columns(['integration_id', 'customer_ref'])
        .doUpdateSet({ email: seen.email, name: seen.name, occurred_at: seen.occurredAt })
        .where('paddle_customers.occurred_at', '<', seen.occurredAt),
    )
    .execute();
}

/** The connection's WAITING entries, oldest first, with the order each keeps for its retry. */
export const waitingEvents = (t: Tenant, integrationId: number) =>
  t
    .selectFrom('integration_events')
    .select(['event_id', 'type', 'retry_order'])
    .where('integration_id', '=', integrationId)
    .where('outcome', '=', 'WAITING')
    .orderBy('id')
    .execute();

/** Every organisation's WAITING entries received before `before`. */
export const waitingBefore = (db: Db, before: number) =>
  db
    .selectFrom('integration_events')
    .select(['org_id', 'integration_id', 'event_id'])
    .where('outcome', '=', 'WAITING')
    .where('received_at', '<', before)
    .orderBy('id')
    .execute();

/** Every organisation's ledger entries received before `before`. */
export async function deleteEventsBefore(db: Db, before: number): Promise<void> {
  await db.deleteFrom('integration_events').where('received_at', '<', before).execute();
}
