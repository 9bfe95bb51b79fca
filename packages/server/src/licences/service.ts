import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import { isReservedClaimName, licenceParams, parseFingerprint, parseLicence, signLicenceWith, type LicenceType, type ParamValue } from '@licensor/protocol';
import { recordAudit, type AuditInput, type Author } from '../audit/audit.js';
import { EXPIRING_WINDOW_MS, recordTermEvent, subscriptions } from '../audit/events.js';
import { findCustomerRow } from '../customers/repo.js';
import { findOrCreateCustomer } from '../customers/service.js';
import type { Tenant } from '../db/tenant.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { badRequest, conflict, forbidden, invalid, notFound } from '../core/errors.js';
import type { Keyring } from '../keys/keyring.js';
import { planLimitOf } from '../orgs/repo.js';
import type { SeatModel } from '../products/schemas.js';
import { licenceMeters, meterClaims, type LicenceMeter, type ProductShape } from '../products/shape.js';
import { openWrite, type IssueProduct, type ProductCache } from './opening.js';
import { localDate } from '../core/calendar.js';
import { idempotently, rememberAnswer, type IdempotentRequest, type Replay } from './idempotency.js';
import { findLicenceView, statusOf, toLicence, type LicenceRow, type LicenceView } from '../listings/repos/views.js';
import { searchText } from '../listings/repos/search.js';
import { findLicenceRow, insertLicence, insertStamp, insertVersion, lockLicenceRow, insertFirstInstallation, setStampArchived, updateLicence } from './repo.js';
import type { IssueBody, ReleaseBody, RenewBody } from './schemas.js';
import { atIssueFingerprints } from '../seats/repo.js';
import { bindAtIssue, bindSeat, releaseBindings } from '../seats/service.js';
import { holdClock, planCount, tallyChange, talliesWithin, type TallyChange } from '../listings/repos/tallies.js';
import { countsAgainstPlan, graceEnd, licenceStatus, type LicenceStatus } from '../listings/status.js';
import {
  extendedTerm,
  extendedUpdates,
  mergeFingerprints,
  resolveParams,
  termDate,
  termFrom,
  updatesFrom,
  updatesMonthsOf,
  validityMonths,
  type TermDates,
} from './terms.js';

type IssueInput = Static<typeof IssueBody>;
type RenewInput = Static<typeof RenewBody>;

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

/**
 * The organisation row is locked only when it has a plan limit: then every change that may
 * add to the count must run one at a time. Without a limit there is no count to protect, and
 * issues of one organisation run side by side.
 */
const planLock = (ctx: Ctx) => ({ lockOrganisation: ctx.org.planLimit !== null });

/** Refuses a change that would make one more licence use capacity on a full plan (DESIGN.md 3). */
async function enforcePlan(ctx: Ctx, t: Tenant, before: LicenceStatus | null, after: LicenceStatus) {
  if (!countsAgainstPlan(after) || (before !== null && countsAgainstPlan(before))) return;
  // Without a limit when the request began there is no organisation lock (planLock) to read under.
  if (ctx.org.planLimit === null) return;
  const limit = await planLimitOf(t.db, ctx.org.id);
  if (limit === null) return;
  if ((await planCount(t, await talliesWithin(ctx.database, t, ctx.now), ctx.now)) >= limit) {
    throw forbidden(`the plan's limit of ${limit} active licences is reached`);
  }
}

/**
 * Who the licence is for, resolved without writing: the name to sign as `lic`. A customer named
 * by email or by name is not read here: the issuing transaction finds (or creates) it anyway, and
 * a stored name other than the one signed sends the issue round again (CustomerMoved), signing the
 * name found, which `names` keeps for the next issue to that customer.
 */
async function intendedCustomer(t: Tenant, input: IssueInput, names: CustomerNames): Promise<{ signed: string; who: { name: string; email: string | null } }> {
  if (input.customerId != null && input.customer !== undefined) throw invalid('customer', 'send the customer or its id, not both');
  if (input.customerId != null) {
    const row = await findCustomerRow(t, input.customerId);
    if (!row) throw notFound(`no customer ${input.customerId}`);
    return { signed: row.name, who: { name: row.name, email: row.email } };
  }
  const given = input.customer ?? (input.licensee === undefined ? undefined : { name: input.licensee, email: input.licenseeEmail ?? null });
  if (!given) throw invalid('licensee', 'required (or a customer, or its id)');
  if (!given.name.trim()) throw invalid('customer.name', 'must not be blank');
  // A customer created now takes the name given, whatever was signed for one found before.
  return { signed: names.get(customerKey(t, given)) ?? given.name, who: { name: given.name, email: given.email } };
}

/** A customer's identity within its organisation: its email, or its name when it has none. */
const customerKey = (t: Tenant, who: { name: string; email: string | null }) => `customer ${t.orgId} ${who.email?.toLowerCase() ?? `named ${who.name}`}`;

/** The stored names of customers that differed from the name an issue gave, by customerKey. */
export class CustomerNames {
  private readonly byKey = new Map<string, string>();

  get(key: string): string | undefined {
    return this.byKey.get(key);
  }

  set(key: string, name: string): void {
    if (!this.byKey.has(key) && this.byKey.size >= 10_000) this.byKey.delete(this.byKey.keys().next().value!);
    this.byKey.set(key, name);
  }
}

/** What issue and renew keep between requests (licences/opening.ts). */
export interface IssueCaches {
  products: ProductCache;
  customers: CustomerNames;
}

interface SignedTerm extends TermDates {
  licenceString: string;
  keyId: number;
  issuedAt: number;
  graceDays: number;
  checkEverySeconds: number | null;
  checkMaxSeconds: number | null;
  params: Record<string, unknown>;
  meters: LicenceMeter[];
  /** DESIGN.md 20: the licence's window in months (null: none) and the term's `upd` (ms; null: signed without one). */
  updatesMonths: number | null;
  upd: number | null;
}

/** Builds and signs one term's claims (DESIGN.md 2 order). Signing happens outside any transaction. */
async function signTerm(
  ctx: Ctx,
  keyring: Keyring,
  product: IssueProduct,
  licence: {
    lid: string;
    licenceType: LicenceType;
    activation: 'ONLINE' | 'OFFLINE' | null;
    licensee: string;
    fingerprints: string[];
    maxMachines: number;
    seatModel: SeatModel;
    params: Record<string, unknown>;
    meters: LicenceMeter[];
    updatesMonths: number | null;
    upd: number | null;
  },
  dates: TermDates,
  graceDays: number,
): Promise<SignedTerm> {
  const { shape } = product;
  const online = licence.licenceType !== 'OFFLINE';
  // Every time the service writes is an ISO 8601 instant with a four-digit year.
  if (dates.expiresAt !== null && graceEnd(dates.expiresAt, graceDays)! >= YEAR_10000) {
    throw invalid('graceDays', 'the grace period would end after the year 9999');
  }
  const params = resolveParams(shape.params, licence.params);
  const floating = licence.seatModel === 'FLOATING';
  // A floating licence kept its model while its product changed: a parameter may now clash with its claims.
  const clash = floating ? params.find(([key]) => isReservedClaimName(key, true)) : undefined;
  if (clash)
    throw invalid(`params.${clash[0]}`, `a floating licence signs "${clash[0]}" as a claim; rename the product's parameter`, `Parameter "${clash[0]}"`);
  const issuedAt = Math.floor(ctx.now / 1000) * 1000;
  const { keyId, signer } = await keyring.signingKeyFor(ctx.tenant, product);
  const licenceString = await signLicenceWith(
    {
      lid: licence.lid,
      prd: shape.productKey,
      org: ctx.org.slug,
      typ: licence.licenceType,
      act: licence.activation,
      lic: licence.licensee,
      iat: issuedAt / 1000,
      nbf: seconds(dates.startsAt),
      exp: seconds(dates.expiresAt),
      grace: graceDays,
      fp: licence.fingerprints.length === 0 ? null : licence.fingerprints,
      fpn: licence.fingerprints.length === 0 ? null : shape.fingerprintNeed,
      mm: licence.maxMachines,
      chk: online ? shape.checkIntervalSeconds : null,
      max: online ? shape.maxOfflineSeconds : null,
      lse: floating ? shape.leaseSeconds : null,
      brw: floating ? shape.maxBorrowSeconds : null,
      upd: seconds(licence.upd),
      mtr: meterClaims(licence.meters),
      params,
    },
    signer.sign,
  );
  return {
    ...dates,
    licenceString,
    keyId,
    issuedAt,
    graceDays,
    checkEverySeconds: online ? shape.checkIntervalSeconds : null,
    checkMaxSeconds: online ? shape.maxOfflineSeconds : null,
    params: Object.fromEntries(params),
    meters: licence.meters,
    updatesMonths: licence.updatesMonths,
    upd: licence.upd,
  };
}

const YEAR_10000 = Date.UTC(10000, 0, 1);

/**
 * DESIGN.md 20's `updatesUntil`, stored as the downloads judge it (a release is covered when
 * published at or before it; null: every release): the term's `upd`, else its grace end (a
 * trial's end), else null. Unix seconds, as `upd` is signed; both are whole seconds.
 */
const updatesUntil = (upd: number | null, graceEndsAt: number | null) => seconds(upd ?? graceEndsAt);

const termColumns = (term: SignedTerm) => {
  const graceEndsAt = graceEnd(term.expiresAt, term.graceDays);
  return {
    issued_at: term.issuedAt,
    starts_at: term.startsAt,
    expires_at: term.expiresAt,
    grace_days: term.graceDays,
    grace_ends_at: graceEndsAt,
    check_every_seconds: term.checkEverySeconds,
    check_max_seconds: term.checkMaxSeconds,
    params: JSON.stringify(term.params),
    meters: JSON.stringify(term.meters),
    licence_string: term.licenceString,
    key_id: term.keyId,
    updates_months: term.updatesMonths,
    updates_until: updatesUntil(term.upd, graceEndsAt),
  };
};

async function answer(t: Tenant, lid: string, now: number) {
  return toLicence(await findLicenceView(t, lid, now), now);
}

/** Records a licence's audit entry (and its webhook event, from the same read) and answers with the licence as changed. */
async function auditedAnswer(t: Tenant, ctx: Ctx, entry: AuditInput & { lid: string }) {
  return recordLicenceAudit(t, ctx, await findLicenceView(t, entry.lid, ctx.now), entry);
}

/**
 * Records a licence's audit entry with its webhook event, the licence as it answers now. A term
 * issued or renewed within the expiring window raises `licence.expiring` at once (the delivery
 * loop's scan finds the others).
 */
async function recordLicenceAudit(t: Tenant, ctx: Author, view: LicenceView, entry: AuditInput): Promise<LicenceAnswer> {
  const body = toLicence(view, ctx.now);
  await recordAudit(t, ctx, { ...entry, event: () => ({ licence: body }) });
  const termBegan = ['licence.issued', 'licence.renewed', 'licence.trial_started', 'licence.trial_extended'].includes(entry.action);
  const expiring = view.revoked === 0 && view.expires_at !== null && view.expires_at > ctx.now && view.expires_at <= ctx.now + EXPIRING_WINDOW_MS;
  if (termBegan && expiring && (await subscriptions(t))('licence.expiring')) {
    await recordTermEvent(t, ctx.now, 'expiring', { licenceId: view.id, termVersion: view.term_version }, () => ({ licence: body }));
  }
  return body;
}

export type LicenceAnswer = ReturnType<typeof toLicence>;

/** What a round's transaction wrote: the answer, and the tally change to record last. */
interface Written {
  body: LicenceAnswer;
  tally: TallyChange;
}

/** Thrown in a round's transaction when what was signed no longer holds: the next round signs again, after `learn`. */
class SignAgain extends Error {
  constructor(readonly learn: () => void = () => {}) {
    super('sign again');
  }
}

/**
 * Issue's and renew's one shape: sign outside any transaction (SQLite has one writer), then
 * commit inside one only while what was signed still holds, else sign again (SignAgain). It owns
 * the idempotent answer (an earlier one replayed, this one kept in the change's transaction) and
 * the tallies, moved last. A round signs and hands its writes to `commit`.
 */
function signThenCommit(
  ctx: Ctx,
  idem: IdempotentRequest | null,
  status: 200 | 201,
  round: (commit: (write: (t: Tenant) => Promise<Written>) => Promise<LicenceAnswer>) => Promise<LicenceAnswer>,
): Promise<LicenceAnswer | Replay> {
  const commit = (write: (t: Tenant) => Promise<Written>) =>
    inTransaction(
      ctx,
      async (t) => {
        const { body, tally } = await write(t);
        await rememberAnswer(t, idem, ctx.now, status, body);
        await tally.record();
        return body;
      },
      planLock(ctx),
    );
  return idempotently(ctx.tenant, idem, ctx.now, async () => {
    for (;;) {
      try {
        return await round(commit);
      } catch (err) {
        if (!(err instanceof SignAgain)) throw err;
        err.learn();
      }
    }
  });
}

/** DESIGN.md 18: an issue that converts a trial (its row as read), keeping its machine or not. */
interface Conversion {
  trial: LicenceRow;
  /** The trial's seat: its fingerprint and label. */
  seat: { fingerprint: string; label: string | null };
  keepMachine: boolean;
}

/**
 * `POST /licenses/{lid}/convert` (DESIGN.md 18): issued exactly as `POST /licenses` under the
 * trial's product, the paid licence naming the trial (`convertedFromTrial`), the trial marked
 * converted in the same transaction (again: 409); it runs to its end and its entry stays.
 */
export async function convertTrial(
  ctx: Ctx,
  keyring: Keyring,
  caches: IssueCaches,
  lid: string,
  input: Omit<IssueInput, 'productId'> & { keepMachine?: boolean | undefined },
  idem: IdempotentRequest | null,
) {
  const trial = await findLicenceRow(ctx.tenant, lid);
  if (trial.trial !== 1) throw badRequest('only a trial can be converted');
  // Converted already: a 409 from the issue's transaction, after an Idempotency-Key's replay.
  const [seat] = await atIssueFingerprints(ctx.tenant, trial.id);
  const { keepMachine = false, ...issue } = input;
  return issueLicence(ctx, keyring, caches, { ...issue, productId: trial.product_id }, idem, { trial, seat: seat!, keepMachine });
}

/**
 * What a payment connection's issue or renewal (DESIGN.md 22) adds to it: the term's end when it
 * follows a subscription's period, its audit details, and its own writes, made in the licence's
 * transaction after the licence's (a throw there takes the licence back with it).
 */
export interface Joined {
  expiresAt?: number | undefined;
  details: Record<string, unknown>;
  write(t: Tenant, licence: { id: number; lid: string }): Promise<void>;
}

/** The actor of what a conversion does for the trial's machine (DESIGN.md 18). */
const TRIAL_ACTOR = { name: 'trial' };

export async function issueLicence(
  ctx: Ctx,
  keyring: Keyring,
  caches: IssueCaches,
  input: IssueInput,
  idem: IdempotentRequest | null,
  conversion?: Conversion,
  joined?: Joined,
): Promise<LicenceAnswer | Replay> {
  return signThenCommit(ctx, idem, 201, (commit) =>
    caches.products.with(ctx.tenant, input.productId, async (product) => {
      const { shape } = product;
      if (!shape.active) throw invalid('productId', 'the product is inactive');
      const licenceType = input.licenceType ?? shape.licenceType;
      if (!shape.allowedLicenceTypes.includes(licenceType)) {
        throw invalid('licenceType', `${licenceType} is not allowed for this product (allowed: ${shape.allowedLicenceTypes.join(', ')})`);
      }
      if (licenceType !== 'HYBRID' && input.activation !== undefined) throw invalid('activation', 'applies to HYBRID licences only');
      const activation = licenceType === 'HYBRID' ? (input.activation ?? 'ONLINE') : null;
      const given = mergeFingerprints(input.fingerprint, input.fingerprints);
      // A paid licence that cannot be bound by a check keeps the trial's machine in its signature, first.
      const signsMachine = conversion?.keepMachine === true && (licenceType === 'OFFLINE' || activation === 'OFFLINE');
      const fingerprints = signsMachine ? [...new Set([conversion.seat.fingerprint, ...given])] : given;
      if (activation === 'OFFLINE' && fingerprints.length === 0) {
        throw invalid('fingerprint', 'a HYBRID licence activated offline binds at issue and needs a fingerprint');
      }
      const { seatModel } = shape;
      // Its product allows ONLINE licences only (products/shape.ts); its seats are leases that checks take.
      if (seatModel === 'FLOATING' && fingerprints.length > 0) {
        throw invalid('fingerprint', 'a FLOATING licence has no at-issue fingerprints (its seats are leases taken by checks)');
      }
      const maxMachines = input.maxMachines ?? Math.max(shape.maxMachines, fingerprints.length);
      if (maxMachines < fingerprints.length) {
        throw invalid('maxMachines', `${maxMachines} is fewer than the ${fingerprints.length} fingerprints signed in`);
      }
      const timeZone = ctx.org.timezone;
      const date = termDate(input) ?? localDate(ctx.now, timeZone);
      const dates =
        joined?.expiresAt === undefined
          ? termFrom(date, validityMonths(input.validityMonths, shape.defaultValidityMonths), timeZone, ctx.now)
          : { startsAt: null, expiresAt: joined.expiresAt };
      const updatesMonths = updatesMonthsOf(input.updatesMonths, shape.updatesMonths, shape.params);
      // A conversion is dated today unless its body says otherwise: its window runs from then (DESIGN.md 18).
      const upd = updatesFrom(date, updatesMonths, timeZone);
      const customer = await intendedCustomer(ctx.tenant, input, caches.customers);
      const lid = randomUUID();
      const meters = licenceMeters(shape.meters, [], input.meters, licenceType === 'OFFLINE');
      const licence = {
        lid,
        licenceType,
        activation,
        licensee: customer.signed,
        fingerprints,
        maxMachines,
        seatModel,
        params: input.params ?? {},
        meters,
        updatesMonths,
        upd,
      };
      const term = await signTerm(ctx, keyring, product, licence, dates, input.graceDays ?? shape.defaultGraceDays);
      const status = licenceStatus({ revoked: false, ...dates, graceDays: term.graceDays }, ctx.now);

      return commit(async (t) => {
        // Issues that would create the same customer wait for each other here, and only they.
        const key = customerKey(t, customer.who);
        const clock = await openWrite(ctx, t, caches.products, product, key);
        await enforcePlan(ctx, t, null, status);
        const owner = await findOrCreateCustomer(t, ctx.database.dialect, ctx.actor.name, ctx.now, customer.who);
        // The name was signed before the transaction: the customer has another, which the next round signs.
        if (owner.name !== customer.signed) throw new SignAgain(() => caches.customers.set(key, owner.name));
        const tally = tallyChange(clock, t, null, { lid, archived: 0, product_id: product.id, licence_type: licenceType, revoked: 0, ...termColumns(term) });
        const row = await insertLicence(t, {
          lid,
          product_id: product.id,
          customer_id: owner.id,
          licensee: owner.name,
          licensee_email: owner.email,
          licence_type: licenceType,
          activation,
          ...termColumns(term),
          max_machines: maxMachines,
          seat_model: seatModel,
          term_version: 0,
          revoked: 0,
          revoked_at: null,
          revoked_reason: null,
          archived: 0,
          archived_at: null,
          issued_by: ctx.actor.name,
          renewed_at: null,
          rebind_count: 0,
          notes: input.notes ?? null,
          search_text: searchText({ licensee: owner.name, email: owner.email, lid, notes: input.notes ?? null }),
          converted_from_trial: conversion?.trial.lid ?? null,
          ...tally.columns,
        });
        await insertStamp(t, row.id, lid);
        await bindAtIssue(t, row.id, fingerprints, ctx.now, signsMachine ? conversion.seat.label : null);
        const kept = conversion ? await markConverted(ctx, t, conversion, { id: row.id, lid, maxMachines, bound: fingerprints.length, signsMachine }) : 0;
        // The answer (and the event's licence) is the row just written, beside what is known of it
        // without reading it again: the product (confirmed in this transaction) and the at-issue seats, bound now.
        const seats = fingerprints.length + kept;
        const view = {
          ...row,
          product_name: shape.name,
          product_key: shape.productKey,
          last_checked_at: null,
          seats_used: seats,
          bound_at: seats > 0 ? ctx.now : null,
        };
        const body = await recordLicenceAudit(t, ctx, view, {
          action: 'licence.issued',
          subjectType: 'licence',
          subjectId: lid,
          lid,
          summary: `Issued ${licenceType} licence of ${shape.name} to ${owner.name}`,
          details: {
            productId: product.id,
            customerId: owner.id,
            expiresAt: term.expiresAt && new Date(term.expiresAt).toISOString(),
            machines: fingerprints.length,
            ...joined?.details,
          },
        });
        await joined?.write(t, { id: row.id, lid });
        return { body, tally };
      });
    }),
  );
}

/** A trial's term as the service signed it (DESIGN.md 18), to be written by insertTrial. */
export interface TrialTerm {
  lid: string;
  productId: number;
  shape: ProductShape;
  licenceString: string;
  keyId: number;
  /** The start, whole seconds (ms); the end is exactly trialDays × 86,400 s later. */
  issuedAt: number;
  expiresAt: number;
  params: Record<string, unknown>;
  meters: LicenceMeter[];
  email: string | null;
  fingerprint: string;
  label: string | null;
  /** The starting installation's device key: the trial's first. */
  devicePublicKey: string;
}

/**
 * Writes a trial in the caller's transaction: the licence with no customer, licensee `Trial`,
 * issued by `trial`, its one seat bound at issue with the machine's label, its first
 * installation, audited `licence.trial_started` (no `licence.issued`, no `machine.bound`, no email
 * or label in the details). Never counted against the plan. Returns the licence's row id and the
 * move of its tallies, which the caller makes last in the transaction (tallyChange).
 */
export async function insertTrial(
  t: Tenant,
  by: Author & { database: Ctx['database'] },
  trial: TrialTerm,
): Promise<{ id: number; recordTally: () => Promise<void> }> {
  const { lid, shape } = trial;
  const clock = await holdClock(by.database, t, by.now);
  const columns = {
    issued_at: trial.issuedAt,
    starts_at: null,
    expires_at: trial.expiresAt,
    grace_days: 0,
    grace_ends_at: trial.expiresAt,
    check_every_seconds: shape.checkIntervalSeconds,
    check_max_seconds: shape.maxOfflineSeconds,
    params: JSON.stringify(trial.params),
    meters: JSON.stringify(trial.meters),
    licence_string: trial.licenceString,
    key_id: trial.keyId,
    // Signed without `upd` (DESIGN.md 18): its updates end with the trial.
    updates_months: null,
    updates_until: updatesUntil(null, trial.expiresAt),
  };
  const tally = tallyChange(clock, t, null, { lid, archived: 0, product_id: trial.productId, licence_type: 'ONLINE', revoked: 0, ...columns });
  const row = await insertLicence(t, {
    lid,
    product_id: trial.productId,
    customer_id: null,
    licensee: TRIAL_LICENSEE,
    licensee_email: trial.email,
    licence_type: 'ONLINE',
    activation: null,
    ...columns,
    max_machines: 1,
    seat_model: 'NODE_LOCKED',
    term_version: 0,
    revoked: 0,
    revoked_at: null,
    revoked_reason: null,
    archived: 0,
    archived_at: null,
    issued_by: by.actor.name,
    renewed_at: null,
    rebind_count: 0,
    notes: null,
    search_text: searchText({ licensee: TRIAL_LICENSEE, email: trial.email, lid, notes: null }),
    trial: 1,
    trial_started_at: trial.issuedAt,
    trial_installations: 1,
    ...tally.columns,
  });
  await insertStamp(t, row.id, lid);
  await bindAtIssue(t, row.id, [trial.fingerprint], by.now, trial.label);
  // Before the audit entry, so that `licence.trial_started` shows the trial as it commits: with its installation.
  await insertFirstInstallation(t, row.id, trial.devicePublicKey, by.now);
  const view = {
    ...row,
    product_name: shape.name,
    product_key: shape.productKey,
    last_checked_at: null,
    seats_used: 1,
    bound_at: by.now,
  };
  await recordLicenceAudit(t, by, view, {
    action: 'licence.trial_started',
    subjectType: 'licence',
    subjectId: lid,
    lid,
    summary: `Started a ${shape.trialDays}-day trial of ${shape.name}`,
    details: { productId: trial.productId, expiresAt: new Date(trial.expiresAt).toISOString() },
  });
  return { id: row.id, recordTally: tally.record };
}

const TRIAL_LICENSEE = 'Trial';

/**
 * In the paid licence's transaction: the trial, locked, gets trialConvertedTo and
 * trialConvertedAt (already converted: 409), audited `licence.trial_converted`; a kept machine
 * takes a seat of the paid licence as its first check would (`machine.bound`, actor `trial`).
 */
async function markConverted(
  ctx: Ctx,
  t: Tenant,
  conversion: Conversion,
  paid: { id: number; lid: string; maxMachines: number; bound: number; signsMachine: boolean },
): Promise<number> {
  const trial = await lockLicenceRow(ctx.database.dialect, t, conversion.trial.lid);
  if (trial.trial_converted_to !== null) throw conflict(`the trial is already converted to ${trial.trial_converted_to}`);
  if (conversion.keepMachine && !paid.signsMachine) {
    if (paid.bound >= paid.maxMachines) throw invalid('keepMachine', "the paid licence has no free seat for the trial's machine");
    const { fingerprint, label } = conversion.seat;
    await bindSeat(t, { actor: TRIAL_ACTOR, now: ctx.now }, paid, { fingerprint, parts: parseFingerprint(fingerprint), label: label ?? undefined });
  }
  const kept = conversion.keepMachine && !paid.signsMachine ? 1 : 0;
  await updateLicence(t, trial.id, { trial_converted_to: paid.lid, trial_converted_at: ctx.now });
  await auditedAnswer(t, ctx, {
    action: 'licence.trial_converted',
    subjectType: 'licence',
    subjectId: trial.lid,
    lid: trial.lid,
    summary: `Converted to the paid licence ${paid.lid}`,
    details: { convertedTo: paid.lid, keepMachine: conversion.keepMachine },
  });
  return kept;
}

export async function renewLicence(
  ctx: Ctx,
  keyring: Keyring,
  caches: IssueCaches,
  lid: string,
  input: RenewInput,
  idem: IdempotentRequest | null,
  joined?: Joined,
): Promise<LicenceAnswer | Replay> {
  // The renewed term commits only while the term it replaces is still current.
  return signThenCommit(ctx, idem, 200, async (commit) => {
    const current = await findLicenceRow(ctx.tenant, lid);
    if (current.trial === 1) throw badRequest('a trial is extended, not renewed: POST /licenses/{lid}/extend-trial');
    if (current.archived === 1) throw badRequest('an archived licence cannot be renewed: restore it first');
    return caches.products.with(ctx.tenant, current.product_id, async (product) => {
      const date = termDate(input);
      const timeZone = ctx.org.timezone;
      const months = () => validityMonths(input.validityMonths, product.shape.defaultValidityMonths);
      const dates =
        joined?.expiresAt !== undefined
          ? { startsAt: null, expiresAt: joined.expiresAt }
          : date === undefined
            ? extendedTerm({ startsAt: current.starts_at, expiresAt: current.expires_at }, months(), timeZone, ctx.now)
            : termFrom(date, months(), timeZone, ctx.now);
      const updatesMonths = updatesMonthsOf(input.updatesMonths, current.updates_months, product.shape.params);
      const upd =
        date === undefined ? extendedUpdates(currentUpd(current, updatesMonths), updatesMonths, timeZone, ctx.now) : updatesFrom(date, updatesMonths, timeZone);
      const atIssue = await atIssueFingerprints(ctx.tenant, current.id);
      const licence = {
        lid,
        licenceType: current.licence_type as LicenceType,
        activation: current.activation as 'ONLINE' | 'OFFLINE' | null,
        licensee: current.licensee,
        fingerprints: atIssue.map((b) => b.fingerprint),
        maxMachines: current.max_machines,
        seatModel: current.seat_model as SeatModel,
        params: { ...carriedParams(current, product.shape), ...(input.params ?? {}) },
        meters: licenceMeters(product.shape.meters, JSON.parse(current.meters) as LicenceMeter[], input.meters, current.licence_type === 'OFFLINE'),
        updatesMonths,
        upd,
      };
      const term = await signTerm(ctx, keyring, product, licence, dates, input.graceDays ?? product.shape.defaultGraceDays);
      return commit(async (t) => {
        const clock = await openWrite(ctx, t, caches.products, product);
        const fresh = await lockLicenceRow(ctx.database.dialect, t, lid);
        if (fresh.term_version !== current.term_version) throw new SignAgain();
        if (fresh.archived === 1) throw badRequest('an archived licence cannot be renewed: restore it first');
        const before = statusOf(fresh, ctx.now);
        await enforcePlan(ctx, t, before, licenceStatus({ revoked: fresh.revoked === 1, ...dates, graceDays: term.graceDays }, ctx.now));
        await supersede(t, fresh, ctx.now);
        const tally = tallyChange(clock, t, fresh, { ...fresh, ...termColumns(term) });
        await updateLicence(t, fresh.id, {
          ...termColumns(term),
          term_version: fresh.term_version + 1,
          issued_by: ctx.actor.name,
          renewed_at: ctx.now,
          ...tally.columns,
        });
        const body = await auditedAnswer(t, ctx, {
          action: 'licence.renewed',
          subjectType: 'licence',
          subjectId: lid,
          lid,
          summary: `Renewed until ${term.expiresAt === null ? 'perpetual' : new Date(term.expiresAt).toISOString()}`,
          details: {
            versionNo: fresh.term_version + 1,
            previousExpiresAt: fresh.expires_at && new Date(fresh.expires_at).toISOString(),
            ...joined?.details,
          },
        });
        await joined?.write(t, { id: fresh.id, lid });
        return { body, tally };
      });
    });
  });
}

/**
 * The current term's `upd` (ms), read only when the renewal has a window: then the product has no
 * parameter of that name, so an `upd` in the payload is the window's claim.
 */
function currentUpd(current: LicenceRow, months: number | null): number | null {
  if (months === null) return null;
  const { upd } = parseLicence(current.licence_string).claims;
  return upd === undefined ? null : upd * 1000;
}

const DAY_S = 86_400;

/** The end DESIGN.md 18's extension asks for, in Unix seconds, checked against the trial's current end and its start. */
function extendedEnd(input: { days?: number | undefined; expiresAt?: string | undefined }, currentExp: number, startedAt: number, nowS: number): number {
  if ((input.days === undefined) === (input.expiresAt === undefined)) throw invalid('days', 'send the days to add or the new end, not both and not neither');
  let exp: number;
  if (input.days !== undefined) exp = Math.max(nowS, currentExp) + input.days * DAY_S;
  else {
    const ms = Date.parse(input.expiresAt!);
    if (Number.isNaN(ms) || ms % 1000 !== 0) throw invalid('expiresAt', 'must be a time in whole seconds');
    exp = ms / 1000;
    if (exp <= nowS || exp <= currentExp) throw invalid('expiresAt', "must be later than now and than the trial's current end");
  }
  if (exp > startedAt + 365 * DAY_S) throw invalid(input.days !== undefined ? 'days' : 'expiresAt', 'a trial ends at most 365 days after it started');
  return exp;
}

/**
 * `POST /licenses/{lid}/extend-trial` (DESIGN.md 18): a new term as a renewal makes one (the old
 * term superseded, renewedAt, revoked stays revoked), carrying the current term's claims with only
 * `iat`, `exp`, `chk` and `max` new; audited `licence.trial_extended`.
 */
export async function extendTrial(
  ctx: Ctx,
  keyring: Keyring,
  caches: IssueCaches,
  lid: string,
  input: { days?: number | undefined; expiresAt?: string | undefined },
  idem: IdempotentRequest | null,
): Promise<LicenceAnswer | Replay> {
  return signThenCommit(ctx, idem, 200, async (commit) => {
    const current = await findLicenceRow(ctx.tenant, lid);
    if (current.trial !== 1) throw badRequest('only a trial can be extended');
    if (current.archived === 1) throw badRequest('an archived licence cannot be extended: restore it first');
    const claims = parseLicence(current.licence_string).claims;
    const nowS = Math.floor(ctx.now / 1000);
    const exp = extendedEnd(input, claims.exp!, Math.floor(Number(current.trial_started_at) / 1000), nowS);
    return caches.products.with(ctx.tenant, current.product_id, async (product) => {
      const { shape } = product;
      const { keyId, signer } = await keyring.signingKeyFor(ctx.tenant, product);
      const licenceString = await signLicenceWith(
        {
          ...claims,
          iat: nowS,
          exp,
          chk: shape.checkIntervalSeconds,
          max: shape.maxOfflineSeconds,
          // Never a window (DESIGN.md 18); an `upd` in a trial's payload is its product's parameter.
          upd: null,
          trl: true,
          params: licenceParams(claims) as Record<string, ParamValue>,
        },
        signer.sign,
      );
      const columns = {
        issued_at: nowS * 1000,
        expires_at: exp * 1000,
        grace_ends_at: exp * 1000,
        check_every_seconds: shape.checkIntervalSeconds,
        check_max_seconds: shape.maxOfflineSeconds,
        licence_string: licenceString,
        key_id: keyId,
        updates_until: updatesUntil(null, exp * 1000),
      };
      return commit(async (t) => {
        const clock = await openWrite(ctx, t, caches.products, product);
        const fresh = await lockLicenceRow(ctx.database.dialect, t, lid);
        if (fresh.term_version !== current.term_version) throw new SignAgain();
        if (fresh.archived === 1) throw badRequest('an archived licence cannot be extended: restore it first');
        await supersede(t, fresh, ctx.now);
        const tally = tallyChange(clock, t, fresh, { ...fresh, ...columns });
        await updateLicence(t, fresh.id, { ...columns, term_version: fresh.term_version + 1, renewed_at: ctx.now, ...tally.columns });
        const body = await auditedAnswer(t, ctx, {
          action: 'licence.trial_extended',
          subjectType: 'licence',
          subjectId: lid,
          lid,
          summary: `Extended the trial until ${new Date(exp * 1000).toISOString()}`,
          details: { versionNo: fresh.term_version + 1, previousExpiresAt: fresh.expires_at && new Date(fresh.expires_at).toISOString() },
        });
        return { body, tally };
      });
    });
  });
}

/** Keeps the current term as a superseded version (renewal and extension alike). */
async function supersede(t: Tenant, fresh: LicenceRow, now: number): Promise<void> {
  await insertVersion(t, {
    licence_id: fresh.id,
    version_no: fresh.term_version + 1,
    issued_at: fresh.issued_at,
    starts_at: fresh.starts_at,
    expires_at: fresh.expires_at,
    grace_days: fresh.grace_days,
    issued_by: fresh.issued_by,
    revoked_reason: fresh.revoked_reason,
    licence_string: fresh.licence_string,
    key_id: fresh.key_id,
    superseded_at: now,
  });
}

/** The parameter values a renewal carries over: those the product still declares. */
function carriedParams(row: LicenceRow, shape: ProductShape): Record<string, unknown> {
  const declared = new Set(shape.params.map((p) => p.key));
  return Object.fromEntries(Object.entries(JSON.parse(row.params) as Record<string, unknown>).filter(([key]) => declared.has(key)));
}

/** One flag change on a licence, with its rule, its plan check and its audit entry, in one transaction. */
async function changeLicence(
  ctx: Ctx,
  lid: string,
  change: (row: LicenceRow) => { set: Partial<LicenceRow>; action: string; summary: string; details?: Record<string, unknown>; plan?: boolean },
  joined?: Joined,
) {
  return inTransaction(
    ctx,
    async (t) => {
      const clock = await holdClock(ctx.database, t, ctx.now);
      const row = await lockLicenceRow(ctx.database.dialect, t, lid);
      const { set, action, summary, details, plan } = change(row);
      const updated = { ...row, ...set };
      if (plan) await enforcePlan(ctx, t, statusOf(row, ctx.now), statusOf(updated, ctx.now));
      const tally = tallyChange(clock, t, row, updated);
      await updateLicence(t, row.id, { ...set, ...tally.columns });
      if (set.archived !== undefined) await setStampArchived(t, row.id, set.archived);
      const audited = details || joined ? { ...details, ...joined?.details } : null;
      const body = await auditedAnswer(t, ctx, { action, subjectType: 'licence', subjectId: lid, lid, summary, details: audited });
      await joined?.write(t, { id: row.id, lid });
      await tally.record();
      return body;
    },
    planLock(ctx),
  );
}

export const revokeLicence = (ctx: Ctx, lid: string, reason: string | null, joined?: Joined) =>
  changeLicence(
    ctx,
    lid,
    (row) => {
      if (row.revoked === 1) throw badRequest('the licence is already revoked');
      return {
        set: { revoked: 1, revoked_at: ctx.now, revoked_reason: reason },
        action: 'licence.revoked',
        summary: reason ? `Revoked: ${reason}` : 'Revoked',
        details: { reason },
      };
    },
    joined,
  );

export const reinstateLicence = (ctx: Ctx, lid: string, joined?: Joined) =>
  changeLicence(
    ctx,
    lid,
    (row) => {
      if (row.archived === 1) throw badRequest('an archived licence cannot be reinstated: restore it first');
      if (row.revoked !== 1) throw badRequest('the licence is not revoked');
      return { set: { revoked: 0, revoked_at: null, revoked_reason: null }, action: 'licence.reinstated', summary: 'Reinstated', plan: true };
    },
    joined,
  );

export const archiveLicence = (ctx: Ctx, lid: string) =>
  changeLicence(ctx, lid, (row) => {
    if (row.archived === 1) throw badRequest('the licence is already archived');
    const status = statusOf(row, ctx.now);
    if (status !== 'REVOKED' && status !== 'EXPIRED') throw badRequest(`only a REVOKED or EXPIRED licence can be archived; this one is ${status}`);
    return { set: { archived: 1, archived_at: ctx.now }, action: 'licence.archived', summary: `Archived (${status})` };
  });

export const restoreLicence = (ctx: Ctx, lid: string) =>
  changeLicence(ctx, lid, (row) => {
    if (row.archived !== 1) throw badRequest('the licence is not archived');
    return { set: { archived: 0, archived_at: null }, action: 'licence.restored', summary: 'Restored from the archive', plan: true };
  });

/** Notes are never signed: replacing them changes only the record (and what `q` finds). */
export const updateNotes = (ctx: Ctx, lid: string, notes: string | null) =>
  changeLicence(ctx, lid, (row) => ({
    set: { notes, search_text: searchText({ licensee: row.licensee, email: row.licensee_email, lid: row.lid, notes }) },
    action: 'licence.notes_updated',
    summary: notes === null ? 'Cleared the notes' : 'Updated the notes',
    details: { notes },
  }));

export async function releaseBinding(ctx: Ctx, lid: string, input: Static<typeof ReleaseBody> | undefined) {
  return inTransaction(ctx, async (t) => {
    const row = await lockLicenceRow(ctx.database.dialect, t, lid);
    await releaseBindings(t, ctx, { id: row.id, lid }, input?.machineId);
    return answer(t, lid, ctx.now);
  });
}
