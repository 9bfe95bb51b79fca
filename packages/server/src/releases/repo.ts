import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { DialectName } from '../db/database.js';
import type { ArtifactsTable, ReleasesTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';

export type ReleaseRow = Selectable<ReleasesTable>;
export type ArtifactRow = Selectable<ArtifactsTable>;

export const findReleaseRow = (t: Tenant, id: number) => t.selectFrom('releases').selectAll().where('id', '=', id).executeTakeFirst();

/** The release row, locked until the transaction ends (PostgreSQL; SQLite's transaction holds the write lock). */
export async function lockReleaseRow(dialect: DialectName, t: Tenant, id: number): Promise<ReleaseRow | undefined> {
  const query = t.selectFrom('releases').selectAll().where('id', '=', id);
  return dialect === 'postgres' ? query.forUpdate().executeTakeFirst() : query.executeTakeFirst();
}

/** The id of the product's release of `version`, if it has one. */
export const findReleaseIdByVersion = (t: Tenant, productId: number, version: string) =>
  t.selectFrom('releases').select('id').where('product_id', '=', productId).where('version', '=', version).executeTakeFirst();

export const insertReleaseRow = (t: Tenant, values: Omit<Insertable<ReleasesTable>, 'org_id'>) =>
  t.insertInto('releases', values).returning('id').executeTakeFirstOrThrow();

export const updateReleaseRow = (t: Tenant, id: number, set: Updateable<ReleasesTable>) => t.updateTable('releases').set(set).where('id', '=', id).execute();

export function listReleaseRows(t: Tenant, productId: number, filter: { status?: string | undefined; channel?: string | undefined }) {
  let query = t.selectFrom('releases').selectAll().where('product_id', '=', productId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.channel) query = query.where('channel', '=', filter.channel);
  return query.execute();
}

export const artifactRowsOf = (t: Tenant, releaseIds: readonly number[]) =>
  releaseIds.length === 0
    ? Promise.resolve([] as ArtifactRow[])
    : t.selectFrom('artifacts').selectAll().where('release_id', 'in', releaseIds).orderBy('id').execute();

/** Every artifact of the organisation, for `licensor artifacts verify`. */
export const everyArtifactRow = (t: Tenant) => t.selectFrom('artifacts').selectAll().orderBy('id').execute();

export const findArtifactRow = (t: Tenant, releaseId: number, id: number) =>
  t.selectFrom('artifacts').selectAll().where('release_id', '=', releaseId).where('id', '=', id).executeTakeFirst();

export const insertArtifactRow = (t: Tenant, values: Omit<Insertable<ArtifactsTable>, 'org_id'>) =>
  t.insertInto('artifacts', values).returning('id').executeTakeFirstOrThrow();

/** The artifact and its download counts. */
export async function deleteArtifactRow(t: Tenant, artifactId: number): Promise<void> {
  await t.deleteFrom('artifact_downloads').where('artifact_id', '=', artifactId).execute();
  await t.deleteFrom('artifacts').where('id', '=', artifactId).execute();
}

/** Ids of the product's keys, retired ones included. */
export const keyIdsOf = async (t: Tenant, productId: number) =>
  (await t.selectFrom('product_keys').select('id').where('product_id', '=', productId).execute()).map((r) => Number(r.id));

/** Bytes of every artifact the organisation stores. */
export async function storedBytes(t: Tenant): Promise<number> {
  const row = await t.selectFrom('artifacts').select(sql<string | number | null>`sum(size)`.as('bytes')).executeTakeFirst();
  return Number(row?.bytes ?? 0);
}

/** Counted downloads per artifact id. */
export async function downloadsOf(t: Tenant, artifactIds: readonly number[]): Promise<Map<number, number>> {
  if (artifactIds.length === 0) return new Map();
  const rows = await t
    .selectFrom('artifact_downloads')
    .select(['artifact_id', sql<string | number>`sum(count)`.as('n')])
    .where('artifact_id', 'in', artifactIds)
    .groupBy('artifact_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.artifact_id), Number(r.n)]));
}

export async function deleteReleaseRows(t: Tenant, releaseId: number): Promise<void> {
  const ids = (await t.selectFrom('artifacts').select('id').where('release_id', '=', releaseId).execute()).map((r) => r.id);
  if (ids.length > 0) await t.deleteFrom('artifact_downloads').where('artifact_id', 'in', ids).execute();
  await t.deleteFrom('artifacts').where('release_id', '=', releaseId).execute();
  await t.deleteFrom('releases').where('id', '=', releaseId).execute();
}
