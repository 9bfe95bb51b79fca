/*
 * What a Stripe event asks of a connection (DESIGN.md 22), read from its JSON alone: the paid
 * order and its lines, or why there is nothing to apply. Both API shapes are read: since
 * 2025-03-31 a line's price is `pricing.price_details.price` and an invoice's subscription
 * `parent.subscription_details.subscription`; before, `price.id` and `subscription`.
 */

import { idOf, object, path, quantityOf, text, type EventFormat, type Json, type Order, type Reading } from './reading.js';

/** The event's `created` (ms), or null when it carries none. */
function stripeCreated(event: Json): number | null {
  return typeof event.created === 'number' && Number.isFinite(event.created) ? event.created * 1000 : null;
}

function readStripe(event: Json): Reading {
  const data = object(path(event, 'data', 'object'));
  const type = String(event.type);
  if (!data) return { kind: 'IGNORED', error: 'the event carries no object' };
  if (type === 'invoice.paid') return readInvoice(data);
  if (type === 'checkout.session.completed') return readSession(data);
  if (type === 'invoice_payment.paid') return readPayment(data);
  if (type === 'charge.refunded') {
    const payment = idOf(data.payment_intent) ?? idOf(data.id);
    // A partial refund leaves the sale standing.
    if (data.refunded !== true || payment === null) return { kind: 'IGNORED', error: 'not a full refund' };
    return { kind: 'revoke', target: { payment }, reason: 'refunded', cause: null };
  }
  if (type === 'charge.dispute.created' || type === 'charge.dispute.closed') {
    const payment = idOf(data.payment_intent) ?? idOf(data.charge);
    const dispute = idOf(data.id);
    if (payment === null || dispute === null) return { kind: 'IGNORED', error: 'payment not linked' };
    if (type === 'charge.dispute.created') return { kind: 'revoke', target: { payment }, reason: 'disputed', cause: `dispute:${dispute}` };
    return data.status === 'won' ? { kind: 'reinstate', cause: `dispute:${dispute}` } : { kind: 'UNCHANGED', error: null };
  }
  if (type.startsWith('customer.subscription.')) return readSubscription(type, data);
  return { kind: 'IGNORED', error: `${type} is not an event this connection applies` };
}

/** Subscription events never move `expiresAt`: they revoke and reinstate; dunning and scheduled cancellations change nothing (grace carries them). */
function readSubscription(type: string, subscription: Json): Reading {
  const id = idOf(subscription.id);
  if (id === null) return { kind: 'IGNORED', error: 'the subscription has no id' };
  const pause = `pause:${id}`;
  if (type === 'customer.subscription.deleted') {
    const ended = typeof subscription.ended_at === 'number' ? subscription.ended_at * 1000 : undefined;
    return { kind: 'revoke', target: { subscription: id, endedAt: ended ?? null }, reason: 'subscription canceled', cause: null };
  }
  if (type === 'customer.subscription.paused' || (type === 'customer.subscription.updated' && subscription.status === 'paused')) {
    return { kind: 'revoke', target: { subscription: id }, reason: 'subscription paused', cause: pause };
  }
  if (type === 'customer.subscription.resumed' || (type === 'customer.subscription.updated' && subscription.status === 'active')) {
    return { kind: 'reinstate', cause: pause };
  }
  if (type === 'customer.subscription.updated') return { kind: 'UNCHANGED', error: null };
  return { kind: 'IGNORED', error: `${type} is not an event this connection applies` };
}

function readPayment(invoicePayment: Json): Reading {
  const payment = idOf(path(invoicePayment, 'payment', 'payment_intent')) ?? idOf(path(invoicePayment, 'payment', 'charge'));
  const order = idOf(invoicePayment.invoice);
  if (payment === null || order === null) return { kind: 'IGNORED', error: 'payment not linked' };
  return { kind: 'payment', payment, order };
}

function readInvoice(invoice: Json): Reading {
  const lines = object(invoice.lines);
  if (lines?.has_more === true) return { kind: 'FAILED', error: 'more lines than the event carries' };
  const subscription = idOf(path(invoice, 'parent', 'subscription_details', 'subscription')) ?? idOf(invoice.subscription);
  const order: Order = {
    customer: idOf(invoice.customer),
    email: text(invoice.customer_email),
    name: text(invoice.customer_name),
    order: idOf(invoice.id) ?? '',
    payment: idOf(invoice.payment_intent) ?? idOf(invoice.charge),
    lines: [],
    renews: true,
  };
  for (const item of Array.isArray(lines?.data) ? lines.data : []) {
    const line = object(item);
    const ref = idOf(line?.id);
    // A credit line (a proration's refund of unused time) pays for nothing.
    if (!line || ref === null || (typeof line.amount === 'number' && line.amount < 0)) continue;
    const match = idOf(path(line, 'pricing', 'price_details', 'price')) ?? idOf(path(line, 'price', 'id'));
    if (match === null) continue;
    const end = path(line, 'period', 'end');
    order.lines.push({
      ref,
      match,
      quantity: quantityOf(line.quantity),
      periodEnd: typeof end === 'number' && subscription !== null ? end * 1000 : null,
      subscription,
    });
  }
  return { kind: 'order', order };
}

function readSession(session: Json): Reading {
  const link = idOf(session.payment_link);
  if (session.mode !== 'payment' || session.payment_status !== 'paid' || (session.invoice ?? null) !== null || link === null) {
    return { kind: 'IGNORED', error: 'not a paid Payment Link sale' };
  }
  const ref = idOf(session.id) ?? '';
  const details = object(session.customer_details);
  return {
    kind: 'order',
    order: {
      customer: idOf(session.customer),
      email: text(details?.email),
      name: text(details?.name),
      order: ref,
      payment: idOf(session.payment_intent),
      lines: [{ ref, match: link, quantity: 1, periodEnd: null, subscription: null }],
      renews: false,
    },
  };
}

/** Stripe's envelope: `id`, `type` and `created` (Unix seconds). */
export const STRIPE: EventFormat = { idField: 'id', typeField: 'type', madeAt: stripeCreated, read: readStripe, customersApart: false };
