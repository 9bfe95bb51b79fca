import type { DialectName } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import { peaksSince, raisePeak } from './repo.js';

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
  await raisePeak(dialect, t, licenceId, utcDay(now), live);
}

/** The daily peak of live leases over the last PEAK_DAYS UTC days, oldest first, 0 for a day without leases. */
export async function leasePeaks(t: Tenant, licenceId: number, now: number): Promise<Array<{ date: string; peak: number }>> {
  const days = Array.from({ length: PEAK_DAYS }, (_, i) => utcDay(now - (PEAK_DAYS - 1 - i) * DAY_MS));
  const byDay = new Map((await peaksSince(t, licenceId, days[0]!)).map((row) => [row.day, row.peak]));
  return days.map((date) => ({ date, peak: byDay.get(date) ?? 0 }));
}
