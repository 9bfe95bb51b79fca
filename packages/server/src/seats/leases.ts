import type { FingerprintParts } from '@licensor/protocol';
import { recordAudit } from '../audit/audit.js';
import type { DialectName } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import { notePeak } from './lease-peaks.js';
import { deleteUnseen, insertBinding, updateBinding } from './repo.js';
import { machineData } from './service.js';

/** A seat (a binding row) as the check path reads it; for a floating licence, a lease. */
export interface SeatRow {
  id: number;
  parts: string;
  bound_at: number;
  label: string | null;
  last_seen_at: number | null;
  released_at: number | null;
  lease_ends_at: number | null;
  borrowed_until: number | null;
  fp_digest: string | null;
}

/** DESIGN.md 13: rows of a floating licence not seen for this long are removed. */
export const UNSEEN_ROW_MS = 90 * 86_400_000;

/** What a floating check or borrow found: this machine's live lease, if any, and what to write. */
export interface LeaseDecision {
  /** This machine's live lease, as read. */
  held: SeatRow | undefined;
  /** The lease end to sign; null when this machine gets no lease. */
  end: number | null;
  /** True when `end` must be committed (a new lease, or one with less than half a lease left) before signing. */
  write: boolean;
  /** Whole seconds until the earliest live lease ends, when every seat is held by other machines. */
  retryAfterSeconds?: number;
}

/**
 * The lease a check gives this machine (DESIGN.md 13), from the live leases and its own row:
 * a live lease is renewed to `now + lse` only when less than half a lease remains (otherwise its
 * stored end is signed, and nothing is written), a check never shortens one (a borrow's end is
 * further), and a machine without one takes a free seat, or learns when the first one frees.
 */
export function decideLease(live: readonly SeatRow[], mine: SeatRow | undefined, maxMachines: number, lseSeconds: number, now: number): LeaseDecision {
  const lease = lseSeconds * 1000;
  const held = mine !== undefined && live.includes(mine) ? mine : undefined;
  if (held) {
    const end = held.lease_ends_at!;
    return end - now < lease / 2 ? { held, end: now + lease, write: true } : { held, end, write: false };
  }
  if (live.length < maxMachines) return { held, end: now + lease, write: true };
  const earliest = Math.min(...live.map((row) => row.lease_ends_at ?? Number.POSITIVE_INFINITY));
  return { held, end: null, write: false, retryAfterSeconds: Math.max(1, Math.ceil((earliest - now) / 1000)) };
}

/** Who writes a lease: the licence (read under its row lock) and the machine. */
export interface LeaseWrite {
  dialect: DialectName;
  licence: { id: number; lid: string };
  live: readonly SeatRow[];
  mine: SeatRow | undefined;
  fingerprint: string;
  digest: string;
  parts: FingerprintParts;
  label: string | undefined;
  /** Who the audit trail says made a new lease's seat. */
  actor: { name: string };
  now: number;
}

/**
 * Commits a lease end under the licence-row lock the caller holds: renews the live lease, or
 * starts one on this machine's row (a lapsed or returned lease: its `boundAt` becomes now), or on
 * a new row (audited `machine.bound`, and this licence's rows unseen for 90 days go). `borrowUntil`
 * marks a borrow. The day's peak of live leases is noted. Returns the lease's `boundAt`.
 */
export async function writeLease(t: Tenant, w: LeaseWrite, end: number, borrowUntil: number | null = null): Promise<number> {
  const held = w.mine !== undefined && w.live.includes(w.mine);
  const borrowed = borrowUntil === null ? {} : { borrowed_until: borrowUntil };
  let boundAt = w.now;
  if (held) {
    boundAt = w.mine!.bound_at;
    await updateBinding(t, w.mine!.id, { lease_ends_at: end, ...borrowed });
  } else if (w.mine) {
    await updateBinding(t, w.mine.id, {
      released_at: null,
      released_by: null,
      bound_at: w.now,
      lease_ends_at: end,
      borrowed_until: borrowUntil,
      last_seen_at: w.now,
      label: w.label ?? w.mine.label,
    });
  } else {
    const row = await insertBinding(t, {
      licence_id: w.licence.id,
      fingerprint: w.fingerprint,
      fp_digest: w.digest,
      parts: JSON.stringify(w.parts),
      bound_at: w.now,
      released_at: null,
      released_by: null,
      at_issue: 0,
      label: w.label ?? null,
      last_seen_at: w.now,
      lease_ends_at: end,
      borrowed_until: borrowUntil,
    });
    await recordAudit(t, w, {
      action: 'machine.bound',
      subjectType: 'machine',
      subjectId: row.id,
      lid: w.licence.lid,
      event: () => machineData(t, row.id, w.licence.lid, w.now),
      summary: `Machine ${row.id} took a lease on its first check`,
      details: { parts: w.parts },
    });
    await deleteUnseen(t, w.licence.id, w.now, w.now - UNSEEN_ROW_MS);
  }
  await notePeak(w.dialect, t, w.licence.id, w.now, w.live.length + (held ? 0 : 1));
  return boundAt;
}
