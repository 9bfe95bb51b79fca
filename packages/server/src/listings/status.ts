import type { LicenceType } from '@licensor/protocol';

export type LicenceStatus = 'PENDING' | 'ACTIVE' | 'GRACE' | 'EXPIRED' | 'REVOKED';
export type CheckHealth = 'NOT_APPLICABLE' | 'NEVER' | 'OK' | 'DUE' | 'OVERDUE';

export const DAY_MS = 86_400_000;

/** Grace is exact: the expiry plus whole days of 86,400 s; null for a perpetual licence. */
export function graceEnd(expiresAt: number | null, graceDays: number): number | null {
  return expiresAt === null ? null : expiresAt + graceDays * DAY_MS;
}

/** DESIGN.md 3: the revocation flag first, then the calendar. */
export function licenceStatus(term: { revoked: boolean; startsAt: number | null; expiresAt: number | null; graceDays: number }, now: number): LicenceStatus {
  if (term.revoked) return 'REVOKED';
  if (term.startsAt !== null && now < term.startsAt) return 'PENDING';
  if (term.expiresAt === null || now < term.expiresAt) return 'ACTIVE';
  return now < graceEnd(term.expiresAt, term.graceDays)! ? 'GRACE' : 'EXPIRED';
}

/** Whether a licence uses plan capacity: only ACTIVE and GRACE do. */
export const countsAgainstPlan = (status: LicenceStatus) => status === 'ACTIVE' || status === 'GRACE';

export function checkHealth(
  licence: { licenceType: LicenceType; lastCheckedAt: number | null; checkEverySeconds: number | null; checkMaxSeconds: number | null },
  now: number,
): CheckHealth {
  if (licence.licenceType === 'OFFLINE') return 'NOT_APPLICABLE';
  if (licence.lastCheckedAt === null) return 'NEVER';
  const since = (now - licence.lastCheckedAt) / 1000;
  if (since <= (licence.checkEverySeconds ?? Infinity)) return 'OK';
  return since <= (licence.checkMaxSeconds ?? Infinity) ? 'DUE' : 'OVERDUE';
}
