import { randomBytes } from 'node:crypto';
import type { Tenant } from '../db/tenant.js';
import { insertEvent, insertTermMark, subscribedTypes } from './repo.js';

/** DESIGN.md 15's catalogue, without `webhook.test`, which only an endpoint's test sends. */
export const EVENT_TYPES = [
  'licence.issued',
  'licence.renewed',
  'licence.revoked',
  'licence.reinstated',
  'licence.archived',
  'licence.restored',
  'licence.expiring',
  'licence.expired',
  'licence.trial_started',
  'licence.trial_extended',
  'licence.trial_converted',
  'machine.bound',
  'machine.released',
  'machine.borrowed',
  'product.created',
  'product.updated',
  'product.deleted',
  'product.key_rotated',
  'product.check_token_rotated',
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'usage.threshold',
  'release.published',
  'release.yanked',
  'release.unyanked',
  'integration.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
const CATALOGUE = new Set<string>(EVENT_TYPES);

/** The read scope an event's resource needs (DESIGN.md 15). */
export function readScopeOf(type: string): 'licenses:read' | 'products:read' | 'customers:read' | 'releases:read' | 'integrations:read' {
  if (type.startsWith('product.')) return 'products:read';
  if (type.startsWith('release.')) return 'releases:read';
  if (type.startsWith('integration.')) return 'integrations:read';
  if (type.startsWith('customer.')) return 'customers:read';
  return 'licenses:read';
}

/**
 * What an event carries: the resource as the API returns it, read by the feature that changed it
 * inside the change's transaction, and only when an endpoint takes the event.
 */
export type EventData = () => Record<string, unknown> | Promise<Record<string, unknown>>;

// Cut from a pool filled 256 ids at a time: under load a randomBytes call per event cost more
// than the event's insert (docs/benchmarks.md, bench:webhooks).
const ID_BYTES = 18;
const POOLED_IDS = 256;
let idPool = Buffer.alloc(0);
let idsUsed = POOLED_IDS;

/** `msg_` and 18 random bytes in base64url: the `webhook-id` of every attempt for every endpoint. */
export function newEventId(): string {
  if (idsUsed === POOLED_IDS) {
    idPool = randomBytes(ID_BYTES * POOLED_IDS);
    idsUsed = 0;
  }
  const at = ID_BYTES * idsUsed++;
  return `msg_${idPool.subarray(at, at + ID_BYTES).toString('base64url')}`;
}

// Per transaction (its Kysely handle): an issue records two entries, the customer's and the
// licence's, and asks once. A transaction sees its own endpoint writes; no other path writes
// endpoints in a transaction that also records events, so the answer cannot go stale within one.
const subscribed = new WeakMap<object, Promise<(type: string) => boolean>>();

/**
 * Whether one of the organisation's endpoints, enabled or not, takes each event type: only then
 * is an event written (an endpoint is sent only events raised while it took them).
 */
export function subscriptions(t: Tenant): Promise<(type: string) => boolean> {
  let takes = t.db.isTransaction ? subscribed.get(t.db) : undefined;
  if (!takes) {
    takes = subscribedTypes(t).then((taken) => (type: string) => taken.has(type));
    if (t.db.isTransaction) subscribed.set(t.db, takes);
  }
  return takes;
}

/**
 * Writes the outbox row for an audited change, in the caller's transaction, when `type` is in
 * the catalogue and one of the organisation's endpoints takes it. The audit writer calls it for
 * every entry, so a feature raises its event by recording its audit entry with the event's name
 * and data. A deleted resource's entry is recorded before the row goes, so its data can still be read.
 */
export async function recordEvent(t: Tenant, now: number, type: string, data: EventData | undefined): Promise<void> {
  if (!CATALOGUE.has(type)) return;
  if (!data) throw new Error(`no event data for ${type}`);
  if ((await subscriptions(t))(type)) await insertEvent(t, newEventId(), now, type, await data());
}

export const EXPIRING_WINDOW_MS = 7 * 86_400_000;

/**
 * `licence.expiring` or `licence.expired` for a licence's term, unless its mark says it was
 * raised already: the mark is unique per term, so another instance, or this one after a
 * restart, finding the same term writes nothing.
 */
export async function recordTermEvent(
  t: Tenant,
  now: number,
  kind: 'expiring' | 'expired',
  term: { licenceId: number; termVersion: number },
  data: EventData,
): Promise<void> {
  if (!(await insertTermMark(t, term.licenceId, kind, term.termVersion))) return;
  await insertEvent(t, newEventId(), now, `licence.${kind}`, await data());
}
