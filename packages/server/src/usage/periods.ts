import { localDate, startOfDate } from '../core/calendar.js';
import { iso } from '../core/schemas.js';

export type MeterPeriod = 'NONE' | 'DAY' | 'MONTH' | 'YEAR';

/** A meter's period at an instant: its key, its start and the next period's start (both null for NONE). */
export interface Period {
  key: string;
  start: number | null;
  resetsAt: number | null;
  /** `start` and `resetsAt` as the answers write them. */
  shown: { periodStart: string | null; resetsAt: string | null };
}

const DAY_MS = 86_400_000;
/** How long an id is remembered past its period's end, and a NONE meter's id after it was recorded (DESIGN.md 19). */
const KEEP_PAST_PERIOD_MS = 35 * DAY_MS;
const KEEP_NONE_MS = 400 * DAY_MS;

/** The date after a `YYYY-MM-DD` date. */
function nextDate(date: string): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const next = new Date(0);
  next.setUTCFullYear(y, m - 1, d + 1);
  return next.toISOString().slice(0, 10);
}

const NONE: Period = { key: 'NONE', start: null, resetsAt: null, shown: { periodStart: null, resetsAt: null } };

function bounded(key: string, start: number, resetsAt: number): Period {
  return { key, start, resetsAt, shown: { periodStart: iso(start), resetsAt: iso(resetsAt) } };
}

function computed(period: Exclude<MeterPeriod, 'NONE'>, now: number, timeZone: string): Period {
  const today = localDate(now, timeZone);
  const year = Number(today.slice(0, 4));
  if (period === 'DAY') return bounded(today, startOfDate(today, timeZone), startOfDate(nextDate(today), timeZone));
  if (period === 'MONTH') {
    const month = Number(today.slice(5, 7));
    const next = month === 12 ? `${String(year + 1).padStart(4, '0')}-01-01` : `${today.slice(0, 5)}${String(month + 1).padStart(2, '0')}-01`;
    return bounded(today.slice(0, 7), startOfDate(`${today.slice(0, 7)}-01`, timeZone), startOfDate(next, timeZone));
  }
  return bounded(today.slice(0, 4), startOfDate(`${today.slice(0, 4)}-01-01`, timeZone), startOfDate(`${String(year + 1).padStart(4, '0')}-01-01`, timeZone));
}

/**
 * The last period computed for each period and timezone: answered again while `now` lies in it.
 * Every usage request needs its meters' periods, and a local date in a zone (Intl) with two
 * instants formatted cost more than its database reads (docs/benchmarks.md, bench:usage).
 */
const latest = new Map<string, Period>();

/**
 * The calendar period of DESIGN.md 19 current at `now` in the organisation's timezone, computed
 * when asked: nothing resets a count, so no job runs at a boundary.
 */
export function periodAt(period: MeterPeriod, now: number, timeZone: string): Period {
  if (period === 'NONE') return NONE;
  const key = `${period} ${timeZone}`;
  const last = latest.get(key);
  if (last && last.start! <= now && now < last.resetsAt!) return last;
  const current = computed(period, now, timeZone);
  if (latest.size >= 1_000) latest.delete(latest.keys().next().value!);
  latest.set(key, current);
  return current;
}

/** Until when an id recorded now in this period is remembered. */
export const rememberedUntil = (period: Period, now: number) => (period.resetsAt === null ? now + KEEP_NONE_MS : period.resetsAt + KEEP_PAST_PERIOD_MS);
