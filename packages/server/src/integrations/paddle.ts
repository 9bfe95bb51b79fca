/*
 * What a Paddle Billing event asks of a connection (DESIGN.md 22), read from its JSON alone. The
 * envelope is `{event_id, event_type, occurred_at, data}`. A transaction carries no email: its
 * customer's comes from the latest customer.created/.updated the connection kept (hook.ts).
 */

import { idOf, object, path, quantityOf, text, type EventFormat, type Json, type Order, type Reading } from './reading.js';

const RFC_3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** An RFC 3339 time (ms), or null. */
function timeOf(value: unknown): number | null {
  if (typeof value !== 'string' || !RFC_3339.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

const notApplied = (type: string): Reading => ({ kind: 'IGNORED', error: `${type} is not an event this connection applies` });

function readPaddle(event: Json): Reading {
  const data = object(event.data);
  const type = String(event.event_type);
  if (!data) return { kind: 'IGNORED', error: 'the event carries no data' };
  if (type === 'transaction.completed') return readTransaction(data);
  if (type === 'customer.created' || type === 'customer.updated') {
    const customer = idOf(data.id);
    if (customer === null) return { kind: 'IGNORED', error: 'the customer has no id' };
    // An event without a time is older than any dated one: it never replaces what a dated one kept.
    return { kind: 'customer', customer, email: text(data.email), name: text(data.name), occurredAt: timeOf(event.occurred_at) ?? 0 };
  }
  if (type === 'adjustment.created' || type === 'adjustment.updated') return readAdjustment(data);
  if (type.startsWith('subscription.')) return readSubscription(type, data);
  return notApplied(type);
}

function readTransaction(transaction: Json): Reading {
  const id = idOf(transaction.id);
  if (id === null) return { kind: 'IGNORED', error: 'the transaction has no id' };
  const subscription = idOf(transaction.subscription_id);
  const periodEnd = subscription === null ? null : timeOf(path(transaction, 'billing_period', 'ends_at'));
  const order: Order = {
    customer: idOf(transaction.customer_id),
    email: null,
    name: null,
    order: id,
    // Paddle's refunds and chargebacks name the transaction they adjust.
    payment: id,
    lines: [],
    renews: true,
  };
  const items = Array.isArray(transaction.items) ? transaction.items : [];
  items.forEach((value, index) => {
    const item = object(value);
    const match = idOf(path(item, 'price', 'id'));
    if (!item || match === null) return;
    // A one-time price billed beside a subscription's is paid once, not for the period.
    const recurring = path(item, 'price', 'billing_cycle') !== null;
    order.lines.push({
      // A completed transaction's items never change, so its position names an item across events.
      ref: `${id}:${index}:${match}`,
      match,
      quantity: quantityOf(item.quantity),
      periodEnd: recurring ? periodEnd : null,
      subscription: recurring ? subscription : null,
    });
  });
  return { kind: 'order', order };
}

/** Refunds and chargebacks (`action`); credits and chargeback warnings take nothing back. */
function readAdjustment(adjustment: Json): Reading {
  const payment = idOf(adjustment.transaction_id);
  if (payment === null) return { kind: 'IGNORED', error: 'payment not linked' };
  const chargeback = `chargeback:${payment}`;
  if (adjustment.action === 'refund') {
    // Adjustments before Paddle added `type` say it per item.
    const items = Array.isArray(adjustment.items) ? adjustment.items.map(object) : [];
    const full = adjustment.type === undefined ? items.length > 0 && items.every((i) => i?.type === 'full') : adjustment.type === 'full';
    if (!full || adjustment.status !== 'approved') return { kind: 'IGNORED', error: 'not an approved full refund' };
    return { kind: 'revoke', target: { payment }, reason: 'refunded', cause: null };
  }
  if (adjustment.action === 'chargeback') return { kind: 'revoke', target: { payment }, reason: 'disputed', cause: chargeback };
  if (adjustment.action === 'chargeback_reverse') return { kind: 'reinstate', cause: chargeback };
  return { kind: 'IGNORED', error: `an adjustment's ${String(adjustment.action)} takes nothing back` };
}

/** Subscription events never move `expiresAt`: they revoke and reinstate; trials, dunning and scheduled changes change nothing (grace carries them). */
function readSubscription(type: string, subscription: Json): Reading {
  const id = idOf(subscription.id);
  if (id === null) return { kind: 'IGNORED', error: 'the subscription has no id' };
  const pause = `pause:${id}`;
  const status = subscription.status;
  if (type === 'subscription.canceled' || (type === 'subscription.updated' && status === 'canceled')) {
    return { kind: 'revoke', target: { subscription: id, endedAt: timeOf(subscription.canceled_at) }, reason: 'subscription canceled', cause: null };
  }
  if (type === 'subscription.paused' || (type === 'subscription.updated' && status === 'paused')) {
    return { kind: 'revoke', target: { subscription: id }, reason: 'subscription paused', cause: pause };
  }
  const resumes = type === 'subscription.resumed' || type === 'subscription.activated' || type === 'subscription.updated';
  if (resumes && status === 'active') return { kind: 'reinstate', cause: pause };
  if (resumes || type === 'subscription.trialing' || type === 'subscription.past_due') return { kind: 'UNCHANGED', error: null };
  return notApplied(type);
}

/** Paddle's envelope: `event_id`, `event_type` and `occurred_at` (RFC 3339). */
export const PADDLE: EventFormat = {
  idField: 'event_id',
  typeField: 'event_type',
  madeAt: (event) => timeOf(event.occurred_at),
  read: readPaddle,
  customersApart: true,
};
