import {
  calendarStatus,
  graceEndsAt,
  matchScore,
  MalformedError,
  receiptMessage,
  receiptTagOf,
  type FingerprintParts,
  type LicenceClaims,
  type ParsedLicence,
} from '@licensor/protocol';
import { lockRow, type Database } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import { inTransaction } from '../core/transaction.js';
import { invalid } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { keyUnavailable, type OpenedKey } from '../keys/keyring.js';
import type { Organisation } from '../core/context.js';
import { StaleProduct, type CheckProduct } from './product-cache.js';
import { STAMP_INTERVAL_MS, type CheckWrites } from './counters.js';
import { READ_COLUMNS, readLicenceRows, SEAT_COLUMNS, supersededStrings } from './repo.js';
import { decideLease, writeLease, type SeatRow } from '../seats/leases.js';
import { isLive } from '../seats/live.js';
import { clearLeaseEnd } from '../seats/repo.js';
import { bindSeat } from '../seats/service.js';
import type { LicenceReads } from './licence-reads.js';
import { BoundedMap, type ReadFingerprint, type ReadFingerprints, type VerifiedLicences } from './remembered.js';

export type CheckReason = 'UNKNOWN_LICENCE' | 'REVOKED' | 'SUPERSEDED' | 'NOT_YET_VALID' | 'EXPIRED' | 'FINGERPRINT_MISMATCH' | 'SEATS_FULL';

/** Who asks and about what: the organisation and product the URL and check token resolved. */
/** The audit actors of the check API: its checks, and an application releasing its own seat. */
export const CHECKS = { name: 'check' };
export const SELF = { name: 'self' };

export interface CheckScope {
  database: Database;
  org: Organisation;
  tenant: Tenant;
  product: CheckProduct;
  /** True when the product was read in this request; false when it came from the cache, unconfirmed yet. */
  confirmed: boolean;
  /** CHECKS: who the audit trail says made the seats this request writes. */
  actor: typeof CHECKS;
  now: number;
  /** Where stamps and counts wait to be written together. */
  writes: CheckWrites;
  /** The licence strings this process has verified, by key set. */
  verified: VerifiedLicences;
  /** The fingerprints this process has read. */
  fingerprints: ReadFingerprints;
  /** Where licence reads outside a transaction wait to go to the database together. */
  reads: LicenceReads;
}

/** A presented licence whose signature verified with one of the product's keys, and the fingerprint sent. */
export interface Presented {
  parsed: ParsedLicence;
  claims: LicenceClaims;
  key: OpenedKey;
  fingerprint: string;
  /** fpDigest of the fingerprint: signed in the receipt, and how a floating licence finds this machine's row. */
  digest: string;
  parts: Readonly<FingerprintParts>;
  /** What the application calls this machine, when it sent a name (check only). */
  machineLabel?: string | undefined;
}

/** A fingerprint sent, read (its malformation a 400). */
function readFingerprint(scope: CheckScope, fingerprint: string): ReadFingerprint {
  try {
    return scope.fingerprints.of(fingerprint);
  } catch (err) {
    if (err instanceof MalformedError) throw invalid('fingerprint', err.message);
    throw err;
  }
}

/**
 * The licence sent, verified with the product's keys (before any lookup, so licence ids cannot be
 * probed), then the claims that tie it to this organisation and product.
 */
function readSigned(scope: CheckScope, license: string): Pick<Presented, 'parsed' | 'claims' | 'key'> {
  let read: ReturnType<VerifiedLicences['read']>;
  try {
    read = scope.verified.read(license, scope.product.keys);
  } catch (err) {
    if (err instanceof MalformedError) throw invalid('license', err.message);
    throw err;
  }
  // Refusals that depend on the product are given on the product as it is, not as cached.
  const refuse = (problem: string) => (scope.confirmed ? invalid('license', problem) : new StaleProduct());
  if (read === null) throw refuse("the signature does not verify with this product's keys");
  const { parsed, key } = read;
  const { claims } = parsed;
  if (claims.org !== scope.org.slug) throw invalid('license', 'issued by another organisation');
  if (claims.prd !== scope.product.productKey) throw refuse('issued for another product');
  return { parsed, claims, key };
}

/**
 * The 400s of DESIGN.md 5 after the body's shape: the fingerprint, then the signature and the
 * claims (readSigned), then the licence's type.
 */
export function readPresented(scope: CheckScope, body: { license: string; fingerprint: string; machineLabel?: string | undefined }): Presented {
  const fingerprint = readFingerprint(scope, body.fingerprint);
  const { parsed, claims, key } = readSigned(scope, body.license);
  if (claims.typ === 'OFFLINE') throw invalid('license', 'an OFFLINE licence has no online check');
  return { parsed, claims, key, fingerprint: body.fingerprint, digest: fingerprint.digest, parts: fingerprint.parts, machineLabel: body.machineLabel };
}

/** A licence presented to download (DESIGN.md 20): OFFLINE too, and without a fingerprint when it is OFFLINE. */
export type Downloader = Pick<Presented, 'parsed' | 'claims' | 'key' | 'digest'> & { parts: Readonly<FingerprintParts> | null };

/**
 * DESIGN.md 20's "Who may download" to its 400s: a check's without the nonce rule, OFFLINE
 * accepted; ONLINE and HYBRID licences send the machine's fingerprint.
 */
export function readDownloader(scope: CheckScope, body: { license: string; fingerprint?: string | undefined }): Downloader {
  const fingerprint = body.fingerprint === undefined ? null : readFingerprint(scope, body.fingerprint);
  const { parsed, claims, key } = readSigned(scope, body.license);
  if (claims.typ !== 'OFFLINE' && fingerprint === null)
    throw invalid('fingerprint', `${claims.typ === 'ONLINE' ? 'an ONLINE' : 'a HYBRID'} licence sends this machine's fingerprint`);
  return { parsed, claims, key, digest: fingerprint?.digest ?? '', parts: fingerprint?.parts ?? null };
}

/** A JSON column as SQLite (text) or PostgreSQL (parsed by the driver) answers it. */
const fromJson = <T>(value: string | T): T => (typeof value === 'string' ? (JSON.parse(value) as T) : value);
/** The row whose `columns` a JSON array holds the values of, in order. */
function rowOf<T>(columns: readonly string[], values: unknown[]): T {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
  return row as T;
}

/** The licence by its lid, read in the transaction `t` (under its lock), else with other checks' reads (licence-reads.ts). */
async function readLicence(scope: CheckScope, t: Tenant | null, lid: string, digest: string) {
  const row = t
    ? (await readLicenceRows(t, scope.product.id, lid, scope.now, digest))[0]
    : await scope.reads.read(scope.tenant, scope.product.id, lid, scope.now, digest);
  if (!scope.confirmed && row?.product_version !== scope.product.version) throw new StaleProduct();
  if (!row?.licence) return undefined;
  const values = fromJson(row.licence);
  const licence = rowOf<{
    id: number;
    licence_string: string;
    revoked: number;
    revoked_at: number | null;
    revoked_reason: string | null;
    max_machines: number;
    last_checked_at: number | null;
    seat_model: string;
    trial_converted_to: string | null;
    lid: string;
    floating: boolean;
  }>(READ_COLUMNS, values);
  licence.lid = lid;
  licence.floating = licence.seat_model === 'FLOATING';
  const rowsRead = fromJson(values[READ_COLUMNS.length] as string | unknown[][]).map((seat) => rowOf<SeatRow>(SEAT_COLUMNS, seat));
  const bindings = rowsRead.filter((row) => isLive(row, scope.now));
  // Set only on a floating licence's rows: this machine's lease row, live or lapsed.
  const mine = rowsRead.find((row) => row.fp_digest === digest);
  return { licence, bindings, mine };
}

type LicenceState = NonNullable<Awaited<ReturnType<typeof readLicence>>>['licence'];

/** A term is identified by its payload part (DESIGN.md 2). */
const payloadPartOf = (licenceString: string) => licenceString.slice(0, licenceString.indexOf('.'));

/** The licence the presented term belongs to with its live seats, and whether that term is superseded; null when neither known. */
export async function findTerm(scope: CheckScope, presented: Pick<Presented, 'parsed' | 'claims' | 'digest'>) {
  const read = await readLicence(scope, null, presented.claims.lid, presented.digest);
  if (!read) return null;
  if (payloadPartOf(read.licence.licence_string) === presented.parsed.payloadPart) return { ...read, superseded: false };
  const { licence } = read;
  const versions = await supersededStrings(scope.tenant, licence.id);
  const known = versions.some((v) => payloadPartOf(v.licence_string) === presented.parsed.payloadPart);
  return known ? { ...read, superseded: true } : null;
}

export type Term = NonNullable<Awaited<ReturnType<typeof findTerm>>>;

/** The seat this machine holds: the most equal components, then the oldest (DESIGN.md 5). */
export function seatOf(bindings: SeatRow[], presented: Pick<Presented, 'parts'>, need: number): SeatRow | undefined {
  let best: SeatRow | undefined;
  let bestScore = need - 1;
  for (const binding of bindings) {
    const score = matchScore(presented.parts, JSON.parse(binding.parts) as FingerprintParts);
    if (score > bestScore) [best, bestScore] = [binding, score];
  }
  return best;
}

export interface Verdict {
  /** Signed status: empty for an unknown licence. */
  status: string;
  reason: CheckReason | null;
  /** When this machine's seat was bound (its current lease began); null when it holds none. */
  boundAt: number | null;
  /** True when the check is valid only once this machine takes a free seat, or its lease end is committed. */
  bind: boolean;
  /** The seat this machine holds, when it holds one. */
  seat?: SeatRow | undefined;
  /** A floating licence: the lease end to sign, when this machine holds (or takes) a lease and the status is ACTIVE or GRACE. */
  leaseEndsAt?: number | null;
  /** SEATS_FULL on a floating licence: whole seconds until the earliest lease ends. */
  retryAfterSeconds?: number;
}

/** The verdict of DESIGN.md 5 (DESIGN.md 13 for a floating licence) for a known term, from the licence and its seats as read. */
function judge(term: Term, presented: Presented, need: number, now: number): Verdict {
  const { licence, bindings, superseded } = term;
  if (licence.floating) return judgeFloating(term, presented, now);
  const seat = seatOf(bindings, presented, need);
  const boundAt = seat?.bound_at ?? null;
  // Revocation is the licence's; the calendar is the presented term's own (for the current term they agree).
  const status = licence.revoked === 1 ? 'REVOKED' : calendarStatus(presented.claims, Math.floor(now / 1000));
  const refuse = (reason: CheckReason): Verdict => ({ status, reason, boundAt, bind: false });
  if (licence.revoked === 1) return refuse('REVOKED');
  if (superseded) return refuse('SUPERSEDED');
  if (status === 'PENDING') return refuse('NOT_YET_VALID');
  if (status === 'EXPIRED') return refuse('EXPIRED');
  if (seat) return { status, reason: null, boundAt, bind: false, seat };
  if (bindings.length < licence.max_machines) return { status, reason: null, boundAt: null, bind: true };
  return refuse(licence.max_machines === 1 ? 'FINGERPRINT_MISMATCH' : 'SEATS_FULL');
}

/**
 * A floating licence's verdict: a lease belongs to the exact fingerprint, and a valid check, or a
 * SUPERSEDED one whose own term has not passed its grace end, takes or renews it (DESIGN.md 13).
 */
function judgeFloating(term: Term, presented: Presented, now: number): Verdict {
  const { licence, bindings, mine, superseded } = term;
  const held = mine !== undefined && bindings.includes(mine) ? mine : undefined;
  const status = licence.revoked === 1 ? 'REVOKED' : calendarStatus(presented.claims, Math.floor(now / 1000));
  const refuse = (reason: CheckReason): Verdict => ({ status, reason, boundAt: held?.bound_at ?? null, bind: false, leaseEndsAt: null });
  if (licence.revoked === 1) return refuse('REVOKED');
  const usable = status === 'ACTIVE' || status === 'GRACE';
  if (superseded && !usable) return refuse('SUPERSEDED');
  if (status === 'PENDING') return refuse('NOT_YET_VALID');
  if (status === 'EXPIRED') return refuse('EXPIRED');
  const lease = decideLease(bindings, mine, licence.max_machines, presented.claims.lse!, now);
  const reason = superseded ? 'SUPERSEDED' : null;
  if (lease.end === null) return superseded ? refuse('SUPERSEDED') : { ...refuse('SEATS_FULL'), retryAfterSeconds: lease.retryAfterSeconds! };
  return { status, reason, boundAt: held?.bound_at ?? now, bind: lease.write, seat: held, leaseEndsAt: lease.end };
}

/**
 * A valid check from a seat records when it was last seen (at most once a minute) and the label
 * the application sent, when that changed: a write only when there is something new.
 */
function noteSeat(scope: CheckScope, seat: SeatRow, label: string | undefined) {
  const seenDue = seat.last_seen_at === null || scope.now - seat.last_seen_at >= STAMP_INTERVAL_MS;
  const relabel = label !== undefined && label !== seat.label;
  if (seenDue || relabel) scope.writes.stampSeat(scope.org.id, seat.id, { ...(seenDue ? { seenAt: scope.now } : {}), ...(relabel ? { label } : {}) });
}

const stampDue = (licence: LicenceState, verdict: Verdict, now: number) =>
  (verdict.reason === null || verdict.reason === 'SUPERSEDED') && (licence.last_checked_at === null || now - licence.last_checked_at >= STAMP_INTERVAL_MS);

/** The term as it is under the licence-row lock (the caller holds it): read again, to be judged again. */
export async function lockedTerm(scope: CheckScope, t: Tenant, term: Term, presented: Presented): Promise<Term> {
  await lockRow(scope.database, t.db, 'licences', term.licence.id);
  const read = (await readLicence(scope, t, term.licence.lid, presented.digest))!;
  return { ...read, superseded: term.superseded || payloadPartOf(read.licence.licence_string) !== presented.parsed.payloadPart };
}

/** A floating licence's lease write, from a term read under the lock. */
export const leaseWrite = (scope: CheckScope, fresh: Term, presented: Presented) => ({
  dialect: scope.database.dialect,
  licence: fresh.licence,
  live: fresh.bindings,
  mine: fresh.mine,
  fingerprint: presented.fingerprint,
  digest: presented.digest,
  parts: presented.parts,
  label: presented.machineLabel,
  actor: scope.actor,
  now: scope.now,
});

/**
 * Takes a free seat for this machine, or commits its lease end, under the licence-row lock: the
 * licence and its seats are read again there and judged again, so concurrent checks on any
 * instance never bind more seats (or hold more live leases) than `maxMachines`, nor two for one
 * machine. A lease end is committed here, before the receipt that signs it.
 */
function bindUnderLock(scope: CheckScope, term: Term, presented: Presented, need: number): Promise<Verdict> {
  const { now } = scope;
  return inTransaction(scope, async (t) => {
    const fresh = await lockedTerm(scope, t, term, presented);
    const { licence } = fresh;
    const verdict = judge(fresh, presented, need, now);
    if (verdict.bind && licence.floating) {
      return { ...verdict, boundAt: await writeLease(t, leaseWrite(scope, fresh, presented), verdict.leaseEndsAt!), bind: false };
    }
    if (verdict.bind) {
      await bindSeat(t, scope, licence, { fingerprint: presented.fingerprint, parts: presented.parts, label: presented.machineLabel });
    }
    return verdict.bind ? { ...verdict, boundAt: now, bind: false } : verdict;
  });
}

/** The last instant formatted: checks answered in the same millisecond share it. */
let lastInstant = { ms: -1, text: '' };
function instant(ms: number): string {
  if (lastInstant.ms !== ms) lastInstant = { ms, text: iso(ms) };
  return lastInstant.text;
}

/**
 * Stored instants formatted (a seat's bound time, a term's end): a machine's check answers the
 * same ones every time, and formatting a date costs more than the rest of the answer's fields.
 */
const storedInstants = new BoundedMap<number, string>(50_000);
function storedInstant(ms: number): string {
  let text = storedInstants.get(ms);
  if (text === undefined) storedInstants.set(ms, (text = iso(ms)));
  return text;
}

/**
 * The check answer of DESIGN.md 5, its receipt signed (outside any transaction) with the key that
 * signed the licence, under the tag the presented term's `v` chooses (SVCR2 signs `leaseEndsAt`).
 * An absent field is undefined, which the route's serializer leaves out.
 */
export async function answer(scope: CheckScope, presented: Presented, nonce: string, verdict: Verdict, term: Term | null) {
  const { claims, key } = presented;
  if (!key.signer) throw keyUnavailable(key.error!);
  const tag = receiptTagOf(claims);
  const checkedAt = instant(scope.now);
  const boundAt = verdict.boundAt === null ? '' : storedInstant(verdict.boundAt);
  const leaseEndsAt = tag === 'SVCR2' && verdict.leaseEndsAt != null ? storedInstant(verdict.leaseEndsAt) : '';
  const fields = { lid: claims.lid, status: verdict.status, nonce, checkedAt, boundAt, fpDigest: presented.digest, leaseEndsAt };
  const receipt = (await key.signer.sign(receiptMessage(fields, tag))).toString('base64url');
  const licence = term?.licence;
  const termEnds = term !== null && claims.exp !== undefined;
  const revoked = licence?.revoked === 1;
  return {
    status: verdict.status === '' ? undefined : verdict.status,
    valid: verdict.reason === null,
    lid: claims.lid,
    boundAt: boundAt === '' ? undefined : boundAt,
    leaseEndsAt: leaseEndsAt === '' ? undefined : leaseEndsAt,
    checkedAt,
    serverTime: checkedAt,
    nonce,
    receipt,
    expiresAt: termEnds ? storedInstant(claims.exp! * 1000) : undefined,
    graceEndsAt: termEnds ? storedInstant(graceEndsAt(claims.exp, claims.grace)! * 1000) : undefined,
    revokedAt: revoked ? storedInstant(licence.revoked_at!) : undefined,
    revokedReason: revoked ? (licence.revoked_reason ?? undefined) : undefined,
    renewed: term?.superseded ? true : undefined,
    checkEverySeconds: term ? claims.chk : undefined,
    checkMaxSeconds: term ? claims.max : undefined,
    reason: verdict.reason ?? undefined,
    retryAfterSeconds: verdict.retryAfterSeconds,
    // DESIGN.md 18, unsigned: the trial was converted, so the application asks for the paid licence.
    converted: licence?.trial_converted_to != null ? true : undefined,
  };
}

export type CheckAnswer = Awaited<ReturnType<typeof answer>>;

/**
 * DESIGN.md 14: a valid check from the machine an air-gapped activation's seat belongs to makes
 * it an ordinary binding (no end), so it no longer lapses, and its deactivation keeps the seat.
 */
async function keepAirGappedSeat(scope: CheckScope, seatId: number): Promise<void> {
  await clearLeaseEnd(scope.tenant, seatId);
}

export async function checkLicence(
  scope: CheckScope,
  body: { license: string; fingerprint: string; nonce: string; machineLabel?: string | undefined },
): Promise<CheckAnswer> {
  const presented = readPresented(scope, body);
  const term = await findTerm(scope, presented);
  if (!term) return answer(scope, presented, body.nonce, { status: '', reason: 'UNKNOWN_LICENCE', boundAt: null, bind: false }, null);
  const need = presented.claims.fpn ?? scope.product.fingerprintNeed;
  let verdict = judge(term, presented, need, scope.now);
  if (verdict.bind) verdict = await bindUnderLock(scope, term, presented, need);
  // Gathered with other checks' stamps (CheckWrites), once the seat, if any, is committed.
  if (stampDue(term.licence, verdict, scope.now)) scope.writes.stampLicence(scope.org.id, term.licence.id, scope.now);
  if (verdict.reason === null && verdict.seat) noteSeat(scope, verdict.seat, presented.machineLabel);
  // A floating licence's lease end is its lease, never an activation's.
  if (verdict.reason === null && !term.licence.floating && verdict.seat?.lease_ends_at != null) await keepAirGappedSeat(scope, verdict.seat.id);
  return answer(scope, presented, body.nonce, verdict, term);
}
