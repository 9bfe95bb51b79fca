import type { Selectable } from 'kysely';
import type { Trx } from '../../db/database.js';
import type { WebhookDeliveriesTable } from '../../db/schema.js';
import type { Tenant } from '../../db/tenant.js';

/** A page of an endpoint's deliveries, newest first, before the delivery `before` when given; one more row than asked says whether more follow. */
export function deliveriesOf(
  t: Tenant,
  endpointId: number,
  filter: { status?: Selectable<WebhookDeliveriesTable>['status'] | undefined; before?: number | undefined },
  limit: number,
) {
  let query = t
    .selectFrom('webhook_deliveries')
    .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
    .select([
      'webhook_deliveries.id',
      'webhook_events.event_id',
      'webhook_events.type',
      'webhook_events.sequence',
      'webhook_events.created_at',
      'webhook_deliveries.status',
      'webhook_deliveries.next_at',
    ])
    .where('webhook_deliveries.endpoint_id', '=', endpointId);
  if (filter.status) query = query.where('webhook_deliveries.status', '=', filter.status);
  if (filter.before) query = query.where('webhook_deliveries.id', '<', filter.before);
  return query.orderBy('webhook_deliveries.id', 'desc').limit(limit).execute();
}

/** The attempts of these deliveries, oldest first. */
export const attemptsOf = (t: Tenant, deliveryIds: number[]) =>
  t.selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('id').execute();

export const findEvent = (t: Tenant, eventId: string) => t.selectFrom('webhook_events').select('id').where('event_id', '=', eventId).executeTakeFirst();

/** Queues one event's delivery to the endpoint again, with a fresh schedule: how many rows it changed. */
export async function requeueDelivery(t: Tenant, endpointId: number, eventRowId: number, now: number): Promise<number> {
  const changed = await t
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', attempts: 0, next_at: now, lease: null, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('event_id', '=', eventRowId)
    .executeTakeFirst();
  return Number(changed.numUpdatedRows);
}

/** Queues again every failed delivery to the endpoint of an event raised since `since`: how many. */
export async function requeueFailedSince(t: Tenant, endpointId: number, since: number, now: number): Promise<number> {
  const result = await t
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', attempts: 0, next_at: now, lease: null, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'failed')
    .where('event_id', 'in', (eb) => eb.selectFrom('webhook_events').select('id').where('org_id', '=', t.orgId).where('created_at', '>=', since))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** A test event and its one delivery, leased to the request that sends it (no loop claims it): the delivery's id. */
export async function insertTestDelivery(
  trx: Trx,
  orgId: number,
  endpointId: number,
  event: { eventId: string; data: string; body: string; lease: string; now: number },
): Promise<number> {
  const { id } = await trx
    .insertInto('webhook_events')
    .values({ org_id: orgId, event_id: event.eventId, type: 'webhook.test', data: event.data, created_at: event.now, sequence: null, body: event.body })
    .returning('id')
    .executeTakeFirstOrThrow();
  const delivery = await trx
    .insertInto('webhook_deliveries')
    .values({
      org_id: orgId,
      endpoint_id: endpointId,
      event_id: id,
      status: 'pending',
      attempts: 0,
      next_at: null,
      lease: event.lease,
      created_at: event.now,
      updated_at: event.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return delivery.id;
}
