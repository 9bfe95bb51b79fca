import { createHash, createPublicKey } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { b64uDecode, verifyBytes } from '@licensor/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { brokenUpload } from '../download-helpers.js';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
let base: string;
let token: string;
let seq = 0;
const MAX = 4096;
const QUOTA = 10_000;

beforeAll(async () => {
  h = await startHarness({
    LICENSOR_ARTIFACT_MAX_BYTES: String(MAX),
    LICENSOR_ARTIFACT_QUOTA_BYTES: String(QUOTA),
    LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8',
  });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address() as { port: number };
  base = `http://127.0.0.1:${address.port}/o/${h.slug}/api`;
  token = await h.createToken(['releases:write', 'products:read']);
});
afterAll(() => h?.close());

const product = async (body: Record<string, unknown> = {}) => {
  const response = await h.admin('POST', '/products', { productKey: `rel-${++seq}`, name: `Released ${seq}`, ...body });
  expect(response.statusCode).toBe(201);
  return response.data as { id: number; productKey: string; publicKeyPem: string };
};
const release = async (productId: number, body: Record<string, unknown> = {}) => {
  const response = await h.admin('POST', `/products/${productId}/releases`, { version: `1.0.${++seq}`, ...body });
  expect(response.statusCode).toBe(201);
  return response.data as { id: number; version: string; channel: string };
};

interface Answer {
  status: number;
  body: any;
}

/** A raw HTTP upload: `chunks` written one by one (chunked unless `length` is given). */
function upload(releaseId: number, query: string, chunks: Buffer[], options: { length?: number; contentType?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': options.contentType ?? 'application/octet-stream' };
    if (options.length !== undefined) headers['content-length'] = String(options.length);
    const request = http.request(`${base}/releases/${releaseId}/artifacts?${query}`, { method: 'POST', headers }, (response) => {
      let text = '';
      response.on('data', (d) => {
        text += d;
      });
      response.on('end', () => resolve({ status: response.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    request.on('error', reject);
    (async () => {
      for (const chunk of chunks) {
        if (request.destroyed) return;
        request.write(chunk);
        await new Promise((r) => setTimeout(r, 5));
      }
      request.end();
    })();
  });
}
const put = (releaseId: number, filename: string, bytes: Buffer, extra = '') =>
  upload(releaseId, `filename=${encodeURIComponent(filename)}&platform=linux&arch=x86_64${extra}`, [bytes], { length: bytes.length });

const artifactDir = () => path.join(h.config.artifactDir);
/** Every regular file under the artifact directory, `.tmp/` included. */
function filesOnDisk(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(path.relative(artifactDir(), full));
    }
  };
  walk(artifactDir());
  return out.sort();
}
const artifactRows = async (releaseId: number) =>
  (await h.database.db.selectFrom('artifacts').selectAll().where('release_id', '=', releaseId).execute()).length;

describe('releases', () => {
  it('creates a draft with the channel the version implies, and refuses what DESIGN names', async () => {
    const p = await product();
    const stable = await h.admin('POST', `/products/${p.id}/releases`, { version: '2.0.0' });
    expect(stable.statusCode).toBe(201);
    expect(stable.data).toMatchObject({
      version: '2.0.0',
      channel: 'stable',
      status: 'DRAFT',
      notes: '',
      requires: {},
      bundleVersion: null,
      artifacts: [],
      manifest: null,
      manifestSignatures: [],
      manifestSignature: null,
      downloads: 0,
    });
    for (const [version, channel] of [
      ['2.1.0-rc.1', 'rc'],
      ['2.1.0-beta.2', 'beta'],
      ['2.1.0-alpha', 'alpha'],
      ['2.1.0-nightly.5', 'dev'],
    ])
      expect((await h.admin('POST', `/products/${p.id}/releases`, { version })).data.channel).toBe(channel);
    const refusals: Array<[Record<string, unknown>, RegExp]> = [
      [{ version: 'v1.0.0' }, /"v"/],
      [{ version: '1.0.0+build.5' }, /build metadata/],
      [{ version: '1.0' }, /SemVer/],
      [{ version: '01.0.0' }, /SemVer|leading zero/],
      [{ version: '1.0.0-rc.01' }, /SemVer|leading zero/],
      [{ version: '9007199254740992.0.0' }, /2\^53/],
      [{ version: `1.0.0-${'a'.repeat(60)}` }, /64/],
      [{ version: '3.0.0', channel: 'nightly' }, /channel/],
      [{ version: '3.0.0-rc.1', channel: 'stable' }, /prerelease/],
      [{ version: '3.0.0', channel: 'beta' }, /prerelease/],
      [{ version: '3.0.0', bundleVersion: '1.2.3.4.5' }, /bundleVersion/],
      [{ version: '3.0.0', requires: { edition: 'pro' } }, /requires.edition/],
    ];
    for (const [body, error] of refusals) {
      const response = await h.admin('POST', `/products/${p.id}/releases`, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.data.error).toMatch(error);
    }
    const duplicate = await h.admin('POST', `/products/${p.id}/releases`, { version: '2.0.0', channel: 'stable' });
    expect(duplicate.statusCode).toBe(409);
    const list = await h.admin('GET', `/products/${p.id}/releases`);
    expect(list.data.map((r: { version: string }) => r.version)).toEqual(['2.1.0-rc.1', '2.1.0-nightly.5', '2.1.0-beta.2', '2.1.0-alpha', '2.0.0']);
  });

  it('checks requires against the product parameters', async () => {
    const p = await product({
      params: [
        { key: 'edition', label: 'Edition', type: 'ENUM', options: ['std', 'pro'] },
        { key: 'modules', label: 'Modules', type: 'STRING_LIST' },
      ],
    });
    const ok = await h.admin('POST', `/products/${p.id}/releases`, { version: '1.0.0', requires: { edition: 'pro', modules: 'export' } });
    expect(ok.statusCode).toBe(201);
    expect(ok.data.requires).toEqual({ edition: 'pro', modules: 'export' });
    expect((await h.admin('POST', `/products/${p.id}/releases`, { version: '1.0.1', requires: { edition: 'gold' } })).statusCode).toBe(400);
    expect((await h.admin('POST', `/products/${p.id}/releases`, { version: '1.0.1', requires: { modules: ['export'] } })).statusCode).toBe(400);
  });

  it('lists with filters, refuses unknown filter values, hides another organisation’s releases', async () => {
    const p = await product();
    const r = await release(p.id, { version: '1.0.0-beta.1' });
    await release(p.id, { version: '1.0.0' });
    expect((await h.admin('GET', `/products/${p.id}/releases?channel=beta`)).data.map((x: { id: number }) => x.id)).toEqual([r.id]);
    expect((await h.admin('GET', `/products/${p.id}/releases?status=PUBLISHED`)).data).toEqual([]);
    expect((await h.admin('GET', `/products/${p.id}/releases?status=LIVE`)).statusCode).toBe(400);
    expect((await h.admin('GET', `/products/${p.id}/releases?channel=nightly`)).statusCode).toBe(400);
    const other = await h.otherOrg();
    expect((await other.admin('GET', `/releases/${r.id}`)).statusCode).toBe(404);
    expect((await other.admin('DELETE', `/releases/${r.id}`)).statusCode).toBe(404);
  });

  it('lets VIEWER read and refuses VIEWER writes', async () => {
    const p = await product();
    const r = await release(p.id);
    const viewer = await h.createMember('VIEWER');
    const as = h.as({ cookie: viewer.cookie });
    expect((await as('GET', `/releases/${r.id}`)).statusCode).toBe(200);
    expect((await as('POST', `/products/${p.id}/releases`, { version: '9.9.9' })).statusCode).toBe(403);
    const issuer = await h.createMember('ISSUER');
    expect((await h.as({ cookie: issuer.cookie })('POST', `/products/${p.id}/releases`, { version: '9.9.9' })).statusCode).toBe(201);
  });

  it('changes the channel in DRAFT only; notes any time; deletes a draft only; a product with releases stays', async () => {
    const p = await product();
    const r = await release(p.id, { version: '4.0.0-beta.1' });
    const changed = await h.admin('PUT', `/releases/${r.id}`, { channel: 'dev', notes: '# Changes', bundleVersion: '400' });
    expect(changed.data).toMatchObject({ channel: 'dev', notes: '# Changes', bundleVersion: '400' });
    expect((await h.admin('PUT', `/releases/${r.id}`, { channel: 'stable' })).statusCode).toBe(400);
    expect((await h.admin('DELETE', `/products/${p.id}`)).statusCode).toBe(409);
    expect((await put(r.id, 'app.tar.gz', Buffer.from('bytes'))).status).toBe(201);
    expect((await h.admin('POST', `/releases/${r.id}/publish`)).statusCode).toBe(200);
    const refused = await h.admin('PUT', `/releases/${r.id}`, { channel: 'beta', notes: 'lost' });
    expect(refused.statusCode).toBe(409);
    expect((await h.admin('GET', `/releases/${r.id}`)).data).toMatchObject({ channel: 'dev', notes: '# Changes' });
    expect((await h.admin('PUT', `/releases/${r.id}`, { notes: 'later' })).data.notes).toBe('later');
    expect((await h.admin('DELETE', `/releases/${r.id}`)).statusCode).toBe(409);
    const draft = await release(p.id);
    expect((await put(draft.id, 'x.bin', Buffer.from('x'))).status).toBe(201);
    const before = filesOnDisk().length;
    expect((await h.admin('DELETE', `/releases/${draft.id}`)).statusCode).toBe(204);
    expect((await h.admin('GET', `/releases/${draft.id}`)).statusCode).toBe(404);
    expect(filesOnDisk().length).toBe(before - 1);
  });
});

describe('artifacts', () => {
  it('stores a file with its digests and media type, and the operator downloads it', async () => {
    const p = await product();
    const r = await release(p.id);
    const bytes = Buffer.from('the installer bytes\n'.repeat(50));
    const answer = await upload(r.id, 'filename=App%20Setup%201.0.exe&platform=windows&arch=x86_64', [bytes], {
      length: bytes.length,
      contentType: 'application/vnd.microsoft.portable-executable; charset=binary',
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({
      releaseId: r.id,
      filename: 'App Setup 1.0.exe',
      platform: 'windows',
      arch: 'x86_64',
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      sha512: createHash('sha512').update(bytes).digest('hex'),
      contentType: 'application/vnd.microsoft.portable-executable',
      backend: 'disk',
      tauriSignature: null,
      edSignature: null,
      downloads: 0,
    });
    const row = await h.database.db.selectFrom('artifacts').selectAll().where('id', '=', answer.body.id).executeTakeFirstOrThrow();
    expect(row.storage_key).toMatch(new RegExp(`^\\d+/${r.id}/[0-9a-f]{32}/App Setup 1\\.0\\.exe$`));
    expect(fs.readFileSync(path.join(artifactDir(), row.storage_key)).equals(bytes)).toBe(true);
    const download = await h.admin('GET', `/releases/${r.id}/artifacts/${answer.body.id}/download`);
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(bytes)).toBe(true);
    expect(download.headers).toMatchObject({
      'content-type': 'application/vnd.microsoft.portable-executable',
      'content-disposition': 'attachment; filename="App Setup 1.0.exe"',
      'accept-ranges': 'bytes',
      etag: `"${answer.body.sha256}"`,
    });
    // Chunked works too, and with signatures.
    const sig = Buffer.from('untrusted comment: signature from tauri secret key\nRUQ...\n').toString('base64');
    const ed = Buffer.alloc(64, 7).toString('base64');
    const chunked = await upload(
      r.id,
      `filename=app.AppImage&platform=linux&arch=x86_64&tauriSignature=${encodeURIComponent(sig)}&edSignature=${encodeURIComponent(ed)}`,
      [Buffer.from('abc'), Buffer.from('def')],
    );
    expect(chunked.status).toBe(201);
    expect(chunked.body).toMatchObject({ size: 6, contentType: 'application/octet-stream', tauriSignature: sig, edSignature: ed });
    expect((await h.admin('GET', `/releases/${r.id}`)).data.artifacts.map((a: { filename: string }) => a.filename)).toEqual([
      'App Setup 1.0.exe',
      'app.AppImage',
    ]);
  });

  it('refuses bad names and queries before the body, leaving no row and no bytes', async () => {
    const p = await product();
    const r = await release(p.id);
    const before = filesOnDisk();
    for (const filename of ['a/b.exe', 'a\\b.exe', '.hidden', 'App..Setup.exe', '..', 'a\u0001b', 'trailing ', '']) {
      const answer = await put(r.id, filename, Buffer.from('x'));
      expect(answer.status, JSON.stringify(filename)).toBe(400);
      expect(answer.body.error).toMatch(/filename/);
    }
    for (const query of [
      'filename=a.exe&platform=beos&arch=x86_64',
      'filename=a.exe&platform=linux&arch=m68k',
      'filename=a.exe&platform=linux&arch=x86_64&edSignature=AAAA',
    ]) {
      expect((await upload(r.id, query, [Buffer.from('x')], { length: 1 })).status).toBe(400);
    }
    expect((await upload(999_999, 'filename=a.exe&platform=linux&arch=x86_64', [Buffer.from('x')], { length: 1 })).status).toBe(404);
    expect(await artifactRows(r.id)).toBe(0);
    expect(filesOnDisk()).toEqual(before);
  });

  it('refuses a file over the bound by Content-Length before the body, and on crossing it when chunked; refuses empty; a taken name', async () => {
    const p = await product();
    const r = await release(p.id);
    const before = filesOnDisk();
    // Only the headers are sent: the answer comes before any byte of the body.
    const early = await upload(r.id, 'filename=big.bin&platform=any&arch=any', [], { length: MAX + 1 });
    expect(early.status).toBe(413);
    expect(early.body.error).toMatch(/larger/);
    const crossing = await upload(r.id, 'filename=big.bin&platform=any&arch=any', [Buffer.alloc(MAX - 10), Buffer.alloc(20)]);
    expect(crossing.status).toBe(413);
    const empty = await upload(r.id, 'filename=empty.bin&platform=any&arch=any', []);
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatch(/empty/);
    expect((await upload(r.id, 'filename=empty.bin&platform=any&arch=any', [], { length: 0 })).status).toBe(400);
    expect(await artifactRows(r.id)).toBe(0);
    expect(filesOnDisk()).toEqual(before);
    expect((await put(r.id, 'one.bin', Buffer.from('1'))).status).toBe(201);
    expect((await put(r.id, 'one.bin', Buffer.from('2'))).status).toBe(409);
    expect(await artifactRows(r.id)).toBe(1);
  });

  it('holds the organisation to its quota', async () => {
    const p = await product();
    const r = await release(p.id);
    const used = Number(
      (
        await h.database.db
          .selectFrom('artifacts')
          .select((eb) => eb.fn.sum<number>('size').as('n'))
          .executeTakeFirstOrThrow()
      ).n ?? 0,
    );
    let left = QUOTA - used;
    let i = 0;
    while (left >= MAX) {
      expect((await put(r.id, `fill-${i++}.bin`, Buffer.alloc(MAX))).status).toBe(201);
      left -= MAX;
    }
    const over = await upload(r.id, 'filename=over.bin&platform=any&arch=any', [], { length: left + 1 });
    expect(over.status).toBe(413);
    expect(over.body.error).toMatch(/quota/);
    const overChunked = await upload(r.id, 'filename=over.bin&platform=any&arch=any', [Buffer.alloc(left), Buffer.alloc(1)]);
    expect(overChunked.status).toBe(413);
    expect(overChunked.body.error).toMatch(/quota/);
    // Free the space for the tests after this one.
    for (const a of (await h.admin('GET', `/releases/${r.id}`)).data.artifacts)
      expect((await h.admin('DELETE', `/releases/${r.id}/artifacts/${a.id}`)).statusCode).toBe(204);
  });

  it('leaves no row and no bytes when the connection breaks mid-upload', async () => {
    const p = await product();
    const r = await release(p.id);
    const before = filesOnDisk();
    await brokenUpload(`${base}/releases/${r.id}/artifacts`, token);
    // The server notices the broken stream and removes its temp file.
    for (let i = 0; i < 50 && filesOnDisk().length !== before.length; i++) await new Promise((r2) => setTimeout(r2, 50));
    expect(filesOnDisk()).toEqual(before);
    expect(await artifactRows(r.id)).toBe(0);
  });

  it('adds and deletes artifacts in DRAFT only', async () => {
    const p = await product();
    const r = await release(p.id);
    const a = await put(r.id, 'a.bin', Buffer.from('a'));
    expect((await h.admin('POST', `/releases/${r.id}/publish`)).statusCode).toBe(200);
    expect((await put(r.id, 'b.bin', Buffer.from('b'))).status).toBe(409);
    expect((await h.admin('DELETE', `/releases/${r.id}/artifacts/${a.body.id}`)).statusCode).toBe(409);
    expect((await h.admin('GET', `/releases/${r.id}/artifacts/${a.body.id}/download`)).statusCode).toBe(200);
  });
});

describe('licensor artifacts verify (disk)', () => {
  it('re-hashes the files of an organisation: a changed one is mismatched, a deleted one missing, exit 1', async () => {
    // An organisation of its own, so the other tests' files are not its business.
    const other = await h.otherOrg();
    const created = await other.admin('POST', '/products', { productKey: 'verified', name: 'Verified' });
    const r = (await other.admin('POST', `/products/${created.data.id}/releases`, { version: '1.0.0' })).data;
    const files: any[] = [];
    for (const name of ['kept.bin', 'changed.bin', 'lost.bin']) {
      const uploaded = await other.admin('POST', `/releases/${r.id}/artifacts?filename=${name}&platform=any&arch=any`, `bytes of ${name}`, {
        'content-type': 'application/octet-stream',
      });
      expect(uploaded.statusCode).toBe(201);
      files.push(uploaded.data);
    }
    const clean = await runCli(['artifacts', 'verify', '--org', other.slug], h.env);
    expect([clean.code, JSON.parse(clean.stdout)]).toEqual([0, { checked: 3, missing: [], mismatched: [] }]);

    const fileOf = async (id: number) =>
      path.join(artifactDir(), (await h.database.db.selectFrom('artifacts').select('storage_key').where('id', '=', id).executeTakeFirstOrThrow()).storage_key);
    // The same size, other bytes: only the digests tell.
    fs.writeFileSync(await fileOf(files[1].id), 'BYTES OF changed.bin');
    fs.rmSync(await fileOf(files[2].id));
    const found = await runCli(['artifacts', 'verify', '--org', other.slug], h.env);
    expect(found.code).toBe(1);
    expect(JSON.parse(found.stdout)).toEqual({
      checked: 3,
      missing: [{ id: files[2].id, releaseId: r.id, filename: 'lost.bin' }],
      mismatched: [{ id: files[1].id, releaseId: r.id, filename: 'changed.bin' }],
    });
    const unknown = await runCli(['artifacts', 'verify', '--org', 'no-such-org'], h.env);
    expect([unknown.code, unknown.stderr]).toEqual([1, 'licensor: no organisation "no-such-org"\n']);

    // A row kept in S3 while LICENSOR_ARTIFACT_STORE is disk: its bucket is unknown, so 503 and no verdict.
    await h.database.db.updateTable('artifacts').set({ backend: 's3' }).where('id', '=', files[0].id).execute();
    const unreachable = await other.admin('GET', `/releases/${r.id}/artifacts/${files[0].id}/download`);
    expect([unreachable.statusCode, unreachable.data.error]).toEqual([503, expect.stringMatching(/S3/)]);
    const refused = await runCli(['artifacts', 'verify', '--org', other.slug], h.env);
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([1, '', expect.stringMatching(/^licensor: .*S3/)]);
  });
});

describe('publish, yank, unyank', () => {
  const verifies = (manifest: string, signatures: Array<{ keyFingerprint: string; signature: string }>, pem: string) => {
    const key = createPublicKey(pem);
    const fingerprint = createHash('sha256')
      .update(key.export({ type: 'spki', format: 'der' }))
      .digest('hex');
    const entry = signatures.find((s) => s.keyFingerprint === fingerprint);
    return entry !== undefined && verifyBytes(key, Buffer.from(manifest, 'utf8'), b64uDecode(entry.signature));
  };

  it('refuses without an artifact, signs the manifest, yanks and unyanks, all audited', async () => {
    const p = await product();
    const r = await release(p.id, { version: '5.0.0' });
    const none = await h.admin('POST', `/releases/${r.id}/publish`);
    expect(none.statusCode).toBe(409);
    expect(none.data.error).toMatch(/no artifact/);
    const b = await put(r.id, 'b.zip', Buffer.from('bbb'));
    const a = await put(r.id, 'A.zip', Buffer.from('aa'));
    const published = await h.admin('POST', `/releases/${r.id}/publish`, {});
    expect(published.statusCode).toBe(200);
    const data = published.data;
    expect(data.status).toBe('PUBLISHED');
    const seconds = Date.parse(data.publishedAt) / 1000;
    expect(Number.isInteger(seconds)).toBe(true);
    expect(data.manifest).toBe(
      [
        'SVCM1',
        h.slug,
        p.productKey,
        '5.0.0',
        'stable',
        String(seconds),
        '2',
        'A.zip',
        'linux',
        'x86_64',
        '2',
        a.body.sha256,
        'b.zip',
        'linux',
        'x86_64',
        '3',
        b.body.sha256,
      ].join('\u001f'),
    );
    expect(data.manifestSignatures).toHaveLength(1);
    expect(data.manifestSignature).toBe(data.manifestSignatures[0].signature);
    expect(verifies(data.manifest, data.manifestSignatures, p.publicKeyPem)).toBe(true);
    expect((await h.admin('POST', `/releases/${r.id}/publish`)).statusCode).toBe(409);
    expect((await h.admin('POST', `/releases/${r.id}/unyank`)).statusCode).toBe(409);
    expect((await h.admin('POST', `/releases/${r.id}/yank`, { reason: '' })).statusCode).toBe(400);
    const yanked = await h.admin('POST', `/releases/${r.id}/yank`, { reason: 'crashes on start' });
    expect(yanked.data).toMatchObject({ status: 'YANKED', yankedReason: 'crashes on start' });
    expect((await h.admin('POST', `/releases/${r.id}/yank`)).statusCode).toBe(409);
    const back = await h.admin('POST', `/releases/${r.id}/unyank`);
    expect(back.data).toMatchObject({ status: 'PUBLISHED', yankedAt: null, yankedReason: null, manifest: data.manifest });
    const actions = (await h.admin('GET', '/dashboard/activity?limit=200')).data.items.map((e: { action: string }) => e.action);
    for (const action of ['release.created', 'artifact.uploaded', 'release.published', 'release.yanked', 'release.unyanked']) expect(actions).toContain(action);
  });

  it('backdates publishedAt (audited backdated: true) and refuses a future one', async () => {
    const p = await product();
    const r = await release(p.id);
    await put(r.id, 'a.bin', Buffer.from('a'));
    expect((await h.admin('POST', `/releases/${r.id}/publish`, { publishedAt: new Date(Date.now() + 3_600_000).toISOString() })).statusCode).toBe(400);
    const published = await h.admin('POST', `/releases/${r.id}/publish`, { publishedAt: '2025-03-01T12:00:00.750Z' });
    expect(published.data.publishedAt).toBe('2025-03-01T12:00:00.000Z');
    expect(published.data.manifest.split('\u001f')[5]).toBe(String(Date.parse('2025-03-01T12:00:00Z') / 1000));
    const entry = (await h.admin('GET', '/dashboard/activity?limit=200')).data.items.find(
      (e: { action: string; subjectId: string }) => e.action === 'release.published' && String(e.subjectId) === String(r.id),
    );
    expect(entry.details).toMatchObject({ backdated: true });
  });

  it('signs with every key after a rotation, current first', async () => {
    const p = await product({ algorithm: 'EC_P256' });
    const rotated = await h.admin('PUT', `/products/${p.id}`, { regenerateKey: true, algorithm: 'ED25519' });
    expect(rotated.statusCode).toBe(200);
    const r = await release(p.id);
    await put(r.id, 'a.bin', Buffer.from('a'));
    const data = (await h.admin('POST', `/releases/${r.id}/publish`)).data;
    expect(data.manifestSignatures).toHaveLength(2);
    expect(verifies(data.manifest, [data.manifestSignatures[0]], rotated.data.publicKeyPem)).toBe(true);
    expect(verifies(data.manifest, [data.manifestSignatures[1]], p.publicKeyPem)).toBe(true);
    expect(data.manifestKeyFingerprint).toBe(data.manifestSignatures[0].keyFingerprint);
  });
});

describe('release webhooks', () => {
  it('raises release.published, .yanked and .unyanked with data.release; subscribing needs releases:read', async () => {
    const limited = await h.createToken(['webhooks:write', 'licenses:read']);
    const refused = await h.as({ token: limited })('POST', '/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['release.published'] });
    expect(refused.statusCode).toBe(403);
    const endpoint = await h.admin('POST', '/webhooks', {
      url: 'http://127.0.0.1:9/hooks',
      events: ['release.published', 'release.yanked', 'release.unyanked'],
    });
    expect(endpoint.statusCode).toBe(201);
    const p = await product();
    const r = await release(p.id);
    await put(r.id, 'a.bin', Buffer.from('a'));
    await h.admin('POST', `/releases/${r.id}/publish`);
    await h.admin('POST', `/releases/${r.id}/yank`, { reason: 'bad' });
    await h.admin('POST', `/releases/${r.id}/unyank`);
    const events = await h.database.db.selectFrom('webhook_events').select(['type', 'data']).where('type', 'like', 'release.%').orderBy('id').execute();
    const mine = events.map((e) => ({ type: e.type, data: JSON.parse(e.data) })).filter((e) => e.data.release?.id === r.id);
    expect(mine.map((e) => [e.type, e.data.release.status])).toEqual([
      ['release.published', 'PUBLISHED'],
      ['release.yanked', 'YANKED'],
      ['release.unyanked', 'PUBLISHED'],
    ]);
  });
});
