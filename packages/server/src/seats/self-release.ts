import { recordAudit, type Author } from '../audit/audit.js';
import type { Tenant } from '../db/tenant.js';
import { forbidden } from '../core/errors.js';
import { machineData } from './service.js';
import { addRebinds, countedDeactivationsSince, markReleased, releasesSince } from './repo.js';

/** DESIGN.md 12: the window the self-service limit counts in. */
export const SELF_RELEASE_WINDOW_MS = 30 * 24 * 60 * 60 * 1000;

/** Who released a seat without the operator: the application (`self`) or the customer (`customer/<id>`). */
const isSelf = (releasedBy: string | null) => releasedBy === 'self' || (releasedBy?.startsWith('customer/') ?? false);

/** Self-service releases of a licence in the 30 days before `now`, both ways together. */
export async function selfReleasesInWindow(t: Tenant, licenceId: number, now: number): Promise<number> {
  const rows = await releasesSince(t, licenceId, now - SELF_RELEASE_WINDOW_MS);
  // Air-gapped deactivations sent through the Management API count too (DESIGN.md 14); the portal's are among the rows above.
  const airGapped = await countedDeactivationsSince(t, licenceId, now - SELF_RELEASE_WINDOW_MS);
  return rows.filter((r) => isSelf(r.released_by)).length + airGapped.filter((r) => !isSelf(r.ended_by)).length;
}

/**
 * Releases one live, not-at-issue seat for the application or the customer, within the
 * product's limit. The caller holds the licence-row lock, so parallel releases on any instance
 * count each other and exactly the allowed number succeed.
 */
export async function releaseSelf(
  t: Tenant,
  seat: { licenceId: number; lid: string; bindingId: number; parts: string; lease_ends_at: number | null },
  limit: number | null,
  by: Author,
): Promise<void> {
  const { now } = by;
  const actor = by.actor.name;
  if (limit !== null && (await selfReleasesInWindow(t, seat.licenceId, now)) >= limit) throw forbidden('self-service release limit reached');
  await markReleased(t, { id: seat.bindingId, lease_ends_at: seat.lease_ends_at }, actor, now);
  await addRebinds(t, seat.licenceId, 1);
  await recordAudit(t, by, {
    action: 'machine.released',
    subjectType: 'machine',
    subjectId: seat.bindingId,
    lid: seat.lid,
    event: () => machineData(t, seat.bindingId, seat.lid, now),
    summary: `Released machine ${seat.bindingId} (${actor === 'self' ? 'by the application' : 'by the customer'})`,
    details: { parts: JSON.parse(seat.parts) as Record<string, string> },
  });
}
