import type { Tenant } from '../db/tenant.js';
import { recordEvent } from '../audit/events.js';
import { findLicenceView, toLicence } from '../listings/repos/views.js';
import { countsIn, insertEvents, lockedMeters, markThreshold, setCount, usageState, type EventRow, type RecordedEvent } from './repo.js';
import { periodAt, rememberedUntil, type MeterPeriod, type Period } from './periods.js';

/** The licence as the API answers it, for a usage.threshold event. */
export const licenceEventData = async (t: Tenant, lid: string, now: number) => toLicence(await findLicenceView(t, lid, now), now);

/** A licence's meter as stored on it (DESIGN.md 19). */
export interface Meter {
  key: string;
  label: string;
  period: MeterPeriod;
  limit: number | null;
  overage: number | null;
}

export type UsageResult = 'ACCEPTED' | 'LIMIT_REACHED' | 'UNKNOWN_METER' | 'NOT_LICENSED' | 'TOO_OLD' | 'EVENT_LIMIT' | 'ID_REUSED';

/** An event as the application sent it, `at` parsed. */
export interface UsageEvent {
  id: string;
  meter: string;
  amount: number;
  at: number | null;
}

/** The licence the events are for. */
export interface MeteredLicence {
  id: number;
  lid: string;
  meters: Meter[];
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const TOO_OLD_MS = 30 * 86_400_000;
const THRESHOLDS = [80, 100] as const;

/** What a meter accepts in a period: `limit + overage`, null without a ceiling. */
const ceilingOf = (meter: Meter) => (meter.limit === null || meter.overage === null ? null : meter.limit + meter.overage);

export const metersOf = (json: string) => JSON.parse(json) as Meter[];

/** A meter's balance as the usage answers give it. */
export function balance(meter: Meter, period: Period, used: number) {
  const ceiling = ceilingOf(meter);
  return {
    key: meter.key,
    label: meter.label,
    period: meter.period,
    used,
    limit: meter.limit,
    overage: meter.overage,
    remaining: ceiling === null ? null : Math.max(0, ceiling - used),
    periodStart: period.shown.periodStart,
    resetsAt: period.shown.resetsAt,
    periodKey: period.key,
  };
}
export type Balance = ReturnType<typeof balance>;

/** The periods of a licence's meters now. */
const periodsNow = (licence: MeteredLicence, now: number, timeZone: string) => new Map(licence.meters.map((m) => [m.key, periodAt(m.period, now, timeZone)]));

/** Each meter's count in its period, from the licence's count rows (0 where none). */
function usedOf(licence: MeteredLicence, periods: Map<string, Period>, rows: ReadonlyArray<{ meter: string; period_key: string; used: number }>) {
  const used = new Map<string, number>();
  for (const meter of licence.meters) {
    const row = rows.find((r) => r.meter === meter.key && r.period_key === periods.get(meter.key)!.key);
    used.set(meter.key, row ? Number(row.used) : 0);
  }
  return used;
}

/** Every meter's balance, in the licence's order, as `t` sees the counts. */
export async function balances(t: Tenant, licence: MeteredLicence, now: number, timeZone: string): Promise<Balance[]> {
  const periods = periodsNow(licence, now, timeZone);
  const rows = await countsIn(
    t,
    licence.id,
    [...periods.values()].map((p) => p.key),
  );
  const used = usedOf(licence, periods, rows);
  return licence.meters.map((m) => balance(m, periods.get(m.key)!, used.get(m.key)!));
}

/** When the events are applied: the periods and the marks are of this instant. */
export interface UsageScope {
  now: number;
}

/** A recorded event answers its first result when sent again alike; another meter, amount or `at` is ID_REUSED. */
const sameEvent = (recorded: RecordedEvent, event: UsageEvent) =>
  recorded.meter === event.meter && Number(recorded.amount) === event.amount && (recorded.at === null ? null : Number(recorded.at)) === event.at;

/** Raises usage.threshold for each threshold `used` reaches first in this period under this limit (DESIGN.md 19). */
export async function markThresholds(
  t: Tenant,
  scope: UsageScope,
  licence: MeteredLicence,
  meter: Meter,
  period: Period,
  used: number,
  licenceData: () => Promise<Record<string, unknown>>,
  tried = new Set<string>(),
) {
  const { limit } = meter;
  if (limit === null || limit <= 0) return;
  for (const threshold of THRESHOLDS) {
    // Tried once per request: the first event to reach it is the one its data names.
    if (used * 100 < limit * threshold || tried.has(`${meter.key} ${threshold}`)) continue;
    tried.add(`${meter.key} ${threshold}`);
    const mark = { licence_id: licence.id, meter: meter.key, period_key: period.key, limit_value: limit, threshold, marked_at: scope.now };
    // The mark is written whether or not an endpoint listens, so a later one never hears old crossings.
    if (!(await markThreshold(t, mark))) continue;
    await recordEvent(t, scope.now, 'usage.threshold', async () => ({
      ...(await licenceData()),
      usage: {
        meter: meter.key,
        label: meter.label,
        threshold,
        used,
        limit,
        overage: meter.overage,
        periodKey: period.key,
        periodStart: period.shown.periodStart,
        resetsAt: period.shown.resetsAt,
      },
    }));
  }
}

/**
 * DESIGN.md 19's events, in request order, under the licence-row lock (the licence's meters and
 * its organisation's timezone read with it): each new id judged against
 * the counts as this transaction sees them, ACCEPTED and LIMIT_REACHED recorded with a conditional
 * count, so concurrent requests on any instance never pass `limit + overage` nor count an id twice.
 * The caller signs after the commit.
 */
export async function applyEvents(
  t: Tenant,
  scope: UsageScope,
  read: { id: number; lid: string },
  events: readonly UsageEvent[],
  judged: { valid: boolean; machineId: number | null; idsPerPeriod: number; licenceData: () => Promise<Record<string, unknown>> },
): Promise<{ results: Array<{ id: string; result: UsageResult; duplicate: boolean }>; meters: Balance[] }> {
  const { now } = scope;
  const [locked] = await lockedMeters(t, read.id);
  const licence: MeteredLicence = { ...read, meters: metersOf(locked!.meters) };
  // A timezone change moves the boundaries at once (DESIGN.md 19): the timezone as stored, not as cached.
  const periods = periodsNow(licence, now, locked!.timezone);
  const state = await usageState(
    t,
    licence.id,
    events.map((e) => e.id),
    [...periods.values()].map((p) => p.key),
  );
  const { recorded } = state;
  const used = usedOf(licence, periods, state.counts);
  const before = new Map(used);
  // The ids remembered in each period key, counted as this request records more.
  const idCounts = state.remembered;
  const rows: EventRow[] = [];
  const tried = new Set<string>();
  const results: Array<{ id: string; result: UsageResult; duplicate: boolean }> = [];
  for (const event of events) {
    const first = recorded.get(event.id);
    if (first) {
      results.push({ id: event.id, result: (sameEvent(first, event) ? first.result : 'ID_REUSED') as UsageResult, duplicate: true });
      continue;
    }
    const meter = licence.meters.find((m) => m.key === event.meter);
    let result: UsageResult;
    if (!judged.valid) result = 'NOT_LICENSED';
    else if (!meter) result = 'UNKNOWN_METER';
    else if (event.at !== null && event.at < now - TOO_OLD_MS) result = 'TOO_OLD';
    else {
      const period = periods.get(meter.key)!;
      const ids = idCounts.get(period.key) ?? 0;
      if (ids >= judged.idsPerPeriod) result = 'EVENT_LIMIT';
      else {
        const ceiling = ceilingOf(meter);
        const after = used.get(meter.key)! + event.amount;
        result = after > MAX_SAFE || (ceiling !== null && after > ceiling) ? 'LIMIT_REACHED' : 'ACCEPTED';
        if (result === 'ACCEPTED') {
          used.set(meter.key, after);
          await markThresholds(t, scope, licence, meter, period, after, judged.licenceData, tried);
        }
        idCounts.set(period.key, ids + 1);
        rows.push({
          licence_id: licence.id,
          event_id: event.id,
          meter: meter.key,
          amount: event.amount,
          at: event.at,
          received_at: now,
          result,
          period_key: period.key,
          source: 'application',
          machine_id: judged.machineId,
          actor: 'check',
          reason: null,
          expires_at: rememberedUntil(period, now),
        });
      }
    }
    results.push({ id: event.id, result, duplicate: false });
  }
  // A request that records nothing writes nothing.
  if (rows.length > 0) await insertEvents(t, rows);
  for (const meter of licence.meters) {
    const after = used.get(meter.key)!;
    const newIds = rows.filter((row) => row.meter === meter.key).length;
    if (after === before.get(meter.key) && newIds === 0) continue;
    await setCount(t, licence.id, meter.key, periods.get(meter.key)!.key, after, newIds);
  }
  return { results, meters: licence.meters.map((m) => balance(m, periods.get(m.key)!, used.get(m.key)!)) };
}
