/*
 * What a provider's event asks of a connection (DESIGN.md 22), as each provider's reader
 * (stripe.ts, paddle.ts) makes it from the event's JSON alone, for hook.ts to apply.
 */

/** One order line: a Stripe invoice line or Checkout session, a Paddle transaction item. */
export interface OrderLine {
  /** The line's own id, applied once whichever events name it. */
  ref: string;
  /** The price or Payment Link id a mapping matches. */
  match: string;
  quantity: number;
  /** The paid period's end (ms); null for a one-time sale. */
  periodEnd: number | null;
  subscription: string | null;
}

export interface Order {
  customer: string | null;
  email: string | null;
  name: string | null;
  order: string;
  payment: string | null;
  lines: OrderLine[];
  /** A Checkout session issues only; an invoice or a transaction also renews. */
  renews: boolean;
}

/** The licences a revocation or reinstatement is about: a payment's (refund, dispute) or a subscription's. */
export type Target =
  | { payment: string }
  /** `endedAt` (ms; null: now) for a cancellation, which changes nothing within an hour of the last period end; `keepPrices` for a plan change. */
  | { subscription: string; endedAt?: number | null; keepPrices?: string[] };

export type Reading =
  | { kind: 'order'; order: Order }
  | { kind: 'revoke'; target: Target; reason: string; cause: string | null }
  | { kind: 'reinstate'; cause: string }
  /** Stripe's invoice_payment.paid: the invoice a payment paid. */
  | { kind: 'payment'; payment: string; order: string }
  /** Paddle's customer.created/.updated: the email and name its transactions are issued to, as of `occurredAt` (ms). */
  | { kind: 'customer'; customer: string; email: string | null; name: string | null; occurredAt: number }
  | { kind: 'IGNORED' | 'FAILED' | 'UNCHANGED'; error: string | null };

/** A provider's event envelope and its reader. */
export interface EventFormat {
  /** The envelope's fields that hold the event's id and type (DESIGN.md 22's body check). */
  idField: string;
  typeField: string;
  /** When the event was made (ms), or null when it carries no time. */
  madeAt(event: Json): number | null;
  read(event: Json): Reading;
  /** The provider's orders carry no email: it comes from its customer events, kept per connection (Paddle). */
  customersApart: boolean;
}

export type Json = Record<string, unknown>;
export const object = (value: unknown): Json | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
export const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
/** An id, or an expanded object's id. */
export const idOf = (value: unknown): string | null => text(value) ?? text(object(value)?.id);
export const path = (value: unknown, ...keys: string[]): unknown => keys.reduce<unknown>((at, key) => object(at)?.[key], value);
/** A positive whole quantity, else 1. */
export const quantityOf = (value: unknown): number => (typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 1);
