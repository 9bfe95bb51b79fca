import type net from 'node:net';
import { transaction, type Database } from '../db/database.js';
import { type Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { badRequest, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { newEventId } from '../audit/events.js';
import { recordOutcomes } from './outbox.js';
import { attempt } from './send.js';
import { findEndpoint, signingKeys } from './service.js';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
const PAGE = 50;

/** An endpoint's deliveries, newest first, with their attempts; `cursor` is the last page's `nextCursor`. */
export async function listDeliveries(ctx: Ctx, endpointId: number, filter: { status?: (typeof DELIVERY_STATUSES)[number] | undefined; cursor?: string | undefined }) {
  await findEndpoint(ctx.tenant, endpointId);
  if (filter.cursor !== undefined && !/^[1-9]\d{0,15}$/.test(filter.cursor)) throw badRequest('cursor is not one this API gave');
  let query = ctx.tenant
    .selectFrom('webhook_deliveries')
    .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
    .select(['webhook_deliveries.id', 'webhook_events.event_id', 'webhook_events.type', 'webhook_events.sequence', 'webhook_events.created_at', 'webhook_deliveries.status', 'webhook_deliveries.next_at'])
    .where('webhook_deliveries.endpoint_id', '=', endpointId);
  if (filter.status) query = query.where('webhook_deliveries.status', '=', filter.status);
  if (filter.cursor) query = query.where('webhook_deliveries.id', '<', Number(filter.cursor));
  const rows = await query.orderBy('webhook_deliveries.id', 'desc').limit(PAGE + 1).execute();
  const page = rows.slice(0, PAGE);
  const attempts = page.length
    ? await ctx.tenant.selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', page.map((r) => r.id)).orderBy('id').execute()
    : [];
  return {
    items: page.map((row) => ({
      eventId: row.event_id,
      type: row.type,
      sequence: row.sequence,
      createdAt: iso(row.created_at),
      status: row.status,
      nextAttemptAt: row.status === 'pending' ? iso(row.next_at) : null,
      attempts: attempts
        .filter((a) => a.delivery_id === row.id)
        .map((a) => ({ at: iso(a.at), httpStatus: a.http_status, durationMs: a.duration_ms, response: a.response, error: a.error })),
    })),
    nextCursor: rows.length > PAGE ? String(page[page.length - 1]!.id) : null,
  };
}

/** Queues one event again for the endpoint, with a fresh schedule. */
export async function redeliver(ctx: Ctx, endpointId: number, eventId: string) {
  return inTransaction(ctx, async (t) => {
    await findEndpoint(t, endpointId);
    const event = await t.selectFrom('webhook_events').select('id').where('event_id', '=', eventId).executeTakeFirst();
    const changed = event
      ? await t
          .updateTable('webhook_deliveries')
          .set({ status: 'pending', attempts: 0, next_at: ctx.now, lease: null, updated_at: ctx.now })
          .where('endpoint_id', '=', endpointId)
          .where('event_id', '=', event.id)
          .executeTakeFirst()
      : undefined;
    if (!changed || Number(changed.numUpdatedRows) === 0) throw notFound(`no delivery of ${eventId} to webhook endpoint ${endpointId}`);
    return { queued: 1 };
  });
}

/** Queues again every failed delivery of an event raised since `since`. */
export async function recover(ctx: Ctx, endpointId: number, since: number) {
  return inTransaction(ctx, async (t) => {
    await findEndpoint(t, endpointId);
    const result = await t
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', attempts: 0, next_at: ctx.now, lease: null, updated_at: ctx.now })
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'failed')
      .where('event_id', 'in', (eb) => eb.selectFrom('webhook_events').select('id').where('org_id', '=', t.orgId).where('created_at', '>=', since))
      .executeTakeFirst();
    return { queued: Number(result.numUpdatedRows) };
  });
}

/**
 * `webhook.test`: `sequence` null, one attempt made now and answered, never retried. Its event
 * and delivery are written first (leased to this request, so no loop claims it), then the outcome.
 */
export async function sendTest(ctx: Ctx, database: Database, masterKey: Buffer, allowed: net.BlockList, endpointId: number) {
  const endpoint = await findEndpoint(ctx.tenant, endpointId);
  const eventId = newEventId();
  const body = JSON.stringify({ type: 'webhook.test', timestamp: iso(ctx.now), sequence: null, data: { webhook: { id: endpointId } } });
  const lease = `test-${eventId}`;
  const deliveryId = await transaction(database, async (trx) => {
    const { id } = await trx
      .insertInto('webhook_events')
      .values({ org_id: ctx.org.id, event_id: eventId, type: 'webhook.test', data: JSON.stringify({ webhook: { id: endpointId } }), created_at: ctx.now, sequence: null, body })
      .returning('id')
      .executeTakeFirstOrThrow();
    const delivery = await trx
      .insertInto('webhook_deliveries')
      .values({ org_id: ctx.org.id, endpoint_id: endpointId, event_id: id, status: 'pending', attempts: 0, next_at: null, lease, created_at: ctx.now, updated_at: ctx.now })
      .returning('id')
      .executeTakeFirstOrThrow();
    return delivery.id;
  });
  const outcome = await attempt(endpoint.url, allowed, { id: eventId, body, secrets: signingKeys(masterKey, endpoint, ctx.now) }, ctx.now);
  const [status] = await transaction(database, (trx) => recordOutcomes(trx, [{ delivery: { id: deliveryId, orgId: ctx.org.id, endpointId, lease, attempts: 0 }, type: 'webhook.test', outcome }]));
  return { eventId, status, attempt: { at: iso(outcome.at), httpStatus: outcome.httpStatus, durationMs: outcome.durationMs, response: outcome.response, error: outcome.error } };
}
