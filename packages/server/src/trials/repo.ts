import type { Insertable } from 'kysely';
import { FINGERPRINT_COMPONENTS, type FingerprintComponent } from '@licensor/protocol';
import type { TrialEntriesTable } from '../db/schema.js';
import { dialectOf } from '../db/database.js';
import { preparedQuery, type Tenant } from '../db/tenant.js';

const DAY_MS = 86_400_000;

/**
 * The product's ledger entries (not reset) that share a hash in one of the components looked up,
 * each component read by its own index (product, component), never by a scan: one arm per
 * component, an arm not looked up given null (which equals nothing), so the text is always the
 * same and is prepared once (a start makes this lookup twice; planning a new text each time was
 * the larger part of its database time). With the trial's lid and current term.
 */
const candidatesOf = preparedQuery((t, productId: number, ...hashes: Array<string | null>) => {
  const arm = (component: FingerprintComponent, hash: string | null) =>
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
  const [first, ...rest] = FINGERPRINT_COMPONENTS.map((component, i) => arm(component, hashes[i]!));
  return rest.reduce((query, next) => query.unionAll(next), first!);
});

export async function ledgerCandidates(t: Tenant, productId: number, pairs: ReadonlyArray<[FingerprintComponent, string]>) {
  const looked = new Map(pairs);
  const rows = await candidatesOf(t, productId, ...FINGERPRINT_COMPONENTS.map((component) => looked.get(component) ?? null));
  // An entry sharing two of the components comes once from each arm.
  const seen = new Map<number, (typeof rows)[number] & { id: number; started_at: number; licence_id: number }>();
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

/**
 * The product's trial policy as it is now, under the product row's lock (FOR NO KEY UPDATE, as
 * lockRow takes it, in the same statement; on SQLite the transaction already holds the write lock).
 */
export async function lockedTrialState(t: Tenant, productId: number) {
  const read = t.selectFrom('products').select(['version', 'trial_need']).where('id', '=', productId);
  return (dialectOf(t.db) === 'postgres' ? read.forNoKeyUpdate() : read).executeTakeFirst();
}

/** The organisation's `trialLimit` (DESIGN.md 18), null for none. */
export async function trialLimitOf(t: Tenant): Promise<number | null> {
  const row = await t.db.selectFrom('organisations').select('trial_limit').where('id', '=', t.orgId).executeTakeFirstOrThrow();
  return row.trial_limit === null ? null : Number(row.trial_limit);
}

export async function insertEntry(t: Tenant, values: Omit<Insertable<TrialEntriesTable>, 'org_id'>): Promise<void> {
  await t.insertInto('trial_entries', values).execute();
}

/** The lowest `fpn` of the product's entries, kept on the product (the caller lowers it under the product's lock): how many components a lookup must read. */
export async function setTrialNeed(t: Tenant, productId: number, fpn: number): Promise<void> {
  await t.updateTable('products').set({ trial_need: fpn }).where('id', '=', productId).execute();
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
