import type { Insertable } from 'kysely';
import type { FingerprintComponent } from '@licensor/protocol';
import type { TrialEntriesTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import type { LedgerEntry } from './ledger.js';

const DAY_MS = 86_400_000;

/**
 * The product's ledger entries (not reset) that share one of these (component, hash) pairs, each
 * read by its own index (product, component), never by a scan; with the trial's lid and current
 * term.
 */
export async function ledgerCandidates(t: Tenant, productId: number, pairs: ReadonlyArray<[FingerprintComponent, string]>) {
  const one = ([component, hash]: [FingerprintComponent, string]) =>
    t
      .selectFrom('trial_entries')
      .innerJoin('licences', 'licences.id', 'trial_entries.licence_id')
      .select([
        'trial_entries.id',
        'trial_entries.fpn',
        'trial_entries.machine',
        'trial_entries.host',
        'trial_entries.mac',
        'trial_entries.cpu',
        'trial_entries.disk',
        'trial_entries.started_at',
        'licences.lid',
        'licences.id as licence_id',
        'licences.licence_string',
      ])
      .where('trial_entries.product_id', '=', productId)
      .where(`trial_entries.${component}`, '=', hash)
      .where('trial_entries.reset_at', 'is', null);
  let query = one(pairs[0]!);
  for (const pair of pairs.slice(1)) query = query.unionAll(one(pair));
  const rows = await query.execute();
  const seen = new Map<number, (typeof rows)[number] & LedgerEntry>();
  for (const row of rows) seen.set(Number(row.id), { ...row, id: Number(row.id), started_at: Number(row.started_at), licence_id: Number(row.licence_id) });
  return [...seen.values()];
}

export type Candidate = Awaited<ReturnType<typeof ledgerCandidates>>[number];

/**
 * The start time of the `limit`-th newest trial of the product (of one address, when given)
 * started in the 86,400 s before `now`, whatever became of it; undefined while fewer were started.
 */
export async function limitReachedAt(
  t: Tenant,
  productId: number,
  address: { column: 'addr' | 'addr48'; hash: string } | null,
  limit: number,
  now: number,
): Promise<number | undefined> {
  let query = t
    .selectFrom('trial_entries')
    .select('started_at')
    .where('product_id', '=', productId)
    .where('started_at', '>', now - DAY_MS);
  if (address) query = query.where(address.column, '=', address.hash);
  const row = await query
    .orderBy('started_at', 'desc')
    .limit(1)
    .offset(limit - 1)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.started_at);
}

/** The product's trial policy as it is now, read under the product row's lock by the caller. */
export const trialState = (t: Tenant, productId: number) =>
  t.selectFrom('products').select(['version', 'trial_need']).where('id', '=', productId).executeTakeFirst();

/** The organisation's `trialLimit` (DESIGN.md 18), null for none. */
export async function trialLimitOf(t: Tenant): Promise<number | null> {
  const row = await t.db.selectFrom('organisations').select('trial_limit').where('id', '=', t.orgId).executeTakeFirstOrThrow();
  return row.trial_limit === null ? null : Number(row.trial_limit);
}

export async function insertEntry(t: Tenant, values: Omit<Insertable<TrialEntriesTable>, 'org_id'>): Promise<void> {
  await t.insertInto('trial_entries', values).execute();
}

/** Keeps the lowest `fpn` of the product's entries on the product: how many components a lookup must read. */
export async function lowerTrialNeed(t: Tenant, productId: number, fpn: number): Promise<void> {
  await t
    .updateTable('products')
    .set({ trial_need: fpn })
    .where('id', '=', productId)
    .where((eb) => eb.or([eb('trial_need', 'is', null), eb('trial_need', '>', fpn)]))
    .execute();
}

/** Whether the trial already holds this device key, or its 100. */
export async function installationKnown(t: Tenant, licenceId: number, devicePublicKey: string): Promise<boolean> {
  const row = await t
    .selectFrom('licences')
    .leftJoin('trial_installations as i', (join) => join.onRef('i.licence_id', '=', 'licences.id').on('i.device_public_key', '=', devicePublicKey))
    .select(['licences.trial_installations', 'i.first_seen_at'])
    .where('licences.id', '=', licenceId)
    .executeTakeFirst();
  return !row || row.first_seen_at !== null || row.trial_installations >= 100;
}

/** DESIGN.md 18: the trial's entry never matches again; the licence says when. */
export async function resetEntry(t: Tenant, licenceId: number, now: number): Promise<void> {
  await t.updateTable('trial_entries').set({ reset_at: now }).where('licence_id', '=', licenceId).execute();
  await t.updateTable('licences').set({ trial_ledger_reset_at: now }).where('id', '=', licenceId).execute();
}

/** The device keys a trial was answered to, oldest first. */
export const installationsOf = (t: Tenant, licenceId: number) =>
  t
    .selectFrom('trial_installations')
    .select(['device_public_key', 'first_seen_at'])
    .where('licence_id', '=', licenceId)
    .orderBy('first_seen_at')
    .orderBy('device_public_key')
    .execute();
