// Shared by the integrations*.test.ts API tests: Stripe's events as the provider signs and sends them.
import Stripe from 'stripe';

/** Stripe's own library, for its test signature header: never calls Stripe. */
export const stripe = new Stripe('sk_test_unused');

export const nowS = () => Math.floor(Date.now() / 1000);

let seq = 0;

/** The headers of a delivery of `payload`, signed by Stripe's own test header. */
export const stripeHeaders = (payload: string, secret: string) => ({
  'content-type': 'application/json',
  'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }),
});

/** An event of `type` about `object`, made now. */
export const stripeEvent = (type: string, object: Record<string, unknown>, id = `evt_e${++seq}`) =>
  JSON.stringify({ id, object: 'event', type, created: nowS(), data: { object } });

/** A paid subscription invoice (API 2025-03-31 and later) with one line per price given. */
export function invoicePaid(opts: {
  event?: string;
  invoice?: string;
  subscription?: string;
  email?: string;
  periodEnd: number;
  lines: Array<{ price: string; quantity?: number; amount?: number; id?: string }>;
}) {
  const n = ++seq;
  return stripeEvent(
    'invoice.paid',
    {
      id: opts.invoice ?? `in_${n}`,
      object: 'invoice',
      customer: 'cus_1',
      customer_email: opts.email ?? 'buyer@customer.example',
      customer_name: 'Buyer One',
      parent: { type: 'subscription_details', subscription_details: { subscription: opts.subscription ?? `sub_${n}` } },
      lines: {
        object: 'list',
        has_more: false,
        data: opts.lines.map((l, i) => ({
          id: l.id ?? `il_${n}_${i}`,
          amount: l.amount ?? 1000,
          quantity: l.quantity ?? 1,
          period: { start: opts.periodEnd - 30 * 86_400, end: opts.periodEnd },
          pricing: { type: 'price_details', price_details: { price: l.price, product: 'prod_1' } },
        })),
      },
    },
    opts.event ?? `evt_${n}`,
  );
}
