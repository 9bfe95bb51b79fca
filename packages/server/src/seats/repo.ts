import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { DialectName } from '../db/database.js';
import type { MachineBindingsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { iso } from '../core/schemas.js';
import { isLive, liveBinding } from './live.js';

export type BindingRow = Selectable<MachineBindingsTable>;

export function toBinding(row: BindingRow, now: number) {
  return {
    id: row.id,
    parts: JSON.parse(row.parts) as Record<string, string>,
    boundAt: iso(row.bound_at),
    releasedAt: iso(row.released_at),
    releasedBy: row.released_by,
    live: isLive(row, now),
    atIssue: row.at_issue === 1,
    label: row.label,
    lastSeenAt: iso(row.last_seen_at),
    leaseEndsAt: iso(row.lease_ends_at),
    borrowedUntil: iso(row.borrowed_until),
  };
}

export const findBinding = (t: Tenant, id: number) => t.selectFrom('machine_bindings').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** A licence's bindings, live and released, oldest first. */
export const bindingsOf = (t: Tenant, licenceId: number) =>
  t.selectFrom('machine_bindings').selectAll().where('licence_id', '=', licenceId).orderBy('id').execute();

/** A licence's bindings newest first, as the portal lists them. */
export const bindingsNewestFirst = (t: Tenant, licenceId: number) =>
  t
    .selectFrom('machine_bindings')
    .select(['id', 'bound_at', 'released_at', 'at_issue', 'lease_ends_at'])
    .where('licence_id', '=', licenceId)
    .orderBy('bound_at', 'desc')
    .orderBy('id', 'desc')
    .execute();

/** A licence's live seats, oldest first; with `bindingId`, that one only (if live). */
export function liveBindings(t: Tenant, licenceId: number, now: number, bindingId?: number) {
  let query = t.selectFrom('machine_bindings').selectAll().where('licence_id', '=', licenceId).where(liveBinding('machine_bindings', now));
  if (bindingId !== undefined) query = query.where('id', '=', bindingId);
  return query.orderBy('id').execute();
}

/** The fingerprints signed into a licence at issue, in the order they were given. */
export const atIssueFingerprints = (t: Tenant, licenceId: number) =>
  t.selectFrom('machine_bindings').select(['fingerprint', 'label']).where('licence_id', '=', licenceId).where('at_issue', '=', 1).orderBy('id').execute();

export const insertBinding = (t: Tenant, values: Omit<Insertable<MachineBindingsTable>, 'org_id'>) =>
  t.insertInto('machine_bindings', values).returning(['id', 'bound_at']).executeTakeFirstOrThrow();

export async function updateBinding(t: Tenant, id: number, set: Updateable<MachineBindingsTable>): Promise<void> {
  await t.updateTable('machine_bindings').set(set).where('id', '=', id).execute();
}

/** A released row: a lease (DESIGN.md 13) also ends at once, so its listed end is when it was freed. */
const releasedColumns = (row: { lease_ends_at: number | null }, actor: string, now: number) => ({
  released_at: now,
  released_by: actor,
  lease_ends_at: row.lease_ends_at === null ? null : Math.min(row.lease_ends_at, now),
});

export const markReleased = (t: Tenant, row: { id: number; lease_ends_at: number | null }, actor: string, now: number) =>
  updateBinding(t, row.id, releasedColumns(row, actor, now));

/** Counts `n` more releases on the licence: in SQL, so concurrent releases add up. */
export async function addRebinds(t: Tenant, licenceId: number, n: number): Promise<void> {
  await t
    .updateTable('licences')
    .set((eb) => ({ rebind_count: eb('rebind_count', '+', n) }))
    .where('id', '=', licenceId)
    .execute();
}

/** An air-gapped activation's seat made ordinary by a check from its machine: it no longer ends. */
export async function clearLeaseEnd(t: Tenant, id: number): Promise<void> {
  await t.updateTable('machine_bindings').set({ lease_ends_at: null }).where('id', '=', id).where('released_at', 'is', null).execute();
}

/** Removes a licence's rows that are not live and were last seen before `before`. */
export async function deleteUnseen(t: Tenant, licenceId: number, now: number, before: number): Promise<void> {
  await t
    .deleteFrom('machine_bindings')
    .where('licence_id', '=', licenceId)
    .where(sql<boolean>`not ${liveBinding('machine_bindings', now)}`)
    .where((eb) => eb(eb.fn.coalesce('last_seen_at', 'bound_at'), '<', before))
    .execute();
}

/** Who released each of a licence's seats released after `since`. */
export const releasesSince = (t: Tenant, licenceId: number, since: number) =>
  t.selectFrom('machine_bindings').select('released_by').where('licence_id', '=', licenceId).where('released_at', '>', since).execute();

/** Who ended each of a licence's counted air-gapped deactivations after `since`. */
export const countedDeactivationsSince = (t: Tenant, licenceId: number, since: number) =>
  t.selectFrom('air_gap_activations').select('ended_by').where('licence_id', '=', licenceId).where('counted', '=', 1).where('ended_at', '>', since).execute();

/** The live air-gapped activations of these bindings, oldest first. */
export const openActivations = (t: Tenant, bindingIds: number[]) =>
  t
    .selectFrom('air_gap_activations')
    .select(['id', 'binding_id', 'until'])
    .where('binding_id', 'in', bindingIds)
    .where('ended_at', 'is', null)
    .orderBy('id')
    .execute();

/** Raises the licence's peak of live leases on `day` to `live` when that is higher. */
export async function raisePeak(dialect: DialectName, t: Tenant, licenceId: number, day: string, live: number): Promise<void> {
  const higher = dialect === 'postgres' ? sql`greatest(licence_lease_peaks.peak, excluded.peak)` : sql`max(licence_lease_peaks.peak, excluded.peak)`;
  await t
    .insertInto('licence_lease_peaks', { licence_id: licenceId, day, peak: live })
    .onConflict((oc) => oc.columns(['licence_id', 'day']).doUpdateSet({ peak: higher as never }))
    .execute();
}

export const peaksSince = (t: Tenant, licenceId: number, day: string) =>
  t.selectFrom('licence_lease_peaks').select(['day', 'peak']).where('licence_id', '=', licenceId).where('day', '>=', day).execute();
