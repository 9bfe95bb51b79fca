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
