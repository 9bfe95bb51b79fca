import { calendarStatus, graceEndsAt } from '@licensor/protocol';
import { recordAudit } from '../audit/audit.js';
import { lockRow } from '../db/database.js';
import { inTransaction } from '../core/transaction.js';
import { forbidden, invalid, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { liveBindings, markReleased } from '../seats/repo.js';
import { releaseSelf } from '../seats/self-release.js';
import { machineData } from '../seats/service.js';
import { writeLease } from '../seats/leases.js';
import {
  answer,
  findTerm,
  SELF,
  leaseWrite,
  lockedTerm,
  readPresented,
  seatOf,
  type CheckAnswer,
  type CheckScope,
  type Presented,
  type Term,
  type Verdict,
} from './service.js';

/** This machine's live lease on a floating licence: its exact fingerprint's row (DESIGN.md 13). */
export const heldLease = (term: Pick<Term, 'mine' | 'bindings'>) => (term.mine !== undefined && term.bindings.includes(term.mine) ? term.mine : undefined);

/**
 * The current term for an installation that holds a live seat (SPEC 4.4), or on a floating
 * licence a live lease: no trust on first use, and never a binding. The presented term may be
 * current or superseded.
 */
export async function fetchLicence(scope: CheckScope, body: { license: string; fingerprint: string }): Promise<{ license: string }> {
  const presented = readPresented(scope, body);
  const term = await findTerm(scope, presented);
  if (!term) throw notFound(`no licence ${presented.claims.lid} holds this term`);
  if (term.licence.revoked === 1) throw forbidden('the licence is revoked');
  const graceEnd = graceEndsAt(presented.claims.exp, presented.claims.grace);
  if (graceEnd !== null && Math.floor(scope.now / 1000) >= graceEnd) throw forbidden('the presented licence is past its grace end');
  if (term.bindings.length === 0) throw forbidden('the licence is not bound to any machine yet: check first');
  const holds = term.licence.floating ? heldLease(term) : seatOf(term.bindings, presented, presented.claims.fpn ?? scope.product.fingerprintNeed);
  if (!holds)
    throw forbidden(
      term.licence.floating ? 'this machine holds no live lease of the licence: check first' : 'this fingerprint matches no machine bound to the licence',
    );
  return { license: term.licence.licence_string };
}

export type ReleaseReason = 'NO_SEAT' | 'AT_ISSUE' | 'UNKNOWN_LICENCE' | 'BORROWED';
export type ReleaseAnswer =
  | { lid: string; released: true; releasedAt: string; nonce: string }
  | { lid: string; released: false; nonce: string; reason: ReleaseReason };

/**
 * The application frees its own seat (DESIGN.md 12): the live seat whose recorded fingerprint
 * equals this one in all five components (a near match, which a check accepts, does not
 * release), under the licence-row lock and within the product's limit. On a floating licence it
 * ends this machine's lease at once and is never counted (a lease frees itself anyway), except a
 * borrowed one, which only an operator frees before its `until` (DESIGN.md 13).
 */
export async function releaseOwnSeat(scope: CheckScope, body: { license: string; fingerprint: string; nonce: string }): Promise<ReleaseAnswer> {
  const presented = readPresented(scope, body);
  const { lid } = presented.claims;
  const refused = (reason: ReleaseReason) => ({ lid, released: false as const, nonce: body.nonce, reason });
  const released = { lid, released: true as const, releasedAt: iso(scope.now), nonce: body.nonce };
  const term = await findTerm(scope, presented);
  if (!term) return refused('UNKNOWN_LICENCE');
  const parts = JSON.stringify(presented.parts);
  return inTransaction(scope, async (t) => {
    if (term.licence.floating) {
      const lease = heldLease(await lockedTerm(scope, t, term, presented));
      if (!lease) return refused('NO_SEAT');
      if (lease.borrowed_until !== null && lease.borrowed_until > scope.now) return refused('BORROWED');
      // A return, like a lapse, is not audited one by one (DESIGN.md 13).
      await markReleased(t, lease, SELF.name, scope.now);
      return released;
    }
    await lockRow(scope.database, t.db, 'licences', term.licence.id);
    const seats = await liveBindings(t, term.licence.id, scope.now);
    const seat = seats.find((s) => s.parts === parts);
    if (!seat) return refused('NO_SEAT');
    if (seat.at_issue === 1) return refused('AT_ISSUE');
    await releaseSelf(
      t,
      { licenceId: term.licence.id, lid, bindingId: seat.id, parts: seat.parts, lease_ends_at: seat.lease_ends_at },
      scope.product.selfReleaseLimit,
      { actor: SELF, now: scope.now },
    );
    return released;
  });
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?(?:Z|[+-]\d{2}:\d{2})$/;

/** `until` of a borrow: an ISO 8601 instant, later than now and within the signed `brw`. */
function borrowEnd(scope: CheckScope, presented: Presented, until: string): number {
  const end = ISO_TIME.test(until) ? Date.parse(until) : Number.NaN;
  if (Number.isNaN(end)) throw invalid('until', 'must be an ISO 8601 time, such as 2026-12-01T09:00:00Z');
  if (presented.claims.v !== 5) throw invalid('license', 'only a floating licence can be borrowed');
  const brw = presented.claims.brw ?? 0;
  if (brw === 0) throw forbidden('borrowing is off');
  if (end <= scope.now) throw invalid('until', 'must be in the future');
  if (end - scope.now > brw * 1000) throw invalid('until', `at most ${brw.toLocaleString('en-GB')} seconds ahead (the longest this licence may borrow)`);
  return end;
}

/**
 * Borrowing (DESIGN.md 13): a machine holding a live lease keeps it until `until`, to work
 * offline, within the signed `brw` and the product's `maxBorrowedSeats`. Answers like a check,
 * with the borrowed end as `leaseEndsAt`; the end is committed before the receipt is signed.
 */
export async function borrowLease(scope: CheckScope, body: { license: string; fingerprint: string; nonce: string; until: string }): Promise<CheckAnswer> {
  const presented = readPresented(scope, body);
  const until = borrowEnd(scope, presented, body.until);
  const term = await findTerm(scope, presented);
  if (!term) throw notFound(`no licence ${presented.claims.lid} holds this term`);
  if (term.superseded) throw forbidden('this term was renewed: fetch the current licence, check, then borrow');
  const status = calendarStatus(presented.claims, Math.floor(scope.now / 1000));
  if (status !== 'ACTIVE' && status !== 'GRACE') throw forbidden(`the licence is ${status}, not valid now`);
  const verdict = await inTransaction(scope, async (t): Promise<Verdict> => {
    const fresh = await lockedTerm(scope, t, term, presented);
    const held = heldLease(fresh);
    if (fresh.licence.revoked === 1) throw forbidden('the licence is revoked');
    if (!held) throw forbidden('no live lease on this machine: check first');
    const borrowed = fresh.bindings.filter((row) => row !== held && row.borrowed_until !== null && row.borrowed_until > scope.now);
    if (borrowed.length >= scope.product.maxBorrowedSeats) throw forbidden('all borrowable seats are borrowed');
    // Neither a borrow nor a check ever shortens a lease or an earlier borrow.
    const end = Math.max(held.lease_ends_at!, until);
    const borrowUntil = Math.max(held.borrowed_until ?? 0, until);
    const boundAt = await writeLease(t, leaseWrite(scope, fresh, presented), end, borrowUntil);
    await recordAudit(t, scope, {
      action: 'machine.borrowed',
      subjectType: 'machine',
      subjectId: held.id,
      lid: fresh.licence.lid,
      event: () => machineData(t, held.id, fresh.licence.lid, scope.now),
      summary: `Machine ${held.id} borrowed its lease until ${iso(borrowUntil)}`,
      details: { until: iso(borrowUntil) },
    });
    return { status, reason: null, boundAt, bind: false, leaseEndsAt: end };
  });
  return answer(scope, presented, body.nonce, verdict, term);
}
