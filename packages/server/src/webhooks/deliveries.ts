import type net from 'node:net';
import { transaction, type Database } from '../db/database.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { badRequest, notFound, tooManyRequests } from '../core/errors.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { iso } from '../core/schemas.js';
import { newEventId } from '../audit/events.js';
import { recordOutcomes } from './outbox.js';
import { attempt } from './send.js';
import { attemptsOf, deliveriesOf, findEvent, insertTestDelivery, requeueDelivery, requeueFailedSince } from './repos/deliveries.js';
import { findEndpoint, signingKeys } from './service.js';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
/** Test events an endpoint may be sent in a minute. */
export const TESTS_PER_MINUTE = 6;
const PAGE = 50;

/** An endpoint's deliveries, newest first, with their attempts; `cursor` is the last page's `nextCursor`. */
export async function listDeliveries(
  ctx: Ctx,
  endpointId: number,
  filter: { status?: (typeof DELIVERY_STATUSES)[number] | undefined; cursor?: string | undefined },
) {
  await findEndpoint(ctx.tenant, endpointId);
  if (filter.cursor !== undefined && !/^[1-9]\d{0,15}$/.test(filter.cursor)) throw badRequest('Query parameter "cursor": not a cursor this API gave');
  const rows = await deliveriesOf(ctx.tenant, endpointId, { status: filter.status, before: filter.cursor ? Number(filter.cursor) : undefined }, PAGE + 1);
  const page = rows.slice(0, PAGE);
  const attempts = page.length
    ? await attemptsOf(
        ctx.tenant,
        page.map((r) => r.id),
      )
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
    const event = await findEvent(t, eventId);
    const changed = event ? await requeueDelivery(t, endpointId, event.id, ctx.now) : 0;
    if (changed === 0) throw notFound(`no delivery of ${eventId} to webhook endpoint ${endpointId}`);
    return { queued: 1 };
  });
}

/** Queues again every failed delivery of an event raised since `since`. */
export async function recover(ctx: Ctx, endpointId: number, since: number) {
  return inTransaction(ctx, async (t) => {
    await findEndpoint(t, endpointId);
    return { queued: await requeueFailedSince(t, endpointId, since, ctx.now) };
  });
}

/**
 * `webhook.test`: `sequence` null, one attempt made now and answered, never retried. Its event
 * and delivery are written first (leased to this request, so no loop claims it), then the outcome.
 */
export async function sendTest(ctx: Ctx, database: Database, masterKey: Buffer, allowed: net.BlockList, rateLimits: RateLimiter, endpointId: number) {
  const decision = await rateLimits.hit(`webhook-test:${ctx.org.id}:${endpointId}`, TESTS_PER_MINUTE);
  if (!decision.allowed) throw tooManyRequests(`at most ${TESTS_PER_MINUTE} test events a minute per endpoint`, decision.retryAfterSeconds);
  const endpoint = await findEndpoint(ctx.tenant, endpointId);
  const eventId = newEventId();
  const body = JSON.stringify({ type: 'webhook.test', timestamp: iso(ctx.now), sequence: null, data: { webhook: { id: endpointId } } });
  const lease = `test-${eventId}`;
  const deliveryId = await transaction(database, (trx) =>
    insertTestDelivery(trx, ctx.org.id, endpointId, { eventId, data: JSON.stringify({ webhook: { id: endpointId } }), body, lease, now: ctx.now }),
  );
  const outcome = await attempt(endpoint.url, allowed, { id: eventId, body, secrets: signingKeys(masterKey, endpoint, ctx.now) }, ctx.now);
  const [status] = await transaction(database, (trx) =>
    recordOutcomes(trx, [{ delivery: { id: deliveryId, orgId: ctx.org.id, endpointId, lease, attempts: 0 }, type: 'webhook.test', outcome }]),
  );
  return {
    eventId,
    status,
    attempt: { at: iso(outcome.at), httpStatus: outcome.httpStatus, durationMs: outcome.durationMs, response: outcome.response, error: outcome.error },
  };
}
