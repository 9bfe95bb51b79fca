/** Calendar rules of DESIGN.md 3, in an organisation's timezone. Dates are `YYYY-MM-DD`. */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Midnight UTC of a date; setUTCFullYear, unlike Date.UTC, does not map years 0 to 99 onto the 1900s. */
function utc(year: number, monthIndex: number, day: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex, day);
  return date;
}

/** `YYYY-MM-DD`, the year written with four digits (0999, not 999). */
const formatDate = (year: number | string, month: number | string, day: number | string) =>
  `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;

/** True for a real calendar date written `YYYY-MM-DD`. */
export function isDate(text: string): boolean {
  const match = DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  const date = utc(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** The local date (`YYYY-MM-DD`) of an instant in a zone. */
export function localDate(ms: number, timeZone: string): string {
  const parts = Object.fromEntries(
    formatter(timeZone)
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return formatDate(parts.year!, parts.month!, parts.day!);
}

const MINUTE = 60_000;

/**
 * The first instant whose local date is `date`. Searching (rather than assuming local midnight)
 * keeps it right on days whose midnight a DST change skips. Zone offsets stay within ±14 h and
 * change on whole minutes, so a binary search over minutes around UTC midnight finds it.
 */
export function startOfDate(date: string, timeZone: string): number {
  // Every issue asks for the same few dates (today, a term's end): the search runs once for each.
  const key = `${timeZone} ${date}`;
  let start = starts.get(key);
  if (start === undefined) {
    start = searchStart(date, timeZone);
    if (starts.size >= 1_000) starts.delete(starts.keys().next().value!);
    starts.set(key, start);
  }
  return start;
}
const starts = new Map<string, number>();

function searchStart(date: string, timeZone: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const utcMidnight = utc(y, m - 1, d).getTime();
  let lo = (utcMidnight - 15 * 60 * MINUTE) / MINUTE;
  let hi = (utcMidnight + 15 * 60 * MINUTE) / MINUTE;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDate(mid * MINUTE, timeZone) < date) lo = mid + 1;
    else hi = mid;
  }
  return lo * MINUTE;
}

/**
 * `months` calendar months after `date`, clamped to the month's end (31 Jan + 1 = 28/29 Feb);
 * null when that would pass the year 9999.
 */
export function addMonths(date: string, months: number): string | null {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const monthIndex = m - 1 + months;
  const year = y + Math.floor(monthIndex / 12);
  const month = ((monthIndex % 12) + 12) % 12;
  if (year > 9999) return null;
  const lastDay = utc(year, month + 1, 0).getUTCDate();
  return formatDate(year, month + 1, Math.min(d, lastDay));
}

/** A zone name the runtime knows (`UTC` included), never an offset such as `+02:00`. */
export function isZoneName(zone: string): boolean {
  if (/^(?:UTC|GMT)?\s*[+-−]\s*\d/i.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
