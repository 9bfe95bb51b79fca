import { sql } from 'kysely';
import type { DialectName } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';

const DAY_MS = 86_400_000;
/** How many days the licence page shows. */
export const PEAK_DAYS = 30;

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * Records `live` leases held at `now` as its UTC day's peak when it is the highest yet. Called
 * under the licence-row lock wherever a lease is taken or extended, so every live lease is
 * counted at least once a lease length on each day it lives.
 */
export async function notePeak(dialect: DialectName, t: Tenant, licenceId: number, now: number, live: number): Promise<void> {
  const higher = dialect === 'postgres' ? sql`greatest(licence_lease_peaks.peak, excluded.peak)` : sql`max(licence_lease_peaks.peak, excluded.peak)`;
  await t
    .insertInto('licence_lease_peaks', { licence_id: licenceId, day: utcDay(now), peak: live })
    .onConflict((oc) => oc.columns(['licence_id', 'day']).doUpdateSet({ peak: higher as never }))
    .execute();
}

/** The daily peak of live leases over the last PEAK_DAYS UTC days, oldest first, 0 for a day without leases. */
export async function leasePeaks(t: Tenant, licenceId: number, now: number): Promise<Array<{ date: string; peak: number }>> {
  const days = Array.from({ length: PEAK_DAYS }, (_, i) => utcDay(now - (PEAK_DAYS - 1 - i) * DAY_MS));
  const rows = await t
    .selectFrom('licence_lease_peaks')
    .select(['day', 'peak'])
    .where('licence_id', '=', licenceId)
    .where('day', '>=', days[0]!)
    .execute();
  const byDay = new Map(rows.map((row) => [row.day, row.peak]));
  return days.map((date) => ({ date, peak: byDay.get(date) ?? 0 }));
}
