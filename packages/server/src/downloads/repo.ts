import { sql } from 'kysely';
import type { Tenant } from '../db/tenant.js';

/** Adds `count` downloads of an artifact on one local date (YYYY-MM-DD) of the organisation. */
export async function addDownloadCount(t: Tenant, artifactId: number, day: string, count: number): Promise<void> {
  await t
    .insertInto('artifact_downloads', { artifact_id: artifactId, day, count })
    .onConflict((oc) => oc.columns(['artifact_id', 'day']).doUpdateSet({ count: sql`artifact_downloads.count + excluded.count` }))
    .execute();
}

/** The downloads of each artifact named, all days summed (an artifact never downloaded: absent). */
export async function downloadCounts(t: Tenant, artifactIds: number[]): Promise<Map<number, number>> {
  if (artifactIds.length === 0) return new Map();
  const rows = await t
    .selectFrom('artifact_downloads')
    .select(['artifact_id', (eb) => eb.fn.sum<number | string>('count').as('total')])
    .where('artifact_id', 'in', artifactIds)
    .groupBy('artifact_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.artifact_id), Number(r.total)]));
}

/** What the rules of DESIGN.md 20 read of a licence: its current term's dates and claims, its window and feed generation. */
export const findDownloadLicence = (t: Tenant, lid: string) =>
  t
    .selectFrom('licences')
    .select([
      'id',
      'lid',
      'product_id',
      'licence_type',
      'revoked',
      'starts_at',
      'expires_at',
      'grace_days',
      'grace_ends_at',
      'trial',
      'params',
      'updates_until',
      'feed_generation',
    ])
    .where('lid', '=', lid)
    .executeTakeFirst();

/** Whether the binding is one of the licence's, not released and within any lease end (seats/live.ts's rule). */
export const findBindingState = (t: Tenant, licenceId: number, bindingId: number) =>
  t.selectFrom('machine_bindings').select(['released_at', 'lease_ends_at']).where('licence_id', '=', licenceId).where('id', '=', bindingId).executeTakeFirst();

/** An artifact with what a grant answers of its release. */
export const findArtifactWithRelease = (t: Tenant, artifactId: number) =>
  t
    .selectFrom('artifacts')
    .innerJoin('releases', (join) => join.onRef('releases.id', '=', 'artifacts.release_id').onRef('releases.org_id', '=', 'artifacts.org_id'))
    .selectAll('artifacts')
    .select([
      'releases.version',
      'releases.channel',
      'releases.status',
      'releases.notes',
      'releases.requires',
      'releases.published_at',
      'releases.manifest',
      'releases.manifest_signatures',
    ])
    .where('artifacts.id', '=', artifactId)
    .executeTakeFirst();

/**
 * The product's PUBLISHED releases as one string of `id:row_version` pairs. Every change a feed
 * could show (a publish, yank, unyank or edit) raises a release's row version or changes the set,
 * and a published release's files never change, so an equal stamp means equal feeds.
 */
export async function publishedStamp(t: Tenant, productId: number): Promise<string> {
  const rows = await t
    .selectFrom('releases')
    .select(['id', 'row_version'])
    .where('product_id', '=', productId)
    .where('status', '=', 'PUBLISHED')
    .orderBy('id')
    .execute();
  return rows.map((r) => `${r.id}:${r.row_version}`).join(',');
}

/** Raises the licence's feed generation by one (reset-download-links); the caller holds the licence row's lock. */
export async function raiseFeedGeneration(t: Tenant, licenceId: number): Promise<void> {
  await t.updateTable('licences').set({ feed_generation: sql`feed_generation + 1` }).where('id', '=', licenceId).execute();
}
