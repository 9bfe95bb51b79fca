import { parseFingerprint, FingerprintError, type ParamValue } from '@licensor/protocol';
import { invalid } from '../core/errors.js';
import type { ProductParam } from '../products/schemas.js';
import { checkUpdateWindow, paramDefault, paramValue } from '../products/shape.js';
import { addMonths, isDate, localDate, startOfDate } from '../core/calendar.js';

/**
 * The parameter claims in declared order: each given value checked against its type, absent
 * ones taking their default, required ones present; a key the product does not declare is a 400.
 */
export function resolveParams(declared: readonly ProductParam[], given: Record<string, unknown>): Array<[string, ParamValue]> {
  const known = new Set(declared.map((p) => p.key));
  const stray = Object.keys(given).find((key) => !known.has(key));
  if (stray !== undefined) throw invalid(`params.${stray}`, 'not a parameter of this product', `Parameter "${stray}"`);
  const claims: Array<[string, ParamValue]> = [];
  for (const param of declared) {
    const raw = given[param.key];
    const value = raw === undefined || raw === null ? paramDefault(param) : paramValue(param, raw, `params.${param.key}`);
    if (value !== null) claims.push([param.key, value]);
    else if (param.required) throw invalid(`params.${param.key}`, 'required', param.label);
  }
  return claims;
}

/** Validates fingerprints and merges `fingerprint` then `fingerprints`, duplicates removed, order kept. */
export function mergeFingerprints(fingerprint: string | undefined, fingerprints: readonly string[] | undefined): string[] {
  const all = [...(fingerprint === undefined ? [] : [fingerprint]), ...(fingerprints ?? [])];
  all.forEach((fp, i) => {
    try {
      parseFingerprint(fp);
    } catch (err) {
      if (!(err instanceof FingerprintError)) throw err;
      throw invalid(fingerprint !== undefined && i === 0 ? 'fingerprint' : `fingerprints[${fingerprint === undefined ? i : i - 1}]`, err.message);
    }
  });
  return [...new Set(all)];
}

export interface TermDates {
  startsAt: number | null;
  expiresAt: number | null;
}

/** The date a term is dated from: `issueDate` or its older name `startsOn`, never both. */
export function termDate(input: { issueDate?: string | undefined; startsOn?: string | undefined }): string | undefined {
  if (input.issueDate !== undefined && input.startsOn !== undefined) {
    throw invalid('startsOn', 'the same as the issue date: send one of them');
  }
  const date = input.issueDate ?? input.startsOn;
  const field = input.issueDate !== undefined ? 'issueDate' : 'startsOn';
  if (date !== undefined && !isDate(date)) throw invalid(field, 'must be a date (YYYY-MM-DD)');
  return date;
}

/** `validityMonths`, or the product's default; required when the product has none. */
export function validityMonths(given: number | undefined, productDefault: number | null): number {
  const months = given ?? productDefault;
  if (months === null || months === undefined) {
    throw invalid('validityMonths', 'required: the product has no default validity');
  }
  return months;
}

/** The start of the date `months` after `date` (section 3's clamping); nothing may end after the year 9999 (400 naming `field`). */
function monthsLater(date: string, months: number, timeZone: string, field: 'validityMonths' | 'updatesMonths'): number {
  const end = addMonths(date, months);
  if (end === null) throw invalid(field, `the ${field === 'validityMonths' ? 'term' : 'update window'} would end after the year 9999`);
  return startOfDate(end, timeZone);
}

const termEnd = (date: string, months: number, timeZone: string) => monthsLater(date, months, timeZone, 'validityMonths');

/**
 * A term running from `date`: it starts at the start of that local date when that is in the
 * future (else at once), and expires at the start of the date `months` later (0 = perpetual).
 */
export function termFrom(date: string, months: number, timeZone: string, now: number): TermDates {
  const today = localDate(now, timeZone);
  return {
    startsAt: date > today ? startOfDate(date, timeZone) : null,
    expiresAt: months === 0 ? null : termEnd(date, months, timeZone),
  };
}

/**
 * A renewal without a date: a future start stays, and the new expiry counts from the later
 * of today and the current expiry, so renewing early never shortens the customer's term.
 */
export function extendedTerm(current: TermDates, months: number, timeZone: string, now: number): TermDates {
  const today = localDate(now, timeZone);
  const currentEnd = current.expiresAt === null ? today : localDate(current.expiresAt, timeZone);
  // biome-ignore lint/complexity/useMathMinMax: local dates (YYYY-MM-DD) compare as strings
  const base = currentEnd > today ? currentEnd : today;
  return {
    startsAt: current.startsAt !== null && current.startsAt > now ? current.startsAt : null,
    expiresAt: months === 0 ? null : termEnd(base, months, timeZone),
  };
}

/**
 * A licence's maintenance window in months (DESIGN.md 20): the body's (`null`: no window), else
 * `kept` (the product's at issue, the licence's own at renewal). A product whose parameter kept
 * the name `upd` cannot have one.
 */
export function updatesMonthsOf(given: number | null | undefined, kept: number | null, params: readonly ProductParam[]): number | null {
  const months = given === undefined ? kept : given;
  if (months !== null) checkUpdateWindow(params, 'updatesMonths');
  return months;
}

/** The term's `upd` (ms, the start of a local date): `months` after the term's date, or null without a window. */
export function updatesFrom(date: string, months: number | null, timeZone: string): number | null {
  return months === null ? null : monthsLater(date, months, timeZone, 'updatesMonths');
}

/**
 * A renewal without a date: the window counts from the later of today and the current `upd`
 * date, so renewing early never shortens the updates the customer has (as extendedTerm does).
 */
export function extendedUpdates(currentUpd: number | null, months: number | null, timeZone: string, now: number): number | null {
  const today = localDate(now, timeZone);
  const current = currentUpd === null ? today : localDate(currentUpd, timeZone);
  // biome-ignore lint/complexity/useMathMinMax: local dates (YYYY-MM-DD) compare as strings
  return updatesFrom(current > today ? current : today, months, timeZone);
}
