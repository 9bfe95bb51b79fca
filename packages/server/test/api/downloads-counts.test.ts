import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenant } from '../../src/db/tenant.js';
import { DownloadCounts } from '../../src/downloads/counts.js';
import { downloadCounts } from '../../src/downloads/repo.js';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
let orgId: number;
let artifactIds: number[];

beforeAll(async () => {
  h = await startHarness();
  const product = await h.admin('POST', '/products', { productKey: 'counted', name: 'Counted' });
  expect(product.statusCode).toBe(201);
  const db = h.database.db;
  orgId = Number((await db.selectFrom('organisations').select('id').where('slug', '=', h.slug).executeTakeFirstOrThrow()).id);
  const release = await db
    .insertInto('releases')
    .values({
      org_id: orgId,
      product_id: product.data.id,
      version: '1.0.0',
      channel: 'stable',
      status: 'PUBLISHED',
      notes: '',
      requires: '{}',
      bundle_version: null,
      created_at: Date.now(),
      created_by: 'test',
      published_at: Math.floor(Date.now() / 1000),
      published_by: 'test',
      yanked_at: null,
      yanked_reason: null,
      manifest: null,
      manifest_signatures: null,
    } as never)
    .returning('id')
    .executeTakeFirstOrThrow();
  artifactIds = [];
  for (const filename of ['a.zip', 'b.zip']) {
    const row = await db
      .insertInto('artifacts')
      .values({
        org_id: orgId,
        product_id: product.data.id,
        release_id: Number(release.id),
        filename,
        platform: 'any',
        arch: 'any',
        size: 1,
        sha256: 'a'.repeat(64),
        sha512: 'b'.repeat(128),
        content_type: 'application/zip',
        tauri_signature: null,
        ed_signature: null,
        backend: 'disk',
        storage_key: `1/1/${'c'.repeat(32)}/${filename}`,
        created_at: Date.now(),
        created_by: 'test',
      } as never)
      .returning('id')
      .executeTakeFirstOrThrow();
    artifactIds.push(Number(row.id));
  }
});

afterAll(async () => {
  await h.close();
});

describe('download counts (DESIGN 20, Counts)', () => {
  it('are gathered in memory and written within a second, per artifact and local date, without a write per download', async () => {
    const [a, b] = artifactIds as [number, number];
    const counts = new DownloadCounts(h.database, (err) => {
      throw err;
    });
    try {
      for (let i = 0; i < 3; i++) counts.count(orgId, a, '2026-12-01');
      counts.count(orgId, a, '2026-12-02');
      counts.count(orgId, b, '2026-12-02');
      const rowsNow = await h.database.db.selectFrom('artifact_downloads').selectAll().where('org_id', '=', orgId).execute();
      expect(rowsNow).toHaveLength(0);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const rows = await h.database.db
        .selectFrom('artifact_downloads')
        .select(['artifact_id', 'day', 'count'])
        .where('org_id', '=', orgId)
        .orderBy('artifact_id')
        .orderBy('day')
        .execute();
      expect(rows.map((r) => [Number(r.artifact_id), r.day, Number(r.count)])).toEqual([
        [a, '2026-12-01', 3],
        [a, '2026-12-02', 1],
        [b, '2026-12-02', 1],
      ]);
      counts.count(orgId, a, '2026-12-02');
      await counts.settle();
      const totals = await downloadCounts(tenant(h.database.db, orgId), [a, b]);
      expect([totals.get(a), totals.get(b)]).toEqual([5, 1]);
      expect(counts.total).toBe(6);
    } finally {
      await counts.close();
    }
  });
});
