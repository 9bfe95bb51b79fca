export type CalendarStatus = 'PENDING' | 'ACTIVE' | 'GRACE' | 'EXPIRED';

const DAY_SECONDS = 86_400;

/** Exact grace end in Unix seconds (no calendar arithmetic), or null for a perpetual licence. */
export function graceEndsAt(exp: number | null | undefined, graceDays: number): number | null {
  return exp == null ? null : exp + graceDays * DAY_SECONDS;
}

/** The calendar status of a term given its claims (Unix seconds). Revocation is not a calendar matter. */
export function calendarStatus(claims: { nbf?: number | null; exp?: number | null; grace: number }, nowSeconds: number): CalendarStatus {
  if (claims.nbf != null && nowSeconds < claims.nbf) return 'PENDING';
  if (claims.exp == null) return 'ACTIVE';
  if (nowSeconds < claims.exp) return 'ACTIVE';
  if (nowSeconds < claims.exp + claims.grace * DAY_SECONDS) return 'GRACE';
  return 'EXPIRED';
}
