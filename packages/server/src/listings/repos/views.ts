import type { Selectable } from 'kysely';
import { parseLicence, type LicenceType } from '@licensor/protocol';
import type { LicencesTable } from '../../db/schema.js';
import { preparedQuery, type Tenant } from '../../db/tenant.js';
import { notFound } from '../../core/errors.js';
import { iso } from '../../core/schemas.js';
import { liveBinding } from '../../seats/live.js';
import { checkHealth, licenceStatus, type LicenceStatus } from '../status.js';

export type LicenceRow = Selectable<LicencesTable>;

/** A licence row with what its answers show beside it at `now`: product names and live seats (a floating licence's live leases). */
export function licenceViews(t: Tenant, now: number) {
  return t
    .selectFrom('licences')
    .innerJoin('products', (join) => join.onRef('products.id', '=', 'licences.product_id').onRef('products.org_id', '=', 'licences.org_id'))
    .leftJoin('licence_stamps', (join) => join.onRef('licence_stamps.licence_id', '=', 'licences.id').onRef('licence_stamps.org_id', '=', 'licences.org_id'))
    .selectAll('licences')
    .select((eb) => [
      'products.name as product_name',
      'products.product_key as product_key',
      'licence_stamps.last_checked_at',
      eb
        .selectFrom('machine_bindings')
        .select((b) => b.fn.countAll<number>().as('n'))
        .whereRef('machine_bindings.licence_id', '=', 'licences.id')
        .where(liveBinding('machine_bindings', now))
        .as('seats_used'),
      eb
        .selectFrom('machine_bindings')
        .select((b) => b.fn.min<number>('machine_bindings.bound_at').as('b'))
        .whereRef('machine_bindings.licence_id', '=', 'licences.id')
        .where(liveBinding('machine_bindings', now))
        .as('bound_at'),
    ]);
}

export type LicenceView = LicenceRow & {
  product_name: string;
  product_key: string;
  last_checked_at: number | null;
  seats_used: number | null;
  bound_at: number | null;
};

// Every write to a licence answers with it: built and compiled once (preparedQuery).
const readView = preparedQuery((t, lid: string, now: number) => licenceViews(t, now).where('licences.lid', '=', lid));

/** The views of the given licences, in the order of `lids`. */
export async function viewsInOrder(t: Tenant, lids: string[], now: number): Promise<LicenceView[]> {
  if (lids.length === 0) return [];
  const views = (await licenceViews(t, now).where('licences.lid', 'in', lids).execute()) as LicenceView[];
  const byLid = new Map(views.map((v) => [v.lid, v]));
  return lids.map((lid) => byLid.get(lid)!);
}

/** Up to `limit` licences in list form, newest first, archived ones included: all, or one product's or customer's. */
export async function listViews(
  t: Tenant,
  now: number,
  filter: { productId?: number | undefined; customerId?: number | undefined; trial?: boolean | undefined },
  limit: number,
): Promise<LicenceView[]> {
  let rows = licenceViews(t, now);
  if (filter.productId !== undefined) rows = rows.where('licences.product_id', '=', filter.productId);
  if (filter.customerId !== undefined) rows = rows.where('licences.customer_id', '=', filter.customerId);
  if (filter.trial !== undefined) rows = rows.where('licences.trial', '=', filter.trial ? 1 : 0);
  return (await rows.orderBy('licences.issued_at', 'desc').orderBy('licences.lid', 'desc').limit(limit).execute()) as LicenceView[];
}

/** The licences on the books, neither revoked nor expired, that expire next. */
export async function nextToExpire(t: Tenant, now: number, limit: number): Promise<LicenceView[]> {
  return (await licenceViews(t, now)
    .where('licences.archived', '=', 0)
    .where('licences.revoked', '=', 0)
    .where('licences.expires_at', '>', now)
    .orderBy('licences.expires_at')
    .orderBy('licences.lid')
    .limit(limit)
    .execute()) as LicenceView[];
}

export async function findLicenceView(t: Tenant, lid: string, now: number): Promise<LicenceView> {
  const [view] = await readView(t, lid, now);
  if (!view) throw notFound(`no licence ${lid}`);
  return view as LicenceView;
}

export function statusOf(row: Pick<LicenceRow, 'revoked' | 'starts_at' | 'expires_at' | 'grace_days'>, now: number): LicenceStatus {
  return licenceStatus({ revoked: row.revoked === 1, startsAt: row.starts_at, expiresAt: row.expires_at, graceDays: row.grace_days }, now);
}

/** How many licences each product or customer holds (archived ones included: they still exist). */
export async function countLicencesBy(t: Tenant, column: 'product_id' | 'customer_id', ids: readonly number[]): Promise<Map<number, number>> {
  const counts = new Map(ids.map((id) => [id, 0]));
  if (ids.length === 0) return counts;
  const rows = await t
    .selectFrom('licences')
    .select([column, (eb) => eb.fn.countAll<number>().as('n')])
    .where(column, 'in', [...ids])
    .groupBy(column)
    .execute();
  for (const row of rows) counts.set(Number(row[column as keyof typeof row]), Number(row.n));
  return counts;
}

export const claimsOf = (licenceString: string) => parseLicence(licenceString).claims as Record<string, unknown>;

/** A licence in list form (SPEC 2.1 without claims and licenseString), computed for `now`. */
export function toLicenceListItem(view: LicenceView, now: number) {
  const seatsUsed = Number(view.seats_used ?? 0);
  return {
    lid: view.lid,
    customerId: view.customer_id,
    licensee: view.licensee,
    licenseeEmail: view.licensee_email,
    productId: view.product_id,
    productName: view.product_name,
    productKey: view.product_key,
    issuedAt: iso(view.issued_at),
    startsAt: iso(view.starts_at),
    expiresAt: iso(view.expires_at),
    graceDays: view.grace_days,
    licenceType: view.licence_type as LicenceType,
    activation: view.activation as 'ONLINE' | 'OFFLINE' | null,
    seatModel: view.seat_model as 'NODE_LOCKED' | 'FLOATING',
    activated: seatsUsed > 0,
    boundAt: iso(view.bound_at === null ? null : Number(view.bound_at)),
    rebindCount: view.rebind_count,
    maxMachines: view.max_machines,
    seatsUsed,
    status: statusOf(view, now),
    checkHealth: checkHealth(
      {
        licenceType: view.licence_type as LicenceType,
        lastCheckedAt: view.last_checked_at,
        checkEverySeconds: view.check_every_seconds,
        checkMaxSeconds: view.check_max_seconds,
      },
      now,
    ),
    checkMaxSeconds: view.check_max_seconds,
    checkEverySeconds: view.check_every_seconds,
    revoked: view.revoked === 1,
    revokedAt: iso(view.revoked_at),
    revokedReason: view.revoked_reason,
    archived: view.archived === 1,
    archivedAt: iso(view.archived_at),
    issuedBy: view.issued_by,
    lastCheckedAt: iso(view.last_checked_at),
    renewedAt: iso(view.renewed_at),
    notes: view.notes,
    meters: JSON.parse(view.meters) as Array<{
      key: string;
      label: string;
      period: 'NONE' | 'DAY' | 'MONTH' | 'YEAR';
      limit: number | null;
      overage: number | null;
    }>,
    trial: view.trial === 1,
    trialStartedAt: iso(view.trial_started_at === null ? null : Number(view.trial_started_at)),
    trialConvertedTo: view.trial_converted_to,
    trialConvertedAt: iso(view.trial_converted_at === null ? null : Number(view.trial_converted_at)),
    trialLedgerResetAt: iso(view.trial_ledger_reset_at === null ? null : Number(view.trial_ledger_reset_at)),
    trialInstallations: view.trial === 1 ? view.trial_installations : null,
    convertedFromTrial: view.converted_from_trial,
    updatesMonths: view.updates_months,
    // The current term's `upd`, else its grace end, else null: releases published until then are covered.
    updatesUntil: iso(view.updates_until === null ? null : Number(view.updates_until) * 1000),
    feedGeneration: Number(view.feed_generation),
  };
}

export function toLicence(view: LicenceView, now: number) {
  return { ...toLicenceListItem(view, now), claims: claimsOf(view.licence_string), licenseString: view.licence_string };
}
