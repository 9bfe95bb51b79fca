import type { Tenant } from '../db/tenant.js';
import { recordEvent } from '../audit/events.js';
import { findLicenceView, toLicence } from '../listings/repos/views.js';
import { countsIn, lockAndRead, markThreshold, usageState, usageWrites, type CountRow, type EventRow, type RecordedEvent, type UsageState } from './repo.js';
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

/** One usage request's events for one licence, as the check path judged them. */
export interface UsageRequest {
  /** When the request arrived: its periods and marks are of this instant. */
  now: number;
  licence: { id: number; lid: string };
  /** The periods of the meters the presented licence signs, which the licence most likely still has. */
  expected: readonly MeterPeriod[];
  events: readonly UsageEvent[];
  valid: boolean;
  machineId: number | null;
  idsPerPeriod: number;
}

export interface Applied {
  results: Array<{ id: string; result: UsageResult; duplicate: boolean }>;
  meters: Balance[];
}

/**
 * DESIGN.md 19's events of requests for distinct licences, in one transaction: the licence rows
 * locked (their meters and organisation's timezone read with them), then for each request its
 * events in order, each new id judged against the counts as this transaction sees them; ACCEPTED
 * and LIMIT_REACHED recorded, all in one INSERT and one count upsert, so concurrent requests on
 * any instance never pass `limit + overage` nor count an id twice. Answers the results and the
 * statements that write them, for the caller to send with the COMMIT; it signs after the commit.
 * `timeZone` is the organisation's as the caller knows it: the state is read for the period keys
 * it expects, and again should the locked licences need others (a renewal or a timezone change).
 */
export async function applyEvents(t: Tenant, requests: readonly UsageRequest[], timeZone: string) {
  const ids = requests.flatMap((request) => request.events.map((e): [number, string] => [request.licence.id, e.id]));
  const keysOf = (licenceId: number, periods: Iterable<Period>) =>
    [...new Set([...periods].map((p) => p.key))].map((key): [number, string] => [licenceId, key]);
  const expected = requests.flatMap((r) =>
    keysOf(
      r.licence.id,
      r.expected.map((period) => periodAt(period, r.now, timeZone)),
    ),
  );
  const first = await lockAndRead(
    t,
    requests.map((r) => r.licence.id),
    { ids, periodKeys: expected },
  );
  const locked = new Map(first.locked.map((row) => [Number(row.id), row]));
  const judged = requests.map((request) => {
    const row = locked.get(request.licence.id);
    if (!row) throw new Error(`licence ${request.licence.lid} is no longer stored`);
    const licence: MeteredLicence = { ...request.licence, meters: metersOf(row.meters) };
    // A timezone change moves the boundaries at once (DESIGN.md 19): the timezone as stored, not as cached.
    return { request, licence, periods: periodsNow(licence, request.now, row.timezone) };
  });
  const periodKeys = judged.flatMap(({ licence, periods }) => keysOf(licence.id, periods.values()));
  const readKeys = new Set(expected.map((pair) => pair.join(' ')));
  const states = periodKeys.every((pair) => readKeys.has(pair.join(' '))) ? first.state : await usageState(t, { ids, periodKeys });
  const rows: EventRow[] = [];
  const counts: CountRow[] = [];
  const applied: Applied[] = [];
  for (const { request, licence, periods } of judged) {
    const state = states.get(licence.id) ?? { recorded: new Map(), counts: [], remembered: new Map() };
    applied.push(await judgeEvents(t, request, licence, periods, state, rows, counts));
  }
  // One organisation's licences: one timezone.
  return { applied, writes: usageWrites(t, rows, counts), timeZone: first.locked[0]?.timezone ?? timeZone };
}

/** One request's events in order, their rows and changed counts added to the batch's. */
async function judgeEvents(
  t: Tenant,
  request: UsageRequest,
  licence: MeteredLicence,
  periods: Map<string, Period>,
  state: UsageState,
  rows: EventRow[],
  counts: CountRow[],
): Promise<Applied> {
  const { now } = request;
  const used = usedOf(licence, periods, state.counts);
  const before = new Map(used);
  // The ids remembered in each period key, counted as this request records more.
  const idCounts = state.remembered;
  const recordedHere = rows.length;
  const tried = new Set<string>();
  const licenceData = async () => ({ licence: await licenceEventData(t, licence.lid, now) });
  const results: Applied['results'] = [];
  for (const event of request.events) {
    const first = state.recorded.get(event.id);
    if (first) {
      results.push({ id: event.id, result: (sameEvent(first, event) ? first.result : 'ID_REUSED') as UsageResult, duplicate: true });
      continue;
    }
    const meter = licence.meters.find((m) => m.key === event.meter);
    let result: UsageResult;
    if (!request.valid) result = 'NOT_LICENSED';
    else if (!meter) result = 'UNKNOWN_METER';
    else if (event.at !== null && event.at < now - TOO_OLD_MS) result = 'TOO_OLD';
    else {
      const period = periods.get(meter.key)!;
      const ids = idCounts.get(period.key) ?? 0;
      if (ids >= request.idsPerPeriod) result = 'EVENT_LIMIT';
      else {
        const ceiling = ceilingOf(meter);
        const after = used.get(meter.key)! + event.amount;
        result = after > MAX_SAFE || (ceiling !== null && after > ceiling) ? 'LIMIT_REACHED' : 'ACCEPTED';
        if (result === 'ACCEPTED') {
          used.set(meter.key, after);
          await markThresholds(t, request, licence, meter, period, after, licenceData, tried);
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
          machine_id: request.machineId,
          actor: 'check',
          reason: null,
          expires_at: rememberedUntil(period, now),
        });
      }
    }
    results.push({ id: event.id, result, duplicate: false });
  }
  const mine = rows.slice(recordedHere);
  for (const meter of licence.meters) {
    const after = used.get(meter.key)!;
    const newIds = mine.filter((row) => row.meter === meter.key).length;
    if (after === before.get(meter.key) && newIds === 0) continue;
    counts.push({ licence_id: licence.id, meter: meter.key, period_key: periods.get(meter.key)!.key, used: after, ids: newIds });
  }
  return { results, meters: licence.meters.map((m) => balance(m, periods.get(m.key)!, used.get(m.key)!)) };
}
