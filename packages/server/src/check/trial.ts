import { randomUUID } from 'node:crypto';
import { b64uDecode, MalformedError, signLicenceWith } from '@licensor/protocol';
import { lockRow } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import { ApiError, invalid, refused, tooManyRequests } from '../core/errors.js';
import { inTransaction } from '../core/transaction.js';
import type { Keyring } from '../keys/keyring.js';
import { findProductRow } from '../products/repo.js';
import { licenceMeters, meterClaims, shapeOf, type ProductShape } from '../products/shape.js';
import { noteInstallation } from '../licences/repo.js';
import { insertTrial } from '../licences/service.js';
import { activeTrials } from '../listings/repos/tallies.js';
import { resolveParams } from '../licences/terms.js';
import { addressHashes, bestMatch, equalComponents, ledgerHashes, lookupPairs, presentComponents, type LedgerHashes } from '../trials/ledger.js';
import {
  insertEntry,
  installationKnown,
  ledgerCandidates,
  limitReachedAt,
  lockedTrialState,
  setTrialNeed,
  trialLimitOf,
  type Candidate,
} from '../trials/repo.js';
import { StaleProduct } from './product-cache.js';
import { checkLicence, type CheckAnswer, type CheckScope } from './service.js';

/** The audit actor of trials the service starts (DESIGN.md 18). */
export const TRIALS = { name: 'trial' };

const DAY_MS = 86_400_000;
/** Each address limit counts an IPv6 /48 at five times its /64's. */
const SLASH48_FACTOR = 5;

export interface TrialRequest {
  fingerprint: string;
  nonce: string;
  devicePublicKey: string;
  email?: string | undefined;
  machineLabel?: string | undefined;
}

export type TrialOutcome = 'RETURNED' | 'TRIALS_OFF' | 'TRIAL_USED' | 'TRIAL_LIMIT' | 'STARTED';

export interface TrialAnswer {
  status: 200 | 201;
  body: CheckAnswer & { license: string };
}

/** What a start works with: the product as read for it, this machine's keyed hashes, the address's. */
interface Start {
  scope: CheckScope;
  request: TrialRequest;
  productId: number;
  shape: ProductShape;
  hashes: LedgerHashes;
  address: { addr: string; addr48: string | null };
}

/** Throws a refusal after counting it: every outcome is counted (`licensor_trial_requests_total`). */
const TRIALS_OFF = (why: string) => refused(`trials are off: ${why}`, 'TRIALS_OFF');

/**
 * `POST .../trial` (DESIGN.md 18), after the check gate's refusals: the body's 400s, then the
 * first outcome that applies: this machine's own trial (200), TRIALS_OFF, TRIAL_USED, TRIAL_LIMIT,
 * or a new trial (201). A start signs first, writes licence and seat, then under the product
 * row's lock looks the ledger up again, counts the limits and writes the entry, so concurrent starts on any
 * number of instances never start two trials for one machine (or two that match) nor pass a
 * limit. Either answer is the trial's current term with what a check of it answers.
 */
export async function startTrial(
  scope: CheckScope,
  request: TrialRequest,
  ip: string,
  keyring: Keyring,
  count: (outcome: TrialOutcome) => void,
): Promise<TrialAnswer> {
  try {
    const answer = await start(scope, request, ip, keyring);
    count(answer.status === 201 ? 'STARTED' : 'RETURNED');
    return answer;
  } catch (err) {
    const reason = err instanceof ApiError ? err.extra.reason : undefined;
    if (reason === 'TRIALS_OFF' || reason === 'TRIAL_USED' || reason === 'TRIAL_LIMIT') count(reason);
    throw err;
  }
}

async function start(scope: CheckScope, request: TrialRequest, ip: string, keyring: Keyring): Promise<TrialAnswer> {
  let parts: ReturnType<CheckScope['fingerprints']['of']>['parts'];
  try {
    parts = scope.fingerprints.of(request.fingerprint).parts;
  } catch (err) {
    if (err instanceof MalformedError) throw invalid('fingerprint', err.message);
    throw err;
  }
  let device: Buffer;
  try {
    device = b64uDecode(request.devicePublicKey, 'devicePublicKey');
  } catch (err) {
    if (err instanceof MalformedError) throw invalid('devicePublicKey', err.message);
    throw err;
  }
  if (device.length !== 32) throw invalid('devicePublicKey', 'must be base64url of exactly 32 bytes');
  // The policy is read afresh: a start is rare beside checks, and its refusals must not rest on a stale product.
  const row = await findProductRow(scope.tenant, scope.product.id);
  if (!row || row.version !== scope.product.version) throw new StaleProduct();
  const shape = shapeOf(row);
  const present = presentComponents(parts);
  if (present < shape.fingerprintNeed) {
    throw invalid('fingerprint', `${present} of its components are present, and this product needs at least ${shape.fingerprintNeed}`);
  }
  const k = keyring.ledgerKey(row.id);
  const s: Start = { scope, request, productId: row.id, shape, hashes: ledgerHashes(k, parts), address: addressHashes(k, ip) };

  // Outside the lock first: a returning machine (a retry, a reinstall) needs no signature and no lock.
  const candidates = await candidatesOf(s, scope.tenant, row.trial_need);
  const own = bestMatch(candidates, s.hashes, (entry) => entry.fpn);
  if (own) return returned(s, own);
  await refuseBeforeSigning(s, candidates);

  const signed = await signTrial(s, keyring, row.version);
  const outcome = await inTransaction(scope, async (t) => {
    const trialLimit = await trialLimitOf(t);
    if (trialLimit !== null) await lockRow(scope.database, t.db, 'organisations', scope.org.id);
    // The licence is written before the product's lock is taken, and rolled back with the rest
    // when the judgement under it refuses: the lock that serialises every start of the product
    // is held for the ledger's lookups and entry only.
    const written = await insertTrial(
      t,
      { actor: TRIALS, now: scope.now, database: scope.database },
      {
        ...signed,
        productId: row.id,
        shape,
        email: request.email ?? null,
        fingerprint: request.fingerprint,
        label: request.machineLabel ?? null,
        devicePublicKey: request.devicePublicKey,
      },
    );
    const state = await lockedTrialState(t, row.id);
    // Changed since it was read (a new key, another policy): judged again on the product as it is.
    if (!state || state.version !== row.version) throw new StaleProduct();
    const again = await candidatesOf(s, t, state.trial_need);
    const mine = bestMatch(again, s.hashes, (entry) => entry.fpn);
    if (mine) throw new OwnTrial(mine);
    refuseUsed(s, again);
    // The count holds the trial just written.
    if (trialLimit !== null && (await activeTrials(t, scope.now)) - 1 >= trialLimit)
      throw TRIALS_OFF(`the organisation holds its limit of ${trialLimit} trials`);
    await refuseLimits(s, t);
    await insertEntry(t, {
      product_id: row.id,
      licence_id: written.id,
      fpn: shape.fingerprintNeed,
      ...s.hashes,
      ...s.address,
      started_at: scope.now,
      reset_at: null,
    });
    // Kept the lowest: read under the lock, so a statement is spent only when it falls.
    if (state.trial_need === null || state.trial_need > shape.fingerprintNeed) await setTrialNeed(t, row.id, shape.fingerprintNeed);
    await written.recordTally();
    return null;
  }).catch((err: unknown) => {
    if (err instanceof OwnTrial) return err.entry;
    throw err;
  });
  // A match found under the lock discards the signed term: this machine's own trial answers.
  if (outcome) return returned(s, outcome);
  return { status: 201, body: await checked(s, signed.licenceString) };
}

/** Thrown under the product's lock when this machine's own trial is found there: the trial written meanwhile rolls back. */
class OwnTrial extends Error {
  constructor(readonly entry: Candidate) {
    super('own trial');
  }
}

/** Candidates of the ledger: n is the lower of the product's fingerprintNeed and its entries' lowest fpn. */
function candidatesOf(s: Start, t: Tenant, trialNeed: number | null): Promise<Candidate[]> {
  const n = Math.min(s.shape.fingerprintNeed, trialNeed ?? s.shape.fingerprintNeed);
  return ledgerCandidates(t, s.productId, lookupPairs(s.hashes, n));
}

/** Outcomes 2 and 3 as far as they can be told without the lock (the organisation's trial count waits for it). */
async function refuseBeforeSigning(s: Start, candidates: Candidate[]): Promise<void> {
  if (s.shape.trialDays === 0) throw TRIALS_OFF('this product offers none');
  if (s.scope.org.suspended) throw TRIALS_OFF('the organisation is suspended');
  refuseUsed(s, candidates);
}

/** Outcome 3: an entry matches by the product's current fingerprintNeed (below its own fpn, or outcome 1 had answered). */
function refuseUsed(s: Start, candidates: Candidate[]): void {
  const used = bestMatch(candidates, s.hashes, () => s.shape.fingerprintNeed);
  if (used)
    throw new ApiError(
      403,
      'this machine, or one like it, already had a trial of this product',
      {},
      { reason: 'TRIAL_USED', matched: equalComponents(used, s.hashes) },
    );
}

/** Outcome 4: the product's limit, then the address's (IPv6: its /64's, then its /48's at five times the limit). */
async function refuseLimits(s: Start, t: Tenant): Promise<void> {
  const { now } = s.scope;
  const limits: Array<[string, { column: 'addr' | 'addr48'; hash: string } | null, number | null]> = [
    ['this product', null, s.shape.trialDailyLimit],
    ['this address', { column: 'addr', hash: s.address.addr }, s.shape.trialAddressDailyLimit],
  ];
  if (s.address.addr48 !== null && s.shape.trialAddressDailyLimit !== null) {
    limits.push(['this network', { column: 'addr48', hash: s.address.addr48 }, s.shape.trialAddressDailyLimit * SLASH48_FACTOR]);
  }
  for (const [whose, address, limit] of limits) {
    if (limit === null) continue;
    const at = await limitReachedAt(t, s.productId, address, limit, now);
    if (at === undefined) continue;
    const error = tooManyRequests(`too many trials started from ${whose} in the last 24 hours`, (at + DAY_MS - now) / 1000);
    throw new ApiError(429, error.message, error.headers, { reason: 'TRIAL_LIMIT' });
  }
}

/** Signs a new trial's term, outside any transaction: ONLINE, one machine, no grace, `exp` exactly trialDays × 86,400 s on. */
async function signTrial(s: Start, keyring: Keyring, version: number) {
  const { scope, shape } = s;
  const lid = randomUUID();
  const iat = Math.floor(scope.now / 1000);
  const exp = iat + shape.trialDays * 86_400;
  const params = resolveParams(shape.params, shape.trialParams);
  const meters = licenceMeters(shape.meters, [], shape.trialMeters, false, 'trialMeters');
  const { keyId, signer } = await keyring.signingKeyFor(scope.tenant, { id: s.productId, version });
  const licenceString = await signLicenceWith(
    {
      lid,
      prd: shape.productKey,
      org: scope.org.slug,
      typ: 'ONLINE',
      iat,
      exp,
      grace: 0,
      fp: s.request.fingerprint,
      fpn: shape.fingerprintNeed,
      mm: 1,
      chk: shape.checkIntervalSeconds,
      max: shape.maxOfflineSeconds,
      mtr: meterClaims(meters),
      trl: true,
      params,
    },
    signer.sign,
  );
  return { lid, licenceString, keyId, issuedAt: iat * 1000, expiresAt: exp * 1000, params: Object.fromEntries(params), meters };
}

/** Outcome 1: the machine's own trial, whatever became of it, answered with its current term; this installation noted. */
async function returned(s: Start, own: Candidate): Promise<TrialAnswer> {
  const { scope, request } = s;
  if (!(await installationKnown(scope.tenant, own.licence_id, request.devicePublicKey))) {
    await inTransaction(scope, (t) => noteInstallation(t, own.licence_id, request.devicePublicKey, scope.now));
  }
  return { status: 200, body: await checked(s, own.licence_string) };
}

/** What a check of the term with this fingerprint and nonce answers (with that check's effects, `converted` included), beside the term. */
async function checked(s: Start, license: string): Promise<TrialAnswer['body']> {
  const { fingerprint, nonce, machineLabel } = s.request;
  const answer = await checkLicence(s.scope, { license, fingerprint, nonce, machineLabel });
  s.scope.writes.count(s.scope.org.id, s.scope.now);
  return { license, ...answer };
}
