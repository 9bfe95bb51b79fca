import { parseFingerprint, type FingerprintParts } from '@licensor/protocol';
import { recordAudit, type Author } from '../audit/audit.js';
import { badRequest, invalid } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import type { Tenant } from '../db/tenant.js';
import { addRebinds, bindingsOf, findBinding, insertBinding, liveBindings, markReleased, openActivations, toBinding } from './repo.js';

/** A machine event's data (DESIGN.md 15): the seat as the API lists it, without its parts, with its licence's lid. */
export async function machineData(t: Tenant, bindingId: number, lid: string | null, now: number) {
  const { parts: _parts, ...machine } = toBinding(await findBinding(t, bindingId), now);
  return { machine: { ...machine, lid } };
}

/** Machine bindings with their current air-gapped activation, if any (DESIGN.md 14). */
export async function withActivations<T extends { id: number }>(t: Tenant, bindings: T[]) {
  const ids = bindings.map((b) => b.id);
  const rows = ids.length === 0 ? [] : await openActivations(t, ids);
  const latest = new Map(rows.map((r) => [r.binding_id, r]));
  return bindings.map((binding) => {
    const activation = latest.get(binding.id);
    return {
      ...binding,
      airGapped: activation !== undefined,
      activationId: activation ? String(activation.id) : null,
      until: activation ? iso(activation.until) : null,
    };
  });
}

/** A licence's machines, live and released, oldest first, as the Management API lists them. */
export async function machinesOf(t: Tenant, licenceId: number, now: number) {
  return withActivations(
    t,
    (await bindingsOf(t, licenceId)).map((row) => toBinding(row, now)),
  );
}

/** The seats a licence names at issue, bound now and inside its signature. */
export async function bindAtIssue(t: Tenant, licenceId: number, fingerprints: readonly string[], now: number, label: string | null = null): Promise<void> {
  for (const fingerprint of fingerprints) {
    await insertBinding(t, {
      licence_id: licenceId,
      fingerprint,
      parts: JSON.stringify(parseFingerprint(fingerprint)),
      bound_at: now,
      released_at: null,
      released_by: null,
      at_issue: 1,
      label,
      last_seen_at: null,
    });
  }
}

/**
 * A machine's first valid check takes a free seat (DESIGN.md 5), audited `machine.bound`. The
 * caller holds the licence-row lock and has judged that a seat is free.
 */
export async function bindSeat(
  t: Tenant,
  by: Author,
  licence: { id: number; lid: string },
  machine: { fingerprint: string; parts: FingerprintParts; label: string | undefined },
): Promise<void> {
  const binding = await insertBinding(t, {
    licence_id: licence.id,
    fingerprint: machine.fingerprint,
    parts: JSON.stringify(machine.parts),
    bound_at: by.now,
    released_at: null,
    released_by: null,
    at_issue: 0,
    label: machine.label ?? null,
    last_seen_at: by.now,
  });
  await recordAudit(t, by, {
    action: 'machine.bound',
    subjectType: 'machine',
    subjectId: binding.id,
    lid: licence.lid,
    summary: `Bound machine ${binding.id} on its first check`,
    details: { parts: machine.parts },
    event: () => machineData(t, binding.id, licence.lid, by.now),
  });
}

/**
 * The operator frees a licence's live seats that are not inside its signature, or the one
 * `machineId` names, each audited `machine.released`. The caller holds the licence-row lock.
 */
export async function releaseBindings(t: Tenant, by: Author, licence: { id: number; lid: string }, machineId: number | undefined): Promise<void> {
  const bindings = await liveBindings(t, licence.id, by.now, machineId);
  if (machineId !== undefined && bindings.length === 0) throw invalid('machineId', `no live binding ${machineId} on this licence`);
  if (bindings.some((b) => b.at_issue === 1) && machineId !== undefined) {
    throw invalid('machineId', 'this machine is inside the licence signature and cannot be released');
  }
  const releasable = bindings.filter((b) => b.at_issue === 0);
  if (releasable.length === 0) throw badRequest('there is no live binding to release');
  for (const binding of releasable) {
    await markReleased(t, binding, by.actor.name, by.now);
    await recordAudit(t, by, {
      action: 'machine.released',
      subjectType: 'machine',
      subjectId: binding.id,
      lid: licence.lid,
      summary: `Released machine ${binding.id}`,
      details: { parts: JSON.parse(binding.parts) as Record<string, string> },
      event: () => machineData(t, binding.id, licence.lid, by.now),
    });
  }
  await addRebinds(t, licence.id, releasable.length);
}
