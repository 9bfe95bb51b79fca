// DESIGN.md 20 on S3: uploads, presigned delivery, the bounds, the store down, two instances, and
// `licensor artifacts verify`, against s3rver on loopback. s3rver has no AbortMultipartUpload, so
// "nothing left behind" is checked as rows and listed objects.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { FastifyInstance } from 'fastify';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { openDatabase, sqliteFileIn, type Database } from '../../src/db/database.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { checkBody } from '../check-helpers.js';
import { runCli } from '../cli.js';
import { brokenUpload, pathOf, releasedProduct, type ReleasedProduct } from '../download-helpers.js';
import { backend, startHarness, type Harness } from '../harness.js';
import { fingerprint } from '../licence-helpers.js';

const BUCKET = 'licensor-artifacts';
const PREFIX = 'releases';
// Above lib-storage's 5 MiB part, so an upload crossing it is a multipart one.
const MAX = 6 * 1024 * 1024;

let s3dir: string;
let s3: InstanceType<typeof S3rver>;
let endpoint: string;
let port: number;
let h: Harness;
let p: ReleasedProduct;
let base: string;
let token: string;
/** A second instance on the same database and bucket: its own app, store client and (PostgreSQL) pool. */
let second: { app: FastifyInstance; database: Database };
let client: S3Client;

async function startS3(): Promise<void> {
  s3 = new S3rver({ address: '127.0.0.1', port, directory: s3dir, silent: true, configureBuckets: [{ name: BUCKET, configs: [] }] });
  const address = (await s3.run()) as { port: number };
  port = address.port;
}

beforeAll(async () => {
  s3dir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-s3-'));
  port = 0;
  await startS3();
  endpoint = `http://127.0.0.1:${port}`;
  h = await startHarness({
    LICENSOR_ARTIFACT_STORE: `s3://${BUCKET}/${PREFIX}`,
    LICENSOR_S3_ENDPOINT: endpoint,
    LICENSOR_S3_ACCESS_KEY_ID: 'S3RVER',
    LICENSOR_S3_SECRET_ACCESS_KEY: 'S3RVER',
    LICENSOR_ARTIFACT_MAX_BYTES: String(MAX),
  });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}/o/${h.slug}/api`;
  token = await h.createToken(['releases:write']);
  p = await releasedProduct(h);
  const database = backend === 'postgres' ? await openDatabase({ databaseUrl: h.config.databaseUrl, sqliteFile: sqliteFileIn(h.config.dataDir) }) : h.database;
  second = { app: await buildApp({ config: h.config, database, masterKey: loadMasterKey(h.config, () => {}) }), database };
  await second.app.ready();
  client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
});
afterAll(async () => {
  await second?.app.close();
  if (second && second.database !== h.database) await second.database.close();
  await h?.close();
  await s3?.close().catch(() => undefined);
  fs.rmSync(s3dir, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const listed = async () => ((await client.send(new ListObjectsV2Command({ Bucket: BUCKET }))).Contents ?? []).map((o) => o.Key!).sort();
const artifactRows = async (releaseId: number) =>
  (await h.database.db.selectFrom('artifacts').select('id').where('release_id', '=', releaseId).execute()).length;
const draft = async (version: string) => {
  const created = await h.admin('POST', `/products/${p.id}/releases`, { version });
  expect(created.statusCode).toBe(201);
  return created.data.id as number;
};

/** A chunked upload (no Content-Length) of `chunks`, so the bound is met while streaming. */
async function streamUpload(releaseId: number, filename: string, chunks: Buffer[]): Promise<{ status: number; body: any }> {
  const answer = await fetch(`${base}/releases/${releaseId}/artifacts?filename=${filename}&platform=any&arch=any`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
    body: new ReadableStream({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);
  const text = await answer.text();
  return { status: answer.status, body: text ? JSON.parse(text) : undefined };
}

describe('artifacts on S3 (DESIGN 20)', () => {
  it('uploads, lists and publishes; a grant and a files/ URL answer 303 to a presigned GET that serves the bytes', async () => {
    const content = `linux build ${'x'.repeat(1000)}`;
    const release = await p.ship('1.0.0', [{ filename: 'App 1.0.0.AppImage', platform: 'linux', arch: 'x86_64', content }]);
    const artifact = release.artifacts[0];
    expect(artifact).toMatchObject({ backend: 's3', size: content.length, sha256: sha256(content) });
    const row = await h.database.db.selectFrom('artifacts').select('storage_key').where('id', '=', artifact.id).executeTakeFirstOrThrow();
    expect(row.storage_key).toMatch(new RegExp(`^\\d+/${release.id}/[0-9a-f]{32}/App 1\\.0\\.0\\.AppImage$`));
    expect(await listed()).toContain(`${PREFIX}/${row.storage_key}`);
    const listing = await h.admin('GET', `/products/${p.id}/releases`);
    expect(listing.data.map((r: any) => r.version)).toContain('1.0.0');

    const licence = await p.seated('s3-machine');
    const granted = await p.grant({ license: licence.licenseString, fingerprint: fingerprint('s3-machine'), artifactId: artifact.id });
    expect(granted.statusCode, granted.body).toBe(200);
    const feed = await p.feedToken({ license: licence.licenseString, fingerprint: fingerprint('s3-machine') });
    const latest = await h.request('GET', `${pathOf(feed.data.urls.json)}?platform=linux&arch=x86_64`);
    expect(latest.statusCode, latest.body).toBe(200);
    for (const url of [granted.data.url, latest.data.update.artifacts[0].url]) {
      const redirect = await h.request('GET', pathOf(url), { headers: { range: 'bytes=0-3' } });
      expect(redirect.statusCode).toBe(303);
      expect(redirect.body).toBe('');
      const presigned = new URL(redirect.headers.location as string);
      expect(presigned.origin).toBe(endpoint);
      expect(presigned.searchParams.get('X-Amz-Expires')).toMatch(/^\d+$/);
      // Fetched as an updater would, with no credential: the store answers the type and name the service chose.
      const bytes = await fetch(presigned);
      expect(bytes.status).toBe(200);
      expect(bytes.headers.get('content-type')).toBe('application/octet-stream');
      expect(bytes.headers.get('content-disposition')).toBe('attachment; filename="App 1.0.0.AppImage"');
      expect(sha256(Buffer.from(await bytes.arrayBuffer()))).toBe(artifact.sha256);
    }
    const head = await h.request('HEAD', pathOf(granted.data.url));
    expect([head.statusCode, head.headers.location]).toEqual([303, expect.stringContaining(endpoint)]);
    // The operator's own download redirects too.
    expect((await h.admin('GET', `/releases/${release.id}/artifacts/${artifact.id}/download`)).statusCode).toBe(303);
    // The two GETs are downloads (a 303 counts); HEAD and the operator's never.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect((await h.admin('GET', `/releases/${release.id}`)).data.downloads).toBe(2);
    expect((await h.request('GET', '/metrics')).body).toMatch(/^licensor_artifact_store_up 1$/m);
  });

  it('leaves no row and no listed object for an upload over the bound (multipart), an empty or a broken one, or a deleted draft', async () => {
    const releaseId = await draft('1.1.0');
    const before = await listed();
    const over = await streamUpload(releaseId, 'big.bin', [Buffer.alloc(MAX - 1024, 1), Buffer.alloc(2048, 2)]);
    expect(over.status).toBe(413);
    expect(over.body.error).toMatch(/larger/);
    const empty = await streamUpload(releaseId, 'empty.bin', []);
    expect([empty.status, empty.body.error]).toEqual([400, expect.stringMatching(/empty/)]);
    // A connection that breaks off mid-body.
    await brokenUpload(`${base}/releases/${releaseId}/artifacts`, token);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await artifactRows(releaseId)).toBe(0);
    expect(await listed()).toEqual(before);

    expect((await streamUpload(releaseId, 'kept.bin', [Buffer.from('kept')])).status).toBe(201);
    expect(await listed()).toHaveLength(before.length + 1);
    expect((await h.admin('DELETE', `/releases/${releaseId}`)).statusCode).toBe(204);
    expect(await listed()).toEqual(before);
  });

  it('makes one artifact of a filename uploaded at once on two instances sharing the bucket', async () => {
    const releaseId = await draft('1.2.0');
    const before = await listed();
    const uploads = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        h.request('POST', `/o/${h.slug}/api/releases/${releaseId}/artifacts?filename=raced.bin&platform=any&arch=any`, {
          app: i % 2 === 0 ? h.app : second.app,
          body: `bytes from upload ${i}`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
        }),
      ),
    );
    expect(uploads.map((u) => u.statusCode).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    expect(await artifactRows(releaseId)).toBe(1);
    // The losers' bytes are deleted: one new object, the winner's.
    const key = (await h.database.db.selectFrom('artifacts').select('storage_key').where('release_id', '=', releaseId).executeTakeFirstOrThrow()).storage_key;
    expect(await listed()).toEqual([...before, `${PREFIX}/${key}`].sort());
  });

  it('`licensor artifacts verify` re-hashes the objects: a changed one is mismatched, a deleted one missing', async () => {
    const clean = await runCli(['artifacts', 'verify', '--org', h.slug], h.env);
    expect(clean.code, clean.stderr).toBe(0);
    const all = JSON.parse(clean.stdout);
    expect(all).toEqual({ checked: expect.any(Number), missing: [], mismatched: [] });
    expect(all.checked).toBeGreaterThanOrEqual(2);

    const release = await p.ship('1.3.0', [
      { filename: 'changed.bin', platform: 'any', arch: 'any', content: 'original bytes' },
      { filename: 'lost.bin', platform: 'any', arch: 'any', content: 'lost bytes' },
    ]);
    const keyOf = async (id: number) =>
      `${PREFIX}/${(await h.database.db.selectFrom('artifacts').select('storage_key').where('id', '=', id).executeTakeFirstOrThrow()).storage_key}`;
    const [changed, lost] = release.artifacts;
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: await keyOf(changed.id), Body: 'altered bytes!' }));
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: await keyOf(lost.id) }));
    const found = await runCli(['artifacts', 'verify'], h.env);
    expect(found.code).toBe(1);
    expect(JSON.parse(found.stdout)).toEqual({
      checked: all.checked + 2,
      missing: [{ id: lost.id, releaseId: release.id, filename: 'lost.bin' }],
      mismatched: [{ id: changed.id, releaseId: release.id, filename: 'changed.bin' }],
    });
  });

  it('with the store down, uploads and downloads answer 503 {error} and licence checks still answer', async () => {
    const release = await p.ship('1.4.0', [{ filename: 'down.bin', platform: 'any', arch: 'any', content: 'served before' }]);
    const licence = await p.seated('down-machine');
    const granted = await p.grant({ license: licence.licenseString, fingerprint: fingerprint('down-machine'), artifactId: release.artifacts[0].id });
    const releaseId = await draft('1.5.0');
    await s3.close();
    try {
      const upload = await h.request('POST', `/o/${h.slug}/api/releases/${releaseId}/artifacts?filename=x.bin&platform=any&arch=any`, {
        body: 'bytes',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
      });
      expect([upload.statusCode, upload.data]).toEqual([503, { error: expect.stringMatching(/artifact store/) }]);
      expect(await artifactRows(releaseId)).toBe(0);
      const download = await h.request('GET', pathOf(granted.data.url));
      expect([download.statusCode, download.data]).toEqual([503, { error: expect.stringMatching(/artifact store/) }]);
      const operator = await h.admin('GET', `/releases/${release.id}/artifacts/${release.artifacts[0].id}/download`);
      expect([operator.statusCode, operator.data]).toEqual([503, { error: expect.stringMatching(/artifact store/) }]);
      const check = await p.check(checkBody(licence.licenseString, 'down-machine'));
      expect([check.statusCode, check.data.valid]).toEqual([200, true]);
      expect((await h.request('GET', '/metrics')).body).toMatch(/^licensor_artifact_store_up 0$/m);
    } finally {
      await startS3();
    }
    expect((await h.request('GET', pathOf(granted.data.url))).statusCode).toBe(303);
  });
});
