import { randomBytes } from 'node:crypto';
import type { Tenant } from '../db/tenant.js';
import { findCustomerRow, countLicences as customerLicences, toCustomer } from '../customers/repo.js';
import { findLicenceView, toBinding, toLicence, type LicenceView } from '../licences/repo.js';
import { countLicences as productLicences, currentKeyRows, findProductRow, toProduct } from '../products/repo.js';

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
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
const CATALOGUE = new Set<string>(EVENT_TYPES);

/** The read scope an event's resource needs (DESIGN.md 15). */
export function readScopeOf(type: string): 'licenses:read' | 'products:read' | 'customers:read' {
  if (type.startsWith('product.')) return 'products:read';
  if (type.startsWith('customer.')) return 'customers:read';
  return 'licenses:read';
}

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

export interface EventSubject {
  subjectType: string;
  subjectId?: string | number | null | undefined;
  lid?: string | null | undefined;
  /** A licence subject as the change left it, when the caller has read it already: not read again. */
  view?: LicenceView | undefined;
}

/**
 * The resource an event carries, read inside the change's transaction, as the API returns it.
 * A product's `keyError` belongs to the instance that answers, not to the product: null here.
 */
async function dataOf(t: Tenant, now: number, subject: EventSubject): Promise<Record<string, unknown>> {
  const id = Number(subject.subjectId);
  switch (subject.subjectType) {
    case 'licence':
      return { licence: toLicence(subject.view ?? (await findLicenceView(t, String(subject.subjectId), now)), now) };
    case 'machine': {
      const row = await t.selectFrom('machine_bindings').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      const { parts: _parts, ...machine } = toBinding(row, now);
      return { machine: { ...machine, lid: subject.lid ?? null } };
    }
    case 'product': {
      const row = (await findProductRow(t, id))!;
      const key = (await currentKeyRows(t, [id])).get(id)!;
      return { product: toProduct(row, key, null, (await productLicences(t, [id])).get(id) ?? 0, now) };
    }
    case 'customer': {
      const row = (await findCustomerRow(t, id))!;
      return { customer: toCustomer(row, (await customerLicences(t, [id])).get(id) ?? 0) };
    }
    default:
      throw new Error(`no event data for a ${subject.subjectType}`);
  }
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
    takes = t
      .selectFrom('webhook_endpoints')
      .select('events')
      .execute()
      .then((rows) => {
        const taken = new Set(rows.flatMap((e) => JSON.parse(e.events) as string[]));
        return (type: string) => taken.has('*') || taken.has(type);
      });
    if (t.db.isTransaction) subscribed.set(t.db, takes);
  }
  return takes;
}

/** True while the organisation has an endpoint, enabled or not. */
export async function hasEndpoint(t: Tenant): Promise<boolean> {
  return (await t.selectFrom('webhook_endpoints').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/**
 * Writes the outbox row for an audited change, in the caller's transaction, when `type` is in
 * the catalogue and the organisation has an endpoint. The audit writer calls it for every entry,
 * so a feature raises its event by recording its audit entry with the event's name. A deleted
 * resource's entry is recorded before the row goes, so its data can still be read.
 */
export async function recordEvent(t: Tenant, now: number, type: string, subject: EventSubject): Promise<void> {
  if (!CATALOGUE.has(type)) return;
  const takes = await subscriptions(t);
  if (type !== 'licence.issued' && type !== 'licence.renewed') {
    if (takes(type)) await insertEvent(t, now, type, await dataOf(t, now, subject));
    return;
  }
  if (!takes(type) && !takes('licence.expiring')) return;
  const view = subject.view ?? (await findLicenceView(t, String(subject.subjectId), now));
  if (takes(type)) await insertEvent(t, now, type, { licence: toLicence(view, now) });
  // A term issued within the window is found at once (the loop's scan finds the others).
  if (takes('licence.expiring') && view.revoked === 0 && view.expires_at !== null && view.expires_at > now && view.expires_at <= now + EXPIRING_WINDOW_MS) {
    await raiseTermEvent(t, now, 'expiring', view);
  }
}

export const EXPIRING_WINDOW_MS = 7 * 86_400_000;

/**
 * `licence.expiring` or `licence.expired` for the licence's current term, unless its mark says
 * it was raised already: the mark is unique per term, so another instance, or this one after a
 * restart, finding the same term writes nothing.
 */
export async function raiseTermEvent(t: Tenant, now: number, kind: 'expiring' | 'expired', view: LicenceView): Promise<void> {
  const mark = await t
    .insertInto('webhook_term_marks', { licence_id: view.id, kind, term_version: view.term_version })
    .onConflict((oc) => oc.columns(['licence_id', 'kind', 'term_version']).doNothing())
    .executeTakeFirst();
  if (Number(mark.numInsertedOrUpdatedRows ?? 0) === 0) return;
  await insertEvent(t, now, `licence.${kind}`, { licence: toLicence(view, now) });
}

export async function insertEvent(t: Tenant, now: number, type: string, data: Record<string, unknown>): Promise<string> {
  const eventId = newEventId();
  await t.insertInto('webhook_events', { event_id: eventId, type, data: JSON.stringify(data), created_at: now, sequence: null, body: null }).execute();
  return eventId;
}
