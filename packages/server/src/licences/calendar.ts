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

/** True for a real calendar date written `YYYY-MM-DD`. */
export function isDate(text: string): boolean {
  const match = DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  // setUTCFullYear, unlike Date.UTC, does not map years 0 to 99 onto the 1900s.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** The local date (`YYYY-MM-DD`) of an instant in a zone. */
export function localDate(ms: number, timeZone: string): string {
  const parts = Object.fromEntries(formatter(timeZone).formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day}`;
}

const MINUTE = 60_000;

/**
 * The first instant whose local date is `date`. Searching (rather than assuming local midnight)
 * keeps it right on days whose midnight a DST change skips. Zone offsets stay within ±14 h and
 * change on whole minutes, so a binary search over minutes around UTC midnight finds it.
 */
export function startOfDate(date: string, timeZone: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const utcMidnight = Date.UTC(y, m - 1, d);
  let lo = (utcMidnight - 15 * 60 * MINUTE) / MINUTE;
  let hi = (utcMidnight + 15 * 60 * MINUTE) / MINUTE;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDate(mid * MINUTE, timeZone) < date) lo = mid + 1;
    else hi = mid;
  }
  return lo * MINUTE;
}

/** `months` calendar months after `date`, clamped to the month's end (31 Jan + 1 = 28/29 Feb). */
export function addMonths(date: string, months: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const target = new Date(Date.UTC(y, m - 1 + months, 1));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d, lastDay));
  return target.toISOString().slice(0, 10);
}
