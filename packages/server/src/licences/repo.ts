import type { Insertable, Selectable, Updateable } from 'kysely';
import type { IdempotencyKeysTable, LicencesTable, LicenceVersionsTable } from '../db/schema.js';
import { lockExpression, type DialectName } from '../db/database.js';
import { preparedQuery, type Tenant } from '../db/tenant.js';
import { notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import type { LicenceRow } from '../listings/repos/views.js';
import { ORGANISATION_COLUMNS } from '../orgs/repo.js';

export type VersionRow = Selectable<LicenceVersionsTable>;

/** The licence row by its lid, if there is one; `lock`: FOR UPDATE. */
export function licenceByLid(t: Tenant, lid: string, { lock = false } = {}): Promise<LicenceRow | undefined> {
  let query = t.selectFrom('licences').selectAll().where('lid', '=', lid);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function findLicenceRow(t: Tenant, lid: string, { lock = false } = {}): Promise<LicenceRow> {
  const row = await licenceByLid(t, lid, { lock });
  if (!row) throw notFound(`no licence ${lid}`);
  return row;
}

/**
 * The licence row, locked until the transaction ends, read in the same query: FOR UPDATE on
 * PostgreSQL; on SQLite the transaction already holds the database's write lock (BEGIN IMMEDIATE).
 */
export const lockLicenceRow = (dialect: DialectName, t: Tenant, lid: string) => findLicenceRow(t, lid, { lock: dialect === 'postgres' });

export function toVersionListItem(row: VersionRow) {
  return {
    versionNo: row.version_no,
    issuedAt: iso(row.issued_at),
    startsAt: iso(row.starts_at),
    expiresAt: iso(row.expires_at),
    graceDays: row.grace_days,
    issuedBy: row.issued_by,
    revokedReason: row.revoked_reason,
  };
}

/** A licence's superseded terms, newest first (SPEC 4.1). */
export const versionsOf = (t: Tenant, licenceId: number) =>
  t.selectFrom('licence_versions').selectAll().where('licence_id', '=', licenceId).orderBy('version_no', 'desc').execute();

export const findVersion = (t: Tenant, licenceId: number, versionNo: number) =>
  t.selectFrom('licence_versions').selectAll().where('licence_id', '=', licenceId).where('version_no', '=', versionNo).executeTakeFirst();

export const insertLicence = (t: Tenant, values: Omit<Insertable<LicencesTable>, 'org_id'>) =>
  t.insertInto('licences', values).returningAll().executeTakeFirstOrThrow();

export async function updateLicence(t: Tenant, id: number, set: Updateable<LicencesTable>): Promise<void> {
  await t.updateTable('licences').set(set).where('id', '=', id).execute();
}

/** Records a device key the trial was answered to, among its first 100; true when it is new. */
export async function noteInstallation(t: Tenant, licenceId: number, devicePublicKey: string, now: number): Promise<boolean> {
  const inserted = await t
    .insertInto('trial_installations', { licence_id: licenceId, device_public_key: devicePublicKey, first_seen_at: now })
    .onConflict((oc) => oc.columns(['licence_id', 'device_public_key']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return false;
  await t
    .updateTable('licences')
    .set((eb) => ({ trial_installations: eb('trial_installations', '+', 1) }))
    .where('id', '=', licenceId)
    .execute();
  return true;
}

/** A new trial's first installation: its licence row is written with `trial_installations` 1. */
export async function insertFirstInstallation(t: Tenant, licenceId: number, devicePublicKey: string, now: number): Promise<void> {
  await t.insertInto('trial_installations', { licence_id: licenceId, device_public_key: devicePublicKey, first_seen_at: now }).execute();
}

/** A new licence's stamp row (licence_stamps: lastCheckedAt, kept apart from the licence row). */
export async function insertStamp(t: Tenant, licenceId: number, lid: string): Promise<void> {
  await t.insertInto('licence_stamps', { licence_id: licenceId, archived: 0, lid, last_checked_at: null }).execute();
}

/** The stamp row follows its licence into (or out of) the archive, so the lastCheckedAt sort's index narrows with it. */
export async function setStampArchived(t: Tenant, licenceId: number, archived: number): Promise<void> {
  await t.updateTable('licence_stamps').set({ archived }).where('licence_id', '=', licenceId).execute();
}

export async function insertVersion(t: Tenant, values: Omit<Insertable<LicenceVersionsTable>, 'org_id'>): Promise<void> {
  await t.insertInto('licence_versions', values).execute();
}

/** The answer kept for an Idempotency-Key within its window, if any. */
export const findIdempotentAnswer = (t: Tenant, key: string, since: number) =>
  t.selectFrom('idempotency_keys').select(['request_hash', 'status_code', 'body']).where('key', '=', key).where('created_at', '>', since).executeTakeFirst();

/** Keeps an answer under its key, replacing one older than the window. */
export async function keepIdempotentAnswer(t: Tenant, values: Omit<Insertable<IdempotencyKeysTable>, 'org_id'>): Promise<void> {
  await t.deleteFrom('idempotency_keys').where('key', '=', values.key).execute();
  await t.insertInto('idempotency_keys', values).execute();
}

// The columns of the API token a request may be admitted on (last_used_at is only a stamp).
export const TOKEN_COLUMNS = ['id', 'org_id', 'name', 'scopes', 'secret_hash', 'created_at', 'created_by', 'expires_at', 'revoked_at'] as const;

/**
 * The statement, built once per dialect and lock (preparedQuery): the clock's lock taken shared
 * and, for an issue, the customer's exclusively (PostgreSQL; SQLite's writer holds the database).
 */
const opening = (dialect: DialectName, customer: boolean) =>
  preparedQuery((t, productId: number, tokenId: string, clockLock: string, customerLock: string) => {
    const locks = [lockExpression({ dialect }, clockLock, 'shared'), customer ? lockExpression({ dialect }, customerLock) : null];
    return t.db
      .selectFrom('organisations as o')
      .leftJoin('licence_tally_clocks as k', 'k.org_id', 'o.id')
      .leftJoin('products as p', (join) => join.onRef('p.org_id', '=', 'o.id').on('p.id', '=', productId))
      .leftJoin('api_tokens as a', (join) => join.onRef('a.org_id', '=', 'o.id').on('a.id', '=', tokenId))
      .select(ORGANISATION_COLUMNS.map((c) => `o.${c}` as const))
      .select(TOKEN_COLUMNS.map((c) => `a.${c} as token_${c}` as const))
      .select(['p.version as product_version', 'k.as_of'])
      .select(locks.flatMap((lock, i) => (lock ? [lock.as(`lock_${i}`)] : [])))
      .where('o.id', '=', t.orgId);
  });
const OPENINGS = {
  sqlite: { issue: opening('sqlite', false), renew: opening('sqlite', false) },
  postgres: { issue: opening('postgres', true), renew: opening('postgres', false) },
};

/** The opening statement's row: the organisation as it is, the token's and product's columns, the clock. */
export async function openingRow(dialect: DialectName, t: Tenant, productId: number, tokenId: string, clock: string, customerLock: string | undefined) {
  const [row] = await OPENINGS[dialect][customerLock === undefined ? 'renew' : 'issue'](t, productId, tokenId, clock, customerLock ?? '');
  return row;
}
