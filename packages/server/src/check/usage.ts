import { calendarStatus, usageReceiptMessage } from '@licensor/protocol';
import { badRequest, invalid, tooManyRequests } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { keyUnavailable } from '../keys/keyring.js';
import type { UsageCounters } from '../http/metrics.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { firstProblem } from '../http/validation.js';
import type { UsageCommits } from '../usage/commits.js';
import { balances, metersOf, type Balance, type UsageEvent, type UsageResult } from '../usage/service.js';
import { licenceMetersRow, timezoneOf } from '../usage/repo.js';
import { findTerm, readPresented, seatOf, type CheckScope, type Presented, type Term } from './service.js';
import { UsageBodyStrict } from './schemas.js';

export type UsageReason = 'UNKNOWN_LICENCE' | 'REVOKED' | 'NOT_YET_VALID' | 'EXPIRED' | 'NO_SEAT';

export interface UsageLimits {
  limiter: RateLimiter;
  /** LICENSOR_USAGE_RATE_LICENCE: requests a minute per licence, 0 for no limit. */
  ratePerLicence: number;
  /** LICENSOR_USAGE_IDS_PER_PERIOD: ids a licence remembers per period key. */
  idsPerPeriod: number;
  counters: UsageCounters;
}

interface UsageBody {
  license: string;
  fingerprint: string;
  nonce: string;
  events: Array<{ id: string; meter: string; amount: number; at?: string }>;
}

/** `at` as an instant: the text must be the real instant it names (no 30 February). */
function instantOf(at: string, i: number): number {
  const ms = Date.parse(at);
  const exact = at.length === 20 ? `${at.slice(0, 19)}.000Z` : at;
  if (Number.isNaN(ms) || new Date(ms).toISOString() !== exact) throw invalid(`events[${i}].at`, `"${at}" is not a real instant`, `The time of event ${i + 1}`);
  return ms;
}

/** The body's refusals of DESIGN.md 19, given after the licence verified: nothing is applied on a 400. */
function eventsOf(body: UsageBody): UsageEvent[] {
  const problem = firstProblem(UsageBodyStrict, body, 'body');
  if (problem !== null) throw badRequest(problem);
  const seen = new Set<string>();
  return body.events.map((event, i) => {
    if (seen.has(event.id)) throw invalid(`events[${i}].id`, `"${event.id}" is sent twice in this request`, `The id of event ${i + 1}`);
    seen.add(event.id);
    return { id: event.id, meter: event.meter, amount: event.amount, at: event.at === undefined ? null : instantOf(event.at, i) };
  });
}

/**
 * DESIGN.md 19's verdict, a check's but never binding or leasing: valid when the presented term's
 * status is ACTIVE or GRACE and this machine holds a live seat (floating: a live lease of this
 * exact fingerprint). A superseded term still in its life is valid (`renewed`).
 */
function judgeUsage(scope: CheckScope, term: Term, presented: Presented) {
  const { licence } = term;
  const seat = licence.floating
    ? term.mine !== undefined && term.bindings.includes(term.mine)
      ? term.mine
      : undefined
    : seatOf(term.bindings, presented, presented.claims.fpn ?? scope.product.fingerprintNeed);
  const status = licence.revoked === 1 ? 'REVOKED' : calendarStatus(presented.claims, Math.floor(scope.now / 1000));
  const reason: UsageReason | null =
    licence.revoked === 1 ? 'REVOKED' : status === 'PENDING' ? 'NOT_YET_VALID' : status === 'EXPIRED' ? 'EXPIRED' : seat ? null : 'NO_SEAT';
  return { status, reason, seat };
}

/** The usage answer, its SVCU1 receipt signed (after any commit) with the key that signed the presented licence. */
async function usageAnswer(
  counters: UsageCounters,
  presented: Presented,
  scope: CheckScope,
  body: UsageBody,
  verdict: { status: string; reason: UsageReason | null; boundAt: number | null; renewed: boolean },
  events: Array<{ id: string; result: UsageResult; duplicate: boolean }>,
  meters: Balance[],
) {
  const { key, claims } = presented;
  if (!key.signer) throw keyUnavailable(key.error!);
  const checkedAt = iso(scope.now)!;
  const boundAt = verdict.boundAt === null ? undefined : iso(verdict.boundAt)!;
  const shown = meters.map(({ periodKey: _, ...meter }) => meter);
  const message = usageReceiptMessage({
    lid: claims.lid,
    status: verdict.status,
    nonce: body.nonce,
    checkedAt,
    boundAt,
    fpDigest: presented.digest,
    events,
    meters: shown,
  });
  const receipt = (await key.signer.sign(message)).toString('base64url');
  for (const event of events) counters.event(event.result, event.duplicate);
  return {
    lid: claims.lid,
    valid: verdict.reason === null,
    reason: verdict.reason ?? undefined,
    renewed: verdict.renewed ? true : undefined,
    status: verdict.status === '' ? undefined : verdict.status,
    nonce: body.nonce,
    checkedAt,
    serverTime: checkedAt,
    boundAt,
    events,
    meters: shown,
    receipt,
  };
}

/**
 * `POST .../usage` (DESIGN.md 19): the licence as a check reads it, then the per-licence limit,
 * then the body, then the events applied under the licence-row lock; never counted among the checks.
 */
export function recordUsage(limits: UsageLimits, commits: UsageCommits) {
  return async (scope: CheckScope, body: UsageBody) => {
    const presented = readPresented(scope, body);
    const { lid } = presented.claims;
    // Counted only once the licence verified, so nobody can exhaust another licence's limit.
    const perLicence = await limits.limiter.hit(`usage:${scope.org.id}:${lid}`, limits.ratePerLicence, scope.now);
    if (!perLicence.allowed) limits.counters.rateLimited();
    if (!perLicence.allowed) throw tooManyRequests('too many usage requests for this licence', perLicence.retryAfterSeconds);
    const events = eventsOf(body);
    const term = await findTerm(scope, presented);
    if (!term) {
      const unknown = events.map((e) => ({ id: e.id, result: 'NOT_LICENSED' as const, duplicate: false }));
      return usageAnswer(limits.counters, presented, scope, body, { status: '', reason: 'UNKNOWN_LICENCE', boundAt: null, renewed: false }, unknown, []);
    }
    const judged = judgeUsage(scope, term, presented);
    const verdict = { status: judged.status, reason: judged.reason, boundAt: judged.seat?.bound_at ?? null, renewed: term.superseded };
    const read = { id: term.licence.id, lid };
    if (events.length === 0) {
      const [row, timeZone] = await Promise.all([licenceMetersRow(scope.tenant, term.licence.id), timezoneOf(scope.tenant)]);
      const meters = await balances(scope.tenant, { ...read, meters: metersOf(row.meters) }, scope.now, timeZone);
      return usageAnswer(limits.counters, presented, scope, body, verdict, [], meters);
    }
    const applied = await commits.apply(scope, {
      now: scope.now,
      licence: read,
      expected: presented.claims.mtr?.map((meter) => meter.p) ?? [],
      events,
      valid: judged.reason === null,
      machineId: judged.seat?.id ?? null,
      idsPerPeriod: limits.idsPerPeriod,
    });
    return usageAnswer(limits.counters, presented, scope, body, verdict, applied.results, applied.meters);
  };
}
