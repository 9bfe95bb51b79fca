import type { Ctx } from '../core/context.js';
import { localDate, startOfDate } from '../core/calendar.js';
import { STATUSES } from '../listings/filter.js';
import { nextToExpire, toLicenceListItem } from '../listings/repos/views.js';
import { activeTrials, countExpiring, planCount, tallies, trialTallies, type TallyKey } from '../listings/repos/tallies.js';
import { BUCKET_MS, checksPerBucket, issuedPerBucket, liveSeatCount, trialsPerBucket } from './repo.js';

const LICENCE_TYPES = ['OFFLINE', 'ONLINE', 'HYBRID'] as const;
const SERIES_DAYS = 30;

/** The last `SERIES_DAYS` local dates, oldest first. */
function lastDates(now: number, timeZone: string): string[] {
  const today = localDate(now, timeZone);
  const [y, m, d] = today.split('-').map(Number) as [number, number, number];
  return Array.from({ length: SERIES_DAYS }, (_, i) => new Date(Date.UTC(y, m - 1, d - (SERIES_DAYS - 1 - i))).toISOString().slice(0, 10));
}

/** Buckets counted per bucket start, summed per local date in the organisation's zone (never by the database). */
function series(dates: string[], buckets: Array<{ bucket: number; n: number }>, timeZone: string) {
  const perDate = new Map(dates.map((date) => [date, 0]));
  for (const { bucket, n } of buckets) {
    const date = localDate(Number(bucket), timeZone);
    if (perDate.has(date)) perDate.set(date, perDate.get(date)! + Number(n));
  }
  return dates.map((date) => ({ date, count: perDate.get(date)! }));
}

export async function dashboardMetrics(ctx: Ctx) {
  const { tenant: t, now } = ctx;
  const timeZone = ctx.org.timezone;
  const dates = lastDates(now, timeZone);
  const since = startOfDate(dates[0]!, timeZone);

  const [counts, trials, expiring, seats, issued, checks, trialsActive, started, converted] = await Promise.all([
    tallies(ctx),
    trialTallies(t, now),
    countExpiring(t, now, { trials: false }),
    liveSeatCount(t, now),
    issuedPerBucket(t, since),
    checksPerBucket(t, since - BUCKET_MS),
    activeTrials(t, now),
    trialsPerBucket(t, 'trial_started_at', since),
    trialsPerBucket(t, 'trial_converted_at', since),
  ]);
  // DESIGN.md 18: trials are left out of every figure but series.checks, and counted apart.
  const filed = (where: (k: TallyKey) => boolean) => counts.sum((k) => k.archived === 0 && where(k)) - trials.sum(where);
  return {
    totals: {
      all: filed(() => true),
      byStatus: Object.fromEntries(STATUSES.map((s) => [s, filed((k) => k.status === s)])) as Record<(typeof STATUSES)[number], number>,
      byType: Object.fromEntries(LICENCE_TYPES.map((type) => [type, filed((k) => k.licenceType === type)])) as Record<(typeof LICENCE_TYPES)[number], number>,
    },
    seatsUsed: seats,
    expiring: { d7: expiring['7d'], d30: expiring['30d'], d90: expiring['90d'] },
    series: { issued: series(dates, issued, timeZone), checks: series(dates, checks, timeZone) },
    // The same count the plan limit is enforced on, so the organisation sees it before the 403.
    plan: { limit: ctx.org.planLimit, used: await planCount(t, counts, now) },
    trials: { active: trialsActive, started: series(dates, started, timeZone), converted: series(dates, converted, timeZone) },
  };
}

export async function dashboard(ctx: Ctx) {
  const [metrics, soon] = await Promise.all([dashboardMetrics(ctx), nextToExpire(ctx.tenant, ctx.now, 10)]);
  return { ...metrics, expiringSoon: soon.map((v) => toLicenceListItem(v, ctx.now)) };
}
