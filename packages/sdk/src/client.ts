import { randomBytes, type KeyObject } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import {
  fpDigest,
  parseLicence,
  receiptGrantsLicence,
  receiptTagOf,
  verifyReceipt,
  verifyUsageReceipt,
  type LicenceClaims,
  type ReceiptTag,
  type UsageReceiptFields,
} from '@licensor/protocol';
import { acceptResponse, AirGapFiles, deactivate, devicePublicKey, endActivation, keptActivation, makeRequest } from './air-gap.js';
import { emptyState, fileStore, isObject, type StoredState, type StateKey, type StateStore, type StoredAnswer } from './store.js';
import { leaseLive, LeaseKeeper, type LeaseOptions } from './lease.js';
import { LicensorError, type LicensorErrorCode, type LicensorErrorDetails } from './errors.js';
import { collectFingerprint } from './fingerprint.js';
import { readPublicKeys, type PublicKeys } from './keys.js';
import { updatesUntilOf, verifyLicence, type LicenceRefusal, type LicenceVerification, type SignedLicence } from './verify.js';
import { BATCH_SIZE, checkEvent, licenceMeters, pendingElsewhere, UsageQueue, type LicenceMeter, type UsageEvent } from './usage.js';
import {
  feedOf,
  keepFile,
  readFeed,
  readUpdateCheck,
  updateFile,
  updateQuery,
  verifyUpdate,
  writeFeed,
  type Download,
  type FeedUrls,
  type KeptFeed,
  type Update,
  type UpdateCheck,
  type UpdateOptions,
} from './updates.js';

export interface LicenceClientOptions {
  /** The service's address, e.g. `https://licensing.example.com`. */
  baseUrl: string;
  /** The organisation's slug. */
  slug: string;
  checkId: string;
  /** The whole check token, `svcc_<checkId>_<secret>`. It identifies; it is not a secret. */
  checkToken: string;
  /** The product's public key, or its key history. */
  publicKeyPem: PublicKeys;
  /** The licence string this installation holds. */
  licence: string;
  /**
   * Where the newest term seen, the clock offset and the last verified answer are kept per
   * licence (default: fileStore() under the user's configuration directory; memoryStore() for
   * nothing on disk).
   */
  store?: StateStore;
  /** Default: the global fetch. */
  fetchImpl?: typeof fetch;
  /** Milliseconds since the epoch (default Date.now). */
  clock?: () => number;
  /** Per request (default 10,000 ms); a slower answer is no answer. */
  timeoutMs?: number;
  /** This machine's fingerprint, when the application collected it itself. */
  fingerprint?: string;
  /** Passed to collectFingerprint() when `fingerprint` is not given. */
  stableId?: string;
  /** The product key this application is: a licence signed for another product is `WRONG_PRODUCT`. */
  productKey?: string;
  /** A name for this machine that its user agreed to share (1 to 64 printable characters), shown to the vendor beside the seat. */
  machineLabel?: string;
}

/**
 * - `VALID`: the latest verified answer says licensed on this machine, and it is this call's or
 *   younger than the licence's `max` (checkMaxSeconds). For a floating licence (`v` 5) instead:
 *   until the signed `leaseEndsAt`, whatever `max` says.
 * - `STALE`: the latest verified answer said licensed but is older than `max` (or its age cannot
 *   be trusted because the clock went back), or there is no verified answer yet.
 * - `INVALID`: the licence is refused offline, or the latest verified answer said not licensed
 *   here. A negative answer stands, whatever its age, until a later verified answer says otherwise.
 */
export type CheckState = 'VALID' | 'STALE' | 'INVALID';

/** Why INVALID: an offline refusal, or what the signed status and boundAt say. */
export type InvalidReason = LicenceRefusal | 'OLDER_TERM' | 'REVOKED' | 'UNKNOWN_LICENCE' | 'NO_SEAT' | 'NOT_LICENSED';

const NO_ANSWER_CODES = ['TIMEOUT', 'NETWORK', 'HTTP_STATUS', 'BAD_RESPONSE', 'BAD_RECEIPT'] as const;
type NoAnswerCode = (typeof NO_ANSWER_CODES)[number];
const isNoAnswerCode = (code: LicensorErrorCode): code is NoAnswerCode => (NO_ANSWER_CODES as readonly string[]).includes(code);

/** Why this call's answer counted for nothing. */
export interface NoAnswer {
  code: NoAnswerCode;
  status?: number;
  message: string;
}

/**
 * Why release() freed nothing: this machine holds no seat, its seat is in the signature, the
 * licence is unknown, or (floating) its lease is borrowed until a later time.
 */
export type ReleaseRefusal = 'NO_SEAT' | 'AT_ISSUE' | 'UNKNOWN_LICENCE' | 'BORROWED';
export type ReleaseResult = { released: true; releasedAt: string } | { released: false; reason: ReleaseRefusal };

/** A check answer whose receipt verified against this licence, nonce and machine. */
export interface VerifiedAnswer extends StoredAnswer {
  /** Licensed on this machine by the signed fields: status ACTIVE or GRACE and boundAt set. */
  grants: boolean;
  /** True when it is this call's answer, false when it came from the store. */
  fresh: boolean;
  /** The service's clock minus this machine's remembered with it (milliseconds), or null. */
  offsetMs: number | null;
}

export interface CheckResult {
  state: CheckState;
  /** Why INVALID; empty otherwise. */
  reasons: InvalidReason[];
  /** The offline verification of the licence at this moment. */
  licence: LicenceVerification;
  /** The verified answer the state rests on: this call's, else the cached one, else null. */
  answer: VerifiedAnswer | null;
  /** Why this call got no verified answer; null when it got one or sent nothing (offline refusal). */
  noAnswer: NoAnswer | null;
  /** Seconds since the answer's signed checkedAt by the local clock; null without an answer. */
  ageSeconds: number | null;
  /** The local clock is earlier than the last verified checkedAt: the answer's age cannot be trusted. */
  clockRollback: boolean;
  /** This call's answer says a newer term exists (an unsigned hint): call fetch() to get and verify it. */
  renewed: boolean;
  /** VALID rests on an air-gapped activation of this machine (DESIGN.md 14), not on a check answer. */
  airGapped: boolean;
  /** The service's unsigned `reason`, for display only. */
  serverReason: string | null;
  /** For a trial licence (`trl`), its end as the service's clock judges it; null for any other. */
  trial: TrialStatus | null;
  /** Set when the state could not be saved (the result still holds). */
  storeError: Error | null;
}

/** A trial licence's end (DESIGN.md 18). */
export interface TrialStatus {
  /** The signed `exp`, ISO 8601. */
  endsAt: string;
  /** Seconds until `endsAt`, at the later of the service's time and the newest verified checkedAt; 0 once ended. */
  secondsLeft: number;
  /** The last answer said the trial was converted to a paid licence (unsigned): ask the vendor for it. */
  converted: boolean;
}

/** The options of startTrial(): a client's, without a licence (the service makes it). `productKey` is needed. */
export type TrialOptions = Omit<LicenceClientOptions, 'licence'>;

/** What startTrial() answers. */
export interface TrialStart {
  /** A client holding the trial licence, for check() and the rest. */
  client: LicenceClient;
  /** True when this call started the trial; false when the service gave this machine back its own. */
  created: boolean;
  /** The trial licence string: keep it like any licence. */
  licence: string;
  /** The trial's end (its `exp`), ISO 8601. */
  endsAt: string;
  /** The start's answer judged as check() judges one. */
  result: CheckResult;
}

/** The 403 refusals of a trial start that the application must tell apart. */
const TRIAL_REFUSALS = ['TRIALS_OFF', 'TRIAL_USED'] as const;

/** Lets startTrial() build a client before it holds a licence. */
const NO_LICENCE_YET = Symbol('trial');

/**
 * An event's result in a usage answer (DESIGN.md 19), or `QUEUED`: still on disk, to be sent
 * again (no answer yet, or `NOT_LICENSED`, the one result that is not final).
 */
export type UsageEventResult = 'ACCEPTED' | 'LIMIT_REACHED' | 'UNKNOWN_METER' | 'NOT_LICENSED' | 'TOO_OLD' | 'EVENT_LIMIT' | 'ID_REUSED' | 'QUEUED';

/** A meter's balance as the last verified usage receipt signed it, and what is queued for it here. */
export interface UsageBalance {
  key: string;
  used: number;
  /** Null: unlimited. */
  limit: number | null;
  /** Accepted past `limit`; null: no ceiling. */
  overage: number | null;
  /** `limit + overage − used`, at least 0; null without a ceiling. */
  remaining: number | null;
  /** When the period's count starts again; null for a NONE period. */
  resetsAt: string | null;
  /** The amount queued on this machine for this meter and not counted yet. */
  pending: number;
}

/** What recordUsage() and usage() answer. */
export interface UsageReport {
  /** Licensed on this machine by the signed fields of the last verified usage answer; null before any. */
  licensed: boolean | null;
  /** Why not licensed, as for a check; null when licensed or without an answer. */
  reason: InvalidReason | null;
  /** This licence's queued events this call dealt with, oldest first, each with its result. */
  events: Array<{ id: string; meter: string; amount: number; result: UsageEventResult }>;
  /** The last verified balances of every meter of the licence, in order; null before any. */
  meters: UsageBalance[] | null;
  /** True: this call's answer; false: an earlier one of this client; null: none. */
  fresh: boolean | null;
  /** Events queued here for other licences (a converted trial's, a replaced licence's): never sent for this one. */
  pending: number;
  /** Why this call got no verified answer (a 429 also holds back every send until its Retry-After). */
  noAnswer: NoAnswer | null;
  /** Set when a counted event's file could not be removed (it is sent again and answered as a duplicate). */
  storeError: Error | null;
}

/** A meter's fields that SVCU1 signs. */
type SignedMeter = Omit<UsageBalance, 'pending'>;

/** The signed part of a verified usage answer. */
interface VerifiedUsage {
  status: string;
  boundAt: string;
  events: Array<{ id: string; result: string }>;
  meters: SignedMeter[];
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** How far a remembered clock offset is believed: an edited store cannot stretch an answer's life by more. */
const MAX_OFFSET_MS = 24 * 3600_000;
/** Latency between the service signing checkedAt and the answer arriving is not a rollback. */
const ROLLBACK_TOLERANCE_MS = 60_000;

/** Online checks for one licence on this machine (DESIGN.md 2 and 6, SPEC.md 4.4). */
export class LicenceClient {
  readonly #keys: KeyObject[];
  readonly #url: string;
  readonly #checkToken: string;
  readonly #store: StateStore & {
    productDirectory?(slug: string, productKey: string): string;
    usageDirectory?(lid: string): string;
    feedFile?(key: StateKey): string;
  };
  readonly #base: string;
  readonly #fetch: typeof fetch;
  readonly #clock: () => number;
  readonly #timeoutMs: number;
  readonly #stableId: string | undefined;
  readonly #slug: string;
  readonly #productKey: string | undefined;
  readonly #machineLabel: string | undefined;
  #fingerprint: string | undefined;
  #licence: string;
  /** The newest term seen by this client, beside the one remembered in the store. */
  #newestIat = 0;
  /** When a borrow() of this client ends (ms); a borrowed lease is never released by the lease helper. */
  #borrowedUntil = 0;
  /** The last verified usage answer of this client, and for which licence. */
  #usage: { lid: string; answer: VerifiedUsage } | null = null;
  /** Nothing is sent to the usage endpoint before this time (ms), after a 429's Retry-After. */
  #usageRetryAt = 0;
  /** The feed token this client holds (a memory-only store keeps it nowhere else). */
  #feed: KeptFeed | null = null;

  constructor(options: LicenceClientOptions);
  constructor(options: TrialOptions, trial: typeof NO_LICENCE_YET);
  constructor(options: LicenceClientOptions | TrialOptions, trial?: typeof NO_LICENCE_YET) {
    const required = ['baseUrl', 'slug', 'checkId', 'checkToken', ...(trial ? (['productKey'] as const) : (['licence'] as const))] as const;
    for (const name of required) {
      const value = (options as Partial<Record<string, unknown>>)[name];
      if (typeof value !== 'string' || value === '') {
        throw new LicensorError('INVALID_OPTIONS', `${name} must be a non-empty string`);
      }
    }
    if (!options.checkToken.startsWith(`svcc_${options.checkId}_`)) {
      throw new LicensorError('INVALID_OPTIONS', 'checkToken must be the whole svcc_<checkId>_<secret> token for this checkId');
    }
    const licence = 'licence' in options && !trial ? options.licence : '';
    if (licence !== '' && licenceType(licence) === 'OFFLINE') {
      throw new LicensorError('NOT_CHECKABLE', 'an OFFLINE licence has no check path: use verifyLicence()');
    }
    this.#keys = readPublicKeys(options.publicKeyPem);
    const base = options.baseUrl.replace(/\/+$/, '');
    this.#base = `${base}/o/${encodeURIComponent(options.slug)}/api/public`;
    this.#url = `${this.#base}/license/${encodeURIComponent(options.checkId)}`;
    this.#checkToken = options.checkToken;
    this.#store = options.store ?? fileStore();
    this.#fetch = options.fetchImpl ?? fetch;
    this.#clock = options.clock ?? Date.now;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#fingerprint = options.fingerprint;
    this.#stableId = options.stableId;
    this.#slug = options.slug;
    this.#productKey = options.productKey;
    this.#machineLabel = options.machineLabel;
    this.#licence = licence;
  }

  /**
   * Starts a trial of the product on this machine (DESIGN.md 18), or gets this machine's own
   * trial back (after a reinstall, or a retry): call it from the application's first run or a
   * "Start trial" button, never from an installer. `email` is optional and needs the user's
   * consent. The licence must verify with the product's keys, carry `trl` and match this
   * machine (`BAD_LICENCE`), its receipt verify (`BAD_RECEIPT`), and no older term than one seen
   * (`OLDER_TERM`). Refusals: `TRIALS_OFF`, `TRIAL_USED` (with `matched`), `HTTP_STATUS` 429 with
   * `retryAfterSeconds`; needs the file store (the installation's device key), else
   * `INVALID_OPTIONS`.
   */
  static async startTrial(options: TrialOptions, { email }: { email?: string } = {}): Promise<TrialStart> {
    const client = new LicenceClient(options, NO_LICENCE_YET);
    return client.#startTrial(email);
  }

  async #startTrial(email: string | undefined): Promise<TrialStart> {
    if (email !== undefined && (typeof email !== 'string' || email === ''))
      throw new LicensorError('INVALID_OPTIONS', 'email must be a non-empty string when given');
    const directory = this.#store.productDirectory?.(this.#slug, this.#productKey!);
    if (directory === undefined)
      throw new LicensorError('INVALID_OPTIONS', 'a trial counts installations by a device key kept on disk: it needs the file store, not a memory-only one');
    const dpk = await devicePublicKey(new AirGapFiles(directory), this.fingerprint);
    const now = this.#clock();
    const nonce = randomBytes(24).toString('base64url');
    const sent = {
      fingerprint: this.fingerprint,
      nonce,
      devicePublicKey: dpk,
      ...(email ? { email } : {}),
      ...(this.#machineLabel ? { machineLabel: this.#machineLabel } : {}),
    };
    const { status, body } = await this.#send('trial', sent);
    if (typeof body.license !== 'string') throw new LicensorError('BAD_RESPONSE', 'the trial answer has no licence string');
    const licence = this.#verify(body.license, now);
    if (!licence.signed) throw new LicensorError('BAD_LICENCE', `the trial licence does not verify: ${licence.message}`);
    const { claims } = licence;
    if (claims.trl !== true || claims.exp === undefined) throw new LicensorError('BAD_LICENCE', 'the licence answered is not a trial');
    if (licence.reasons.includes('WRONG_PRODUCT')) throw new LicensorError('BAD_LICENCE', 'the trial licence is for another product');
    if (licence.fingerprintMatch !== true) throw new LicensorError('BAD_LICENCE', 'the trial licence is for another machine');
    if (body.lid !== claims.lid) throw new LicensorError('BAD_LICENCE', "the answer is not the trial licence's");
    const kept = await this.#load(claims);
    if (claims.iat < (kept.newestIat ?? 0)) throw new LicensorError('OLDER_TERM', 'the trial term answered is older than one already seen');
    const fresh = this.#verifyAnswer(body, claims.lid, nonce, now, receiptTagOf(claims));
    this.#licence = body.license;
    // Judged at the service's time, as check() judges a trial: an answered trial may have ended.
    const judged = this.#verify(body.license, trialNow(fresh.offsetMs, fresh, now)) as SignedLicence;
    const result = await this.#judgeFresh(judged, fresh, body, { clockRollback: false, now, newestIat: kept.newestIat ?? 0 });
    return { client: this, created: status === 201, licence: body.license, endsAt: new Date(claims.exp * 1000).toISOString(), result };
  }

  /** The licence string in use: the one given, or the term fetch() last returned. */
  get licence(): string {
    return this.#licence;
  }

  /** The end (ms since the epoch) of the lease this client borrowed, 0 when it borrowed none. */
  get borrowedUntil(): number {
    return this.#borrowedUntil;
  }

  /** This machine's fingerprint, collected once. */
  get fingerprint(): string {
    this.#fingerprint ??= collectFingerprint({ stableId: this.#stableId }).fingerprint;
    return this.#fingerprint;
  }

  /**
   * Asks the service about the licence with a fresh nonce and judges its answer by the signed
   * fields only. Never throws for what the service does: a timeout, any non-200, an unparseable
   * body or a receipt that does not verify is "no answer", and the state rests on the last
   * verified answer kept.
   */
  check(): Promise<CheckResult> {
    return this.#ask('check', {});
  }

  /**
   * check() and borrow(): the same request (borrow adds `until`) and the same judgement. `vet`
   * sees the licence verified offline before anything else and may throw (borrow's floating test).
   */
  async #ask(endpoint: 'check' | 'borrow', extra: Record<string, string>, vet?: (licence: LicenceVerification) => void): Promise<CheckResult> {
    const now = this.#clock();
    if (this.#licence === '') throw new LicensorError('INVALID_OPTIONS', 'this client holds no licence');
    const offline = this.#verify(this.#licence, now);
    vet?.(offline);
    // The presented term alone chooses the receipt's tag (DESIGN.md 13).
    const tag = offline.signed ? receiptTagOf(offline.claims) : 'SVCR1';
    const kept = offline.signed ? await this.#load(offline.claims) : { ...emptyState(), verified: null };
    const cached = kept.verified;
    // A trial ends by the service's time, never by a clock set back (DESIGN.md 18).
    const licence = isTrial(offline.claims) ? this.#verify(this.#licence, trialNow(kept.offsetMs, cached, now)) : offline;
    // Measured against the answer known before this call: a fresh answer proves itself by its nonce.
    const clockRollback = cached !== null && serviceNow(kept.offsetMs, now) < Date.parse(cached.checkedAt) - ROLLBACK_TOLERANCE_MS;
    const result = {
      licence,
      clockRollback,
      serverReason: null,
      storeError: null,
      noAnswer: null,
      airGapped: false,
      trial: trialStatus(licence, cached, kept.offsetMs, now),
    };
    const newestIat = Math.max(this.#newestIat, kept.newestIat ?? 0);
    const olderTerm = licence.signed && licence.claims.iat < newestIat;

    // SPEC 4.4 rule 5: a licence that fails locally is never sent.
    if (!licence.valid || olderTerm) {
      const reasons: InvalidReason[] = [...licence.reasons, ...(olderTerm ? (['OLDER_TERM'] as const) : [])];
      return { ...result, ...judge(cached, kept.offsetMs, now, clockRollback, 0), state: 'INVALID', reasons };
    }

    const nonce = randomBytes(24).toString('base64url');
    const sent = {
      license: this.#licence,
      fingerprint: this.fingerprint,
      nonce,
      ...extra,
      ...(this.#machineLabel ? { machineLabel: this.#machineLabel } : {}),
    };
    let fresh: VerifiedAnswer;
    let body: Record<string, unknown>;
    try {
      body = await this.#post(endpoint, sent);
      fresh = this.#verifyAnswer(body, licence.claims.lid, nonce, now, tag);
    } catch (error) {
      if (!(error instanceof LicensorError) || !isNoAnswerCode(error.code)) throw error;
      const noAnswer: NoAnswer = { code: error.code, message: error.message };
      if (error.status !== undefined) noAnswer.status = error.status;
      return this.#orAirGapped({ ...result, noAnswer, ...judge(cached, kept.offsetMs, now, clockRollback, maxSeconds(licence)) }, licence.claims, now);
    }
    return this.#judgeFresh(licence, fresh, body, { clockRollback, now, newestIat });
  }

  /** Keeps a fresh verified answer and judges it (check(), borrow() and startTrial()). */
  async #judgeFresh(
    licence: SignedLicence,
    fresh: VerifiedAnswer,
    body: Record<string, unknown>,
    { clockRollback, now, newestIat }: { clockRollback: boolean; now: number; newestIat: number },
  ): Promise<CheckResult> {
    const files = this.#airGapFiles(licence.claims);
    // A later verified answer that says not licensed ends an air-gapped activation here (DESIGN.md 14).
    if (!fresh.grants && files) await endActivation(files, licence.claims.lid, this.fingerprint).catch(() => undefined);

    this.#newestIat = Math.max(newestIat, licence.claims.iat);
    const storeError = await this.#keep(licence.claims, fresh);
    return {
      licence,
      clockRollback,
      airGapped: false,
      noAnswer: null,
      serverReason: typeof body.reason === 'string' ? body.reason : null,
      storeError,
      trial: trialStatus(licence, fresh, fresh.offsetMs, now),
      ...judge(fresh, fresh.offsetMs, now, clockRollback, maxSeconds(licence)),
      // Only startTrial() hands in a licence refused offline (check() never sends one).
      ...(licence.valid ? {} : { state: 'INVALID' as const, reasons: [...licence.reasons] }),
    };
  }

  /**
   * Fetches the current term of this licence (after `renewed`), verifies it offline with the
   * product's key(s) and checks that it is the same licence (`lid`); then uses it for later
   * checks and returns it. Throws LicensorError for any failure; never called by check().
   */
  async fetch(): Promise<string> {
    const now = this.#clock();
    const current = this.#verify(this.#licence, now);
    if (!current.signed) throw new LicensorError('BAD_LICENCE', `the licence in use does not verify: ${current.message}`);
    const body = await this.#post('fetch', { license: this.#licence, fingerprint: this.fingerprint });
    if (typeof body.license !== 'string') throw new LicensorError('BAD_RESPONSE', 'the fetch answer has no licence string');
    const next = this.#verify(body.license, now);
    if (!next.signed) throw new LicensorError('BAD_LICENCE', `the fetched licence does not verify: ${next.message}`);
    if (next.claims.lid !== current.claims.lid) throw new LicensorError('LID_MISMATCH', 'the fetched licence is another licence');
    if (next.reasons.includes('WRONG_PRODUCT')) throw new LicensorError('BAD_LICENCE', 'the fetched licence is for another product');
    const kept = await this.#load(current.claims);
    const newestIat = Math.max(this.#newestIat, kept.newestIat ?? 0, current.claims.iat);
    if (next.claims.iat < newestIat) throw new LicensorError('OLDER_TERM', 'the fetched term is older than one already seen');
    this.#newestIat = next.claims.iat;
    await this.#update(current.claims, (state) => ({ ...state, newestIat: Math.max(state.newestIat ?? 0, next.claims.iat) }));
    this.#licence = body.license;
    return body.license;
  }

  /**
   * Frees this machine's seat ("Deactivate this computer", DESIGN.md 12), so the licence can be
   * used on another machine; afterwards the kept answer is forgotten and the next check()
   * starts fresh (the newest term seen and the clock offset are kept). Answers the service's
   * verdict: `{ released: true, releasedAt }`, or `{ released: false, reason }` (`NO_SEAT`,
   * `AT_ISSUE`, `UNKNOWN_LICENCE`). Throws LicensorError for anything else: `HTTP_STATUS` 403
   * when the product's limit is reached.
   */
  async release(): Promise<ReleaseResult> {
    const licence = this.#verify(this.#licence, this.#clock());
    if (!licence.signed) throw new LicensorError('BAD_LICENCE', `the licence in use does not verify: ${licence.message}`);
    const nonce = randomBytes(24).toString('base64url');
    const body = await this.#post('release', { license: this.#licence, fingerprint: this.fingerprint, nonce });
    if (body.nonce !== nonce || body.lid !== licence.claims.lid || typeof body.released !== 'boolean') {
      throw new LicensorError('BAD_RESPONSE', 'the release answer is not for this licence and request');
    }
    if (body.released) {
      await this.clearCache();
      return { released: true, releasedAt: String(body.releasedAt) };
    }
    return { released: false, reason: String(body.reason) as ReleaseRefusal };
  }

  /**
   * Starts an air-gapped activation (DESIGN.md 14) on a machine that never reaches the service:
   * a request signed by this installation's device key (made once per product and machine, kept
   * with the licences' state), replacing any pending one. Show `groups` for typing, or `request`
   * as a QR code; the vendor's portal or console answers it with a response for
   * activateAirGapped(). Needs the file store: with a memory-only one it throws INVALID_OPTIONS.
   */
  async createAirGapRequest(): Promise<{ request: string; groups: string }> {
    const { claims, files } = this.#airGap();
    return makeRequest(files, claims.lid, this.fingerprint, this.#clock());
  }

  /**
   * Accepts the response to the pending request (pasted or typed; whitespace is ignored). From
   * then until `until` check() is VALID on this machine with no network (`airGapped: true`).
   * Throws BAD_ACTIVATION for a response not for this installation, machine, pending request or
   * product, for an activation deactivated here, or one that does not verify.
   */
  async activateAirGapped(response: string): Promise<{ until: string; activationId: string }> {
    const { claims, files } = this.#airGap();
    if (typeof response !== 'string') throw new LicensorError('BAD_ACTIVATION', 'the response must be a string');
    const fields = await acceptResponse(files, response, claims.lid, this.fingerprint, this.#keys);
    return { until: new Date(fields.until * 1000).toISOString(), activationId: fields.aid };
  }

  /**
   * Ends this machine's air-gapped activation: forgets it here first (it is never accepted
   * again), then answers the code this installation's key signs, for the vendor's portal or
   * console to free the seat. Throws BAD_ACTIVATION when there is no activation to end.
   */
  async deactivateAirGapped(): Promise<{ code: string; groups: string }> {
    const { claims, files } = this.#airGap();
    return deactivate(files, claims.lid, this.fingerprint, this.#clock());
  }

  #airGapFiles(claims: LicenceClaims): AirGapFiles | null {
    const directory = this.#store.productDirectory?.(claims.org, claims.prd);
    return directory === undefined ? null : new AirGapFiles(directory);
  }

  /** The licence's claims and its product's air-gap files; the device key needs a state directory. */
  #airGap(): { claims: LicenceClaims; files: AirGapFiles } {
    const licence = this.#verify(this.#licence, this.#clock());
    if (!licence.signed) throw new LicensorError('BAD_LICENCE', `the licence in use does not verify: ${licence.message}`);
    const files = this.#airGapFiles(licence.claims);
    if (files === null)
      throw new LicensorError('INVALID_OPTIONS', 'air-gapped activation keeps a device key on disk: it needs the file store, not a memory-only one');
    return { claims: licence.claims, files };
  }

  /**
   * Without a verified answer that says licensed, a kept air-gapped activation of this machine
   * makes the state VALID until its `until`, unless a verified answer signed after it said not
   * licensed; a local clock earlier than its `iat` is a rollback (STALE).
   */
  async #orAirGapped(result: CheckResult, claims: LicenceClaims, now: number): Promise<CheckResult> {
    const files = this.#airGapFiles(claims);
    if (result.state === 'VALID' || files === null) return result;
    const activation = await keptActivation(files, claims.lid, this.fingerprint, this.#keys).catch(() => null);
    if (activation === null || !activation.usable) return result;
    const { iat, until } = activation.fields;
    const answer = result.answer;
    if (answer !== null && !answer.grants && Date.parse(answer.checkedAt) >= iat * 1000) return result;
    if (now < iat * 1000 - ROLLBACK_TOLERANCE_MS) return { ...result, state: 'STALE', reasons: [], clockRollback: true };
    if (now >= until * 1000) return result;
    return { ...result, state: 'VALID', reasons: [], airGapped: true };
  }

  /**
   * Forgets the kept answer for this licence, so the next check() rests on its own answer
   * alone. The newest term seen and the clock offset stay (DESIGN.md 12): forgetting them would
   * let an older term back in, or a wound-back clock pass. A licence that does not verify has no state.
   */
  async clearCache(): Promise<void> {
    const licence = this.#verify(this.#licence, this.#clock());
    if (!licence.signed) return;
    const error = await this.#update(licence.claims, (state) => ({ ...state, answer: null }));
    if (error) throw error;
  }

  /**
   * Borrows this machine's lease of a floating licence until `until` (DESIGN.md 13), to work
   * offline meanwhile: the machine must hold a live lease (check first), and `until` be within
   * the licence's `brw` seconds. Answers like check(), its state resting on the borrowed
   * `leaseEndsAt`; a refusal (403 "borrowing is off", "all borrowable seats are borrowed", no live
   * lease; 400 beyond `brw`) is no answer, with its status, as an unreachable service is. Throws
   * INVALID_OPTIONS for a licence that is not floating or a time that is not one.
   */
  async borrow(until: Date | string | number): Promise<CheckResult> {
    const end = new Date(until);
    if (Number.isNaN(end.getTime())) throw new LicensorError('INVALID_OPTIONS', 'until must be a date');
    // A licence that fails offline is refused by #ask without being sent.
    const result = await this.#ask('borrow', { until: end.toISOString() }, (licence) => {
      if (licence.signed && licence.claims.v !== 5) throw new LicensorError('INVALID_OPTIONS', 'borrowing needs a floating licence (v 5)');
    });
    if (result.answer?.fresh && result.answer.grants && result.answer.leaseEndsAt) this.#borrowedUntil = Date.parse(result.answer.leaseEndsAt);
    return result;
  }

  /**
   * Holds this machine's lease of a floating licence while the application runs (DESIGN.md 13):
   * checks every max(lse / 3, 60 s) with ±10% jitter, reports a lease at risk and a lost one,
   * fetches a renewed term, and releases the lease on stop() and on SIGINT/SIGTERM (never a
   * borrowed one). Resolves with the first check's result once it is taken; see LeaseKeeper.
   */
  async keepLease(options: LeaseOptions = {}): Promise<LeaseKeeper> {
    const keeper = new LeaseKeeper(this, this.#clock, options);
    await keeper.start();
    return keeper;
  }

  /** The licence's signed meters (`mtr` claim, DESIGN.md 19); none when it does not verify or has none. */
  get meters(): LicenceMeter[] {
    const licence = this.#verify(this.#licence, this.#clock());
    return licence.signed ? licenceMeters(licence.claims) : [];
  }

  /**
   * The end of the update window (DESIGN.md 20), offline from the newest verified term: its
   * `upd`, else its grace end (a trial's end), else null (every release). Null too when the
   * licence does not verify. Means nothing for a product whose parameter is named `upd`.
   */
  updatesUntil(): Date | null {
    const licence = this.#verify(this.#licence, this.#clock());
    return licence.signed ? updatesUntilOf(licence.claims) : null;
  }

  /**
   * Asks the licence's `latest.json` feed (DESIGN.md 20) for the highest release above
   * `currentVersion` that this licence may download, with files for this platform and arch
   * (default: this machine's), and for the highest one above it that the licence may not
   * (`blocked`: its window ended, or it does not meet the release's `requires`). The feed token is
   * asked for once and kept per licence; a 403 forgets it and asks again, once. An update is kept
   * only when its manifest verifies with one of the product's keys given to this client and says
   * this product, its version and channel, and a version above `currentVersion`: else
   * BAD_MANIFEST. Throws INVALID_OPTIONS for a version, platform, arch or channel the feed would
   * refuse, BAD_LICENCE for a licence that does not verify, and the service's failures (TIMEOUT,
   * NETWORK, HTTP_STATUS with `reason` when it named one, BAD_RESPONSE).
   */
  async checkForUpdate(options: UpdateOptions): Promise<UpdateCheck> {
    const query = updateQuery(options);
    const claims = this.#signedClaims();
    const kept = await this.#keptFeed(claims);
    let answer: Record<string, unknown>;
    try {
      answer = await this.#latest(kept ?? (await this.#askFeed(claims)), query);
    } catch (error) {
      if (!(error instanceof LicensorError) || error.status !== 403) throw error;
      // A reset, a new seat or a revocation: the kept token is worth nothing now.
      await this.#forgetFeed(claims);
      if (kept === null) throw error;
      answer = await this.#latest(await this.#askFeed(claims), query);
    }
    const { update, blocked } = readUpdateCheck(answer);
    const expected = { org: this.#slug, productKey: this.#productKey ?? claims.prd, currentVersion: options.currentVersion };
    return { update: update && verifyUpdate(update, this.#keys, expected), blocked };
  }

  /**
   * Downloads `filename` of an update checkForUpdate() answered into the folder `to` (made if
   * missing), streaming its feed URL to a temporary file there, and keeps it as `to/filename` only
   * when its size and SHA-256 are the signed manifest's; else the file is deleted and
   * DIGEST_MISMATCH thrown. INVALID_OPTIONS for a filename the update does not list;
   * HTTP_STATUS (with `reason`) when the service refuses the file; TIMEOUT when no bytes come for
   * the client's timeout.
   */
  async download(update: Update, filename: string, to: string): Promise<Download> {
    const file = updateFile(update, filename, this.#keys);
    if (typeof to !== 'string' || to === '') throw new LicensorError('INVALID_OPTIONS', 'to must be the folder to download into');
    const timer = deadline(this.#timeoutMs);
    try {
      const response = await timer.race(this.#fetch(file.url, { headers: { accept: '*/*' }, signal: timer.signal })).catch(unreachable);
      if (response.status !== 200) throw httpStatus(response, await timer.race(response.text()).catch(() => ''));
      if (response.body === null) throw new LicensorError('BAD_RESPONSE', 'the file answer has no body');
      // The timeout holds between chunks, not for the whole file.
      return await keepFile(response.body, to, file, (step) => {
        timer.arm();
        return timer.race(step).catch((error: unknown) => {
          if (error instanceof LicensorError) throw error;
          throw new LicensorError('NETWORK', `the download was cut off: ${(error as Error).message}`);
        });
      });
    } finally {
      timer.clear();
    }
  }

  /**
   * The licence's feed URLs for this machine (electron-updater, Tauri, Sparkle, `latest.json`):
   * asked for on each call (the same until a reset or a new seat) and kept; the kept ones when no
   * answer comes (TIMEOUT, NETWORK). They are secrets: they download the licence's releases.
   */
  async feedUrls(): Promise<FeedUrls> {
    const claims = this.#signedClaims();
    try {
      return (await this.#askFeed(claims)).urls;
    } catch (error) {
      const kept = error instanceof LicensorError && (error.code === 'TIMEOUT' || error.code === 'NETWORK') ? await this.#keptFeed(claims) : null;
      if (kept === null) throw error;
      return kept.urls;
    }
  }

  #signedClaims(): LicenceClaims {
    const licence = this.#verify(this.#licence, this.#clock());
    if (!licence.signed) throw new LicensorError('BAD_LICENCE', `the licence in use does not verify: ${licence.message}`);
    return licence.claims;
  }

  /** Where the file store keeps this licence's feed token; undefined in memory, or for names that never become a path. */
  #feedFile(claims: LicenceClaims): string | undefined {
    try {
      return this.#store.feedFile?.(stateKey(claims));
    } catch {
      return undefined;
    }
  }

  async #keptFeed(claims: LicenceClaims): Promise<KeptFeed | null> {
    const file = this.#feedFile(claims);
    if (file !== undefined) this.#feed = await readFeed(file, claims.lid);
    return this.#feed?.lid === claims.lid ? this.#feed : null;
  }

  /** POSTs `feed-token` and keeps the answer; a failure to save it is no failure (it is asked for again). */
  async #askFeed(claims: LicenceClaims): Promise<KeptFeed> {
    const feed = feedOf(claims.lid, await this.#post('feed-token', { license: this.#licence, fingerprint: this.fingerprint }));
    this.#feed = feed;
    const file = this.#feedFile(claims);
    if (file !== undefined) await writeFeed(file, feed).catch(() => undefined);
    return feed;
  }

  async #forgetFeed(claims: LicenceClaims): Promise<void> {
    this.#feed = null;
    const file = this.#feedFile(claims);
    if (file !== undefined) await rm(file, { force: true }).catch(() => undefined);
  }

  /** `GET …/feeds/{token}/latest.json`: no credential header, the token is the path. */
  async #latest(feed: KeptFeed, query: URLSearchParams): Promise<Record<string, unknown>> {
    return (await this.#json(`${this.#base}/feeds/${feed.token}/latest.json?${query}`, { method: 'GET', headers: { accept: 'application/json' } })).body;
  }

  /**
   * Counts `amount` (an integer from 1 to 10^9) of `meter` for this licence (DESIGN.md 19): the
   * event is written to this machine's queue first (`<stateDir>/usage/<lid>/`), then the queue is
   * sent oldest first, and each event leaves the queue only when a verified receipt gives it a
   * final result, so a crash or an unreachable service loses nothing and a resend counts nothing
   * twice. Throws INVALID_OPTIONS for a meter that is not a key, an amount out of range or a
   * memory-only store, NOT_CHECKABLE for an OFFLINE licence, QUEUE_FULL at 1,000 queued events,
   * all adding nothing; the service's failures are `noAnswer`, never thrown.
   */
  async recordUsage(meter: string, amount = 1): Promise<UsageReport> {
    checkEvent(meter, amount);
    const { claims, queue } = this.#usageQueue();
    if (queue === null)
      throw new LicensorError(
        'INVALID_OPTIONS',
        'usage events are queued on disk before they are sent: recordUsage needs the file store, not a memory-only one',
      );
    const kept = await this.#load(claims);
    await queue.add(meter, amount, new Date(serviceNow(kept.offsetMs, this.#clock())).toISOString());
    return this.#sendUsage(claims, queue);
  }

  /** Sends this licence's queued events (or none, to read the balances) and reports as recordUsage() does. */
  async usage(): Promise<UsageReport> {
    const { claims, queue } = this.#usageQueue();
    return this.#sendUsage(claims, queue);
  }

  /** The signed licence in use and its usage queue (null with a memory-only store). */
  #usageQueue(): { claims: LicenceClaims; queue: UsageQueue | null } {
    const licence = this.#verify(this.#licence, this.#clock());
    if (!licence.signed) throw new LicensorError('BAD_LICENCE', `the licence in use does not verify: ${licence.message}`);
    if (licence.claims.typ === 'OFFLINE') throw new LicensorError('NOT_CHECKABLE', 'an OFFLINE licence has no meters and no check path');
    const directory = this.#store.usageDirectory?.(licence.claims.lid);
    return { claims: licence.claims, queue: directory === undefined ? null : new UsageQueue(directory) };
  }

  /** Sends the queue in batches until it is empty, an answer is missing or an event is NOT_LICENSED. */
  async #sendUsage(claims: LicenceClaims, queue: UsageQueue | null): Promise<UsageReport> {
    const queued: UsageEvent[] = queue === null ? [] : await queue.events();
    const results = new Map<string, string>();
    let noAnswer: NoAnswer | null = null;
    let fresh = false;
    let storeError: Error | null = null;
    if (this.#clock() < this.#usageRetryAt) {
      noAnswer = { code: 'HTTP_STATUS', status: 429, message: 'the service asked to wait before sending usage again' };
    } else {
      for (let offset = 0; offset === 0 || offset < queued.length; offset += BATCH_SIZE) {
        const batch = queued.slice(offset, offset + BATCH_SIZE);
        let answer: VerifiedUsage;
        try {
          answer = await this.#postUsage(claims, batch);
        } catch (error) {
          if (!(error instanceof LicensorError) || !isNoAnswerCode(error.code)) throw error;
          noAnswer = { code: error.code, message: error.message };
          if (error.status !== undefined) noAnswer.status = error.status;
          if (error.status === 429) this.#usageRetryAt = this.#clock() + (error.retryAfterSeconds ?? 60) * 1000;
          break;
        }
        fresh = true;
        this.#usage = { lid: claims.lid, answer };
        for (const { id, result } of answer.events) {
          results.set(id, result);
          // Every verified result is final but NOT_LICENSED (DESIGN.md 19).
          if (result !== 'NOT_LICENSED') await queue!.remove(id).catch((error: Error) => (storeError = error));
        }
        if (answer.events.some((event) => event.result === 'NOT_LICENSED')) break;
      }
    }
    const events = queued.map(({ id, meter, amount }) => ({ id, meter, amount, result: (results.get(id) ?? 'QUEUED') as UsageEventResult }));
    const kept = this.#usage?.lid === claims.lid ? this.#usage.answer : null;
    const waiting = (key: string) =>
      events.filter((e) => e.meter === key && (e.result === 'QUEUED' || e.result === 'NOT_LICENSED')).reduce((sum, e) => sum + e.amount, 0);
    const licensed = kept === null ? null : receiptGrantsLicence(kept);
    return {
      licensed,
      reason: kept === null || licensed ? null : signedReason(kept),
      events,
      meters: kept === null ? null : kept.meters.map((meter) => ({ ...meter, pending: waiting(meter.key) })),
      fresh: kept === null ? null : fresh,
      pending: queue === null ? 0 : await pendingElsewhere(path.dirname(queue.directory), claims.lid),
      noAnswer,
      storeError,
    };
  }

  /** One usage request with a fresh nonce; answers its signed part once the SVCU1 receipt verifies. */
  async #postUsage(claims: LicenceClaims, events: UsageEvent[]): Promise<VerifiedUsage> {
    const nonce = randomBytes(24).toString('base64url');
    const body = await this.#post('usage', { license: this.#licence, fingerprint: this.fingerprint, nonce, events });
    const { status = '', checkedAt, boundAt = '', receipt } = body;
    const answered = parseUsageLists(body.events, body.meters);
    if (typeof status !== 'string' || typeof boundAt !== 'string' || typeof checkedAt !== 'string' || typeof receipt !== 'string' || answered === null) {
      throw new LicensorError('BAD_RESPONSE', 'the usage answer lacks the receipt fields');
    }
    // The ids are the ones sent, in order, so an answer to another request cannot verify.
    const sameIds = answered.events.length === events.length && answered.events.every((event, i) => event.id === events[i]!.id);
    const fields: UsageReceiptFields = { lid: claims.lid, status, nonce, checkedAt, boundAt, fpDigest: fpDigest(this.fingerprint), ...answered };
    if (!sameIds || Number.isNaN(Date.parse(checkedAt)) || !verifyUsageReceipt(fields, receipt, this.#keys)) {
      throw new LicensorError('BAD_RECEIPT', 'the usage receipt does not verify for this licence, nonce, machine and events');
    }
    return { status, boundAt, ...answered };
  }

  #verify(licence: string, now: number): LicenceVerification {
    return verifyLicence(licence, this.#keys, { now, fingerprint: this.fingerprint, productKey: this.#productKey, organisation: this.#slug });
  }

  /** Keeps a fresh verified answer, its clock offset and the newest term seen. */
  #keep(claims: LicenceClaims, fresh: VerifiedAnswer): Promise<Error | null> {
    return this.#update(claims, (state) => ({
      newestIat: Math.max(state.newestIat ?? 0, this.#newestIat),
      offsetMs: fresh.offsetMs,
      answer: storedPart(fresh),
    }));
  }

  /** Changes the kept state; a failure is reported, never thrown (the answer still holds). */
  async #update(claims: LicenceClaims, change: (state: StoredState) => StoredState): Promise<Error | null> {
    try {
      await this.#store.update(stateKey(claims), change);
      return null;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /** POSTs JSON and returns the 200 answer's object; everything else is a LicensorError. */
  async #post(endpoint: 'check' | 'fetch' | 'release' | 'borrow' | 'usage' | 'feed-token', body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return (await this.#send(endpoint, body)).body;
  }

  /** POSTs JSON; a 200 (and a trial's 201) answers its status and object, everything else is a LicensorError. */
  async #send(
    endpoint: 'check' | 'fetch' | 'release' | 'borrow' | 'usage' | 'trial' | 'feed-token',
    body: Record<string, unknown>,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const init = {
      method: 'POST',
      headers: { authorization: `Bearer ${this.#checkToken}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    };
    return this.#json(`${this.#url}/${endpoint}`, init, (response, text) => {
      if (response.status === 200 || (endpoint === 'trial' && response.status === 201)) return null;
      return endpoint === 'trial' ? trialRefusal(response, text) : httpStatus(response, text);
    });
  }

  /**
   * One request under the client's timeout: the status and JSON object of an answer `refusal`
   * accepts (null; by default a 200's). Everything else is a LicensorError.
   */
  async #json(
    url: string,
    init: RequestInit,
    refusal: (response: Response, text: string) => LicensorError | null = (response, text) => (response.status === 200 ? null : httpStatus(response, text)),
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const timer = deadline(this.#timeoutMs);
    try {
      // Raced as well as aborted, so that a fetchImpl that ignores the signal still times out.
      const response = await timer.race(this.#fetch(url, { ...init, signal: timer.signal })).catch(unreachable);
      const text = await timer.race(response.text()).catch((error: unknown) => {
        if (error instanceof LicensorError) throw error;
        throw new LicensorError('NETWORK', `the answer was cut off: ${(error as Error).message}`);
      });
      const refused = refusal(response, text);
      if (refused) throw refused;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new LicensorError('BAD_RESPONSE', 'the answer is not JSON');
      }
      if (!isObject(parsed)) throw new LicensorError('BAD_RESPONSE', 'the answer is not a JSON object');
      return { status: response.status, body: parsed };
    } finally {
      timer.clear();
    }
  }

  /**
   * Rebuilds the receipt from the answer's status, checkedAt and boundAt and from what this
   * client knows itself (the licence's lid, the nonce it sent, this machine's fpDigest), so a
   * receipt for another licence, nonce or machine cannot verify.
   */
  #verifyAnswer(body: Record<string, unknown>, lid: string, nonce: string, now: number, tag: ReceiptTag): VerifiedAnswer {
    const { status = '', checkedAt, boundAt = '', receipt } = body;
    // Read only when the tag signs it: an SVCR1 answer's lease end would vouch for nothing.
    const leaseEndsAt = tag === 'SVCR2' ? (body.leaseEndsAt ?? '') : '';
    if (
      typeof status !== 'string' ||
      typeof boundAt !== 'string' ||
      typeof checkedAt !== 'string' ||
      typeof receipt !== 'string' ||
      typeof leaseEndsAt !== 'string'
    ) {
      throw new LicensorError('BAD_RESPONSE', 'the answer lacks the receipt fields');
    }
    // The verdict comes from the signed fields alone (DESIGN.md 2): the unsigned `valid` and
    // `reason` are not read, so altering them on the way changes nothing.
    const answer: StoredAnswer = {
      tag,
      lid,
      status,
      nonce,
      checkedAt,
      boundAt,
      fpDigest: fpDigest(this.fingerprint),
      leaseEndsAt,
      receipt,
      renewed: body.renewed === true,
      converted: body.converted === true,
    };
    const verified = this.#verified(answer, true, Math.round(Date.parse(checkedAt) - now));
    if (verified === null) throw new LicensorError('BAD_RECEIPT', 'the receipt does not verify for this licence, nonce and machine');
    return verified;
  }

  #verified(answer: StoredAnswer, fresh: boolean, offsetMs: number | null): VerifiedAnswer | null {
    if (answer.tag === 'SVCR1' && answer.leaseEndsAt !== '') return null;
    if (Number.isNaN(Date.parse(answer.checkedAt))) return null;
    if (!verifyReceipt(answer, answer.receipt, this.#keys, answer.tag)) return null;
    return { ...answer, grants: receiptGrantsLicence(answer, answer.tag), fresh, offsetMs };
  }

  /** The kept state, its answer only if it still verifies for this licence and machine; unreadable state is empty. */
  async #load(claims: LicenceClaims): Promise<StoredState & { verified: VerifiedAnswer | null }> {
    let state: StoredState;
    try {
      state = await this.#store.load(stateKey(claims));
    } catch {
      state = emptyState();
    }
    const answer = state.answer;
    // Kept under the other tag, it is no answer for this term (the term alone chooses, DESIGN.md 13).
    const mine = answer !== null && answer.lid === claims.lid && answer.fpDigest === fpDigest(this.fingerprint) && answer.tag === receiptTagOf(claims);
    return { ...state, verified: mine ? this.#verified(answer, false, state.offsetMs) : null };
  }
}

/** The state of a licence lives under its own signed organisation and product. */
function stateKey(claims: LicenceClaims): StateKey {
  return { slug: claims.org, productKey: claims.prd, lid: claims.lid };
}

function licenceType(licence: string): string | undefined {
  try {
    return parseLicence(licence).claims.typ;
  } catch {
    return undefined;
  }
}

/** The signed offline window; a licence without `max` gets none, so only a fresh answer is VALID. */
function maxSeconds(licence: LicenceVerification): number {
  return licence.claims?.max ?? 0;
}

function storedPart({ tag, lid, status, nonce, checkedAt, boundAt, fpDigest, leaseEndsAt, receipt, renewed, converted }: StoredAnswer): StoredAnswer {
  return { tag, lid, status, nonce, checkedAt, boundAt, fpDigest, leaseEndsAt, receipt, renewed, converted };
}

/** A licence is a trial exactly when `trl` is the boolean true (DESIGN.md 18). */
function isTrial(claims: LicenceClaims | null): claims is LicenceClaims & { exp: number } {
  return claims !== null && claims.trl === true && claims.exp !== undefined;
}

/** The time a trial is judged at: the later of the service's time and the newest verified checkedAt. */
function trialNow(offsetMs: number | null, answer: StoredAnswer | null, now: number): number {
  return Math.max(serviceNow(offsetMs, now), answer === null ? -Infinity : Date.parse(answer.checkedAt));
}

function trialStatus(licence: LicenceVerification, answer: StoredAnswer | null, offsetMs: number | null, now: number): TrialStatus | null {
  if (!isTrial(licence.claims)) return null;
  const end = licence.claims.exp * 1000;
  return {
    endsAt: new Date(end).toISOString(),
    secondsLeft: Math.max(0, Math.floor((end - trialNow(offsetMs, answer, now)) / 1000)),
    converted: answer?.converted === true,
  };
}

/** A refused trial start: the reasons an application tells apart, else the status (a 429 with its Retry-After). */
function trialRefusal(response: Response, text: string): LicensorError {
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // A body that is not JSON names no reason: the status says it.
  }
  const message = typeof body.error === 'string' ? body.error : `the service answered ${response.status}`;
  const reason =
    (TRIAL_REFUSALS as readonly unknown[]).includes(body.reason) && response.status === 403 ? (body.reason as (typeof TRIAL_REFUSALS)[number]) : null;
  if (reason === 'TRIAL_USED') {
    const matched = Array.isArray(body.matched) ? body.matched.filter((name): name is string => typeof name === 'string') : [];
    return new LicensorError('TRIAL_USED', message, undefined, { matched });
  }
  if (reason === 'TRIALS_OFF') return new LicensorError('TRIALS_OFF', message);
  return new LicensorError('HTTP_STATUS', message, response.status, {
    ...retryAfter(response),
    ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
  });
}

/** A 429's Retry-After (a trial limit, a usage rate): whole seconds only; an absent or other header says nothing. */
function retryAfter(response: Response): LicensorErrorDetails {
  const value = response.headers.get('retry-after')?.trim() ?? '';
  return response.status === 429 && /^[0-9]{1,9}$/.test(value) ? { retryAfterSeconds: Number(value) } : {};
}

/** A refusal: HTTP_STATUS with its status, a 429's Retry-After and the answer's `reason` when it named one. */
function httpStatus(response: Response, text: string): LicensorError {
  let reason: string | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed) && typeof parsed.reason === 'string') reason = parsed.reason;
  } catch {
    // A body that is not JSON names no reason: the status says it.
  }
  return new LicensorError('HTTP_STATUS', `the service answered ${response.status}`, response.status, {
    ...retryAfter(response),
    ...(reason === undefined ? {} : { reason }),
  });
}

function unreachable(error: unknown): never {
  if (error instanceof LicensorError) throw error;
  throw new LicensorError('NETWORK', `the service cannot be reached: ${(error as Error).message}`);
}

/**
 * A timeout that aborts its signal and rejects `race` with TIMEOUT `ms` after it was (re)armed;
 * `arm` starts it again (a download's timeout runs between chunks).
 */
function deadline(ms: number) {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let expire: (error: LicensorError) => void = () => {};
  const expired = new Promise<never>((_, reject) => (expire = reject));
  // Nobody may be racing it when it fires (between chunks): that is no unhandled rejection.
  expired.catch(() => undefined);
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      controller.abort();
      expire(new LicensorError('TIMEOUT', `no answer within ${ms} ms`));
    }, ms);
  };
  arm();
  return { signal: controller.signal, arm, race: <T>(step: Promise<T>) => Promise.race([step, expired]), clear: () => clearTimeout(timer) };
}

/** The service's time now, as this machine's clock and the remembered offset tell it. */
function serviceNow(offsetMs: number | null, now: number): number {
  return now + Math.max(-MAX_OFFSET_MS, Math.min(MAX_OFFSET_MS, offsetMs ?? 0));
}

/** The state from the latest verified answer (the licence already verified offline). */
function judge(answer: VerifiedAnswer | null, offsetMs: number | null, now: number, clockRollback: boolean, max: number) {
  const ageSeconds = answer === null ? null : (serviceNow(offsetMs, now) - Date.parse(answer.checkedAt)) / 1000;
  const base = { answer, ageSeconds, renewed: answer?.fresh === true && answer.renewed, reasons: [] as InvalidReason[] };
  if (answer === null) return { ...base, state: 'STALE' as const };
  if (!answer.grants) return { ...base, state: 'INVALID' as const, reasons: [signedReason(answer)] };
  // A floating licence is licensed until its signed lease end, whatever `max` says (DESIGN.md 13).
  if (answer.tag === 'SVCR2')
    return { ...base, state: (answer.fresh || !clockRollback) && leaseLive(answer.leaseEndsAt, offsetMs, now) ? ('VALID' as const) : ('STALE' as const) };
  if (answer.fresh) return { ...base, state: 'VALID' as const };
  if (clockRollback || ageSeconds! > max) return { ...base, state: 'STALE' as const };
  return { ...base, state: 'VALID' as const };
}

/** A usage answer's `events` as `{id, result}` and `meters` as their signed fields, or null when not of that form. */
function parseUsageLists(events: unknown, meters: unknown): Pick<VerifiedUsage, 'events' | 'meters'> | null {
  if (!Array.isArray(events) || !Array.isArray(meters)) return null;
  const count = (value: unknown): value is number | null => value === null || (Number.isSafeInteger(value) && (value as number) >= 0);
  const parsedEvents: VerifiedUsage['events'] = [];
  for (const event of events) {
    if (!isObject(event) || typeof event.id !== 'string' || typeof event.result !== 'string') return null;
    parsedEvents.push({ id: event.id, result: event.result });
  }
  const parsedMeters: SignedMeter[] = [];
  for (const meter of meters) {
    if (!isObject(meter) || typeof meter.key !== 'string' || !Number.isSafeInteger(meter.used) || (meter.used as number) < 0) return null;
    const { limit, overage, remaining, resetsAt } = meter;
    if (!count(limit) || !count(overage) || !count(remaining) || (resetsAt !== null && typeof resetsAt !== 'string')) return null;
    parsedMeters.push({ key: meter.key, used: meter.used as number, limit, overage, remaining, resetsAt });
  }
  return { events: parsedEvents, meters: parsedMeters };
}

function signedReason(answer: { status: string }): InvalidReason {
  switch (answer.status) {
    case '':
      return 'UNKNOWN_LICENCE';
    case 'REVOKED':
      return 'REVOKED';
    case 'PENDING':
      return 'NOT_YET_VALID';
    case 'EXPIRED':
      return 'EXPIRED';
    case 'ACTIVE':
    case 'GRACE':
      return 'NO_SEAT';
    default:
      return 'NOT_LICENSED';
  }
}
