import type { Selectable } from 'kysely';
import type { LicenceVersionsTable } from '../db/schema.js';
import type { DialectName } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import { notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import type { LicenceRow } from '../listings/repos/views.js';

export type VersionRow = Selectable<LicenceVersionsTable>;

export async function findLicenceRow(t: Tenant, lid: string, { lock = false } = {}): Promise<LicenceRow> {
  let query = t.selectFrom('licences').selectAll().where('lid', '=', lid);
  if (lock) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row) throw notFound(`no licence ${lid}`);
  return row;
}

/**
 * The licence row, locked until the transaction ends, read in the same query: FOR UPDATE on
 * PostgreSQL; on SQLite the transaction already holds the database's write lock (BEGIN IMMEDIATE).
 */
export const lockLicenceRow = (dialect: DialectName, t: Tenant, lid: string) =>
  findLicenceRow(t, lid, { lock: dialect === 'postgres' });

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
