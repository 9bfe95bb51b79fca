import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenKey } from '../../src/downloads/tokens.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { nonce } from '../check-helpers.js';
import { edSig, pathOf, releasedProduct, type ReleasedProduct } from '../download-helpers.js';
import { inOneRateWindow, startHarness, type Harness } from '../harness.js';
import { addDays, fingerprint, todayUtc } from '../licence-helpers.js';

let h: Harness;
let p: ReleasedProduct;
let grantKey: Buffer;
const CONTENT = 'MZ-the-installer-bytes-0123456789';

beforeAll(async () => {
  h = await startHarness();
  grantKey = tokenKey(
    loadMasterKey(h.config, () => {}),
    'grant',
  );
  p = await releasedProduct(h, { params: [{ key: 'edition', label: 'Edition', type: 'ENUM', options: ['std', 'pro'] }] });
});
afterAll(() => h?.close());

const get = (url: string, headers: Record<string, string> = {}) => h.request('GET', pathOf(url), { headers });
const setRow = (lid: string, set: Record<string, unknown>) => h.database.db.updateTable('licences').set(set).where('lid', '=', lid).execute();
/** The download counts written (DownloadCounts writes every second). */
async function downloadsOf(releaseId: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1_300));
  return (await h.admin('GET', `/releases/${releaseId}`)).data.downloads;
}
/** A grant as the service makes it, from the test's own copy of the key: `json` as given, so it may be non-canonical. */
function signedGrant(json: string): string {
  const signed = `SVCG1.${Buffer.from(json).toString('base64url')}`;
  return `${signed}.${createHmac('sha256', grantKey).update(signed, 'ascii').digest('base64url')}`;
}

describe('download grants (DESIGN 20)', () => {
  it('grants a seated machine a link that downloads, with ranges, HEAD and counts', async () => {
    const release = await p.ship('1.0.0', [{ filename: 'App Setup 1.0.0.exe', platform: 'windows', arch: 'x86_64', content: CONTENT, edSignature: edSig(1) }], {
      notes: 'First',
    });
    const artifact = release.artifacts[0];
    const licence = await p.seated('grant-1');
    const answer = await p.grant({ license: licence.licenseString, fingerprint: fingerprint('grant-1'), artifactId: artifact.id });
    expect(answer.statusCode, answer.body).toBe(200);
    expect(Object.keys(answer.data)).toEqual(['url', 'expiresAt', 'artifact', 'release']);
    expect(answer.data.artifact).toEqual({
      id: artifact.id,
      filename: 'App Setup 1.0.0.exe',
      platform: 'windows',
      arch: 'x86_64',
      size: CONTENT.length,
      sha256: createHash('sha256').update(CONTENT).digest('hex'),
      sha512: createHash('sha512').update(CONTENT).digest('hex'),
      contentType: 'application/octet-stream',
    });
    expect(answer.data.release).toEqual({
      version: '1.0.0',
      channel: 'stable',
      publishedAt: release.publishedAt,
      notes: 'First',
      manifest: release.manifest,
      manifestSignatures: release.manifestSignatures,
      manifestSignature: release.manifestSignature,
      manifestKeyFingerprint: release.manifestKeyFingerprint,
    });
    const expiresIn = Date.parse(answer.data.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(290_000);
    expect(expiresIn).toBeLessThanOrEqual(300_000);
    const url = new URL(answer.data.url);
    expect(url.pathname).toMatch(new RegExp(`^/o/${h.slug}/api/public/downloads/SVCG1\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+/App%20Setup%201\\.0\\.0\\.exe$`));
    const json = JSON.parse(Buffer.from(url.pathname.split('/')[6]!.split('.')[1]!, 'base64url').toString());
    expect(json).toEqual({ art: artifact.id, lid: licence.lid, exp: Date.parse(answer.data.expiresAt) / 1000 });

    const whole = await get(answer.data.url);
    expect(whole.statusCode).toBe(200);
    expect(whole.body).toBe(CONTENT);
    expect(whole.headers).toMatchObject({
      'content-length': String(CONTENT.length),
      'content-type': 'application/octet-stream',
      'content-disposition': 'attachment; filename="App Setup 1.0.0.exe"',
      'accept-ranges': 'bytes',
      etag: `"${artifact.sha256}"`,
      'cache-control': 'no-store',
    });
    const first = await get(answer.data.url, { range: 'bytes=0-3' });
    expect([first.statusCode, first.body, first.headers['content-range']]).toEqual([206, 'MZ-t', `bytes 0-3/${CONTENT.length}`]);
    const later = await get(answer.data.url, { range: 'bytes=4-' });
    expect([later.statusCode, later.body]).toEqual([206, CONTENT.slice(4)]);
    const batch = await get(answer.data.url, { range: 'bytes=0-1,5-6' });
    expect(batch.statusCode).toBe(206);
    expect(batch.headers['content-type']).toMatch(/^multipart\/byteranges; boundary=/);
    expect(batch.body).toContain(`Content-Range: bytes 5-6/${CONTENT.length}`);
    const outside = await get(answer.data.url, { range: `bytes=${CONTENT.length}-` });
    expect([outside.statusCode, outside.headers['content-range']]).toEqual([416, `bytes */${CONTENT.length}`]);
    const head = await h.request('HEAD', pathOf(answer.data.url));
    expect([head.statusCode, head.body, head.headers['content-length']]).toEqual([200, '', String(CONTENT.length)]);
    // The operator's own download is answered alike, and never counted.
    const operatorPath = `/releases/${release.id}/artifacts/${artifact.id}/download`;
    const operatorWhole = await h.admin('GET', operatorPath);
    expect([operatorWhole.statusCode, operatorWhole.body, operatorWhole.headers.etag]).toEqual([200, CONTENT, `"${answer.data.artifact.sha256}"`]);
    const operatorRange = await h.admin('GET', operatorPath, undefined, { range: 'bytes=0-3' });
    expect([operatorRange.statusCode, operatorRange.body]).toEqual([206, 'MZ-t']);
    // The whole file, the range from byte 0 and the batch from byte 0: three downloads.
    expect(await downloadsOf(release.id)).toBe(3);
    const metrics = (await h.request('GET', '/metrics')).body;
    expect(metrics).toMatch(/^licensor_artifact_downloads_total 3$/m);
    const sent = Number(/^licensor_artifact_bytes_sent_total (\d+)$/m.exec(metrics)?.[1]);
    expect(sent).toBeGreaterThanOrEqual(CONTENT.length + 4 + CONTENT.length - 4);
  });

  it('gives the check’s refusals to its 400s, without the nonce rule', async () => {
    const release = await p.ship('1.0.1', [{ filename: 'a.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }]);
    const licence = await p.seated('refusals');
    const body = { license: licence.licenseString, fingerprint: fingerprint('refusals'), artifactId: release.artifacts[0].id };
    const noToken = await h.anonymous('POST', `/public/license/${p.checkId}/download`, body);
    expect(noToken.statusCode).toBe(401);
    expect((await p.grant({ ...body, nonce: nonce() })).statusCode).toBe(400);
    const noFingerprint = await p.grant({ license: body.license, artifactId: body.artifactId });
    expect([noFingerprint.statusCode, noFingerprint.data.error]).toEqual([
      400,
      "Fingerprint (fingerprint): an ONLINE licence sends this machine's fingerprint",
    ]);
    expect((await p.grant({ ...body, fingerprint: 'SVC1.bad.sum' })).data.error).toMatch(/^Fingerprint \(fingerprint\):/);
    const tampered = `${body.license.slice(0, -4)}AAAA`;
    expect((await p.grant({ ...body, license: tampered })).data.error).toMatch(/^Licence \(license\):/);
    const text = await h.request('POST', `/o/${h.slug}/api/public/license/${p.checkId}/download`, {
      headers: { authorization: `Bearer ${p.token}`, 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.statusCode).toBe(415);
  });

  it('refuses in DESIGN’s order: UNKNOWN_LICENCE, REVOKED, NOT_YET_VALID, EXPIRED (a trial), NO_SEAT; then 404, NOT_ENTITLED, UPDATES_EXPIRED', async () => {
    const release = await p.ship('1.0.2', [{ filename: 'b.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }]);
    const artifactId = release.artifacts[0].id;
    const ask = (licence: any, machine: string, id = artifactId) =>
      p.grant({ license: licence.licenseString, fingerprint: fingerprint(machine), artifactId: id });
    const reason = async (licence: any, machine: string, id = artifactId) => {
      const answer = await ask(licence, machine, id);
      return [answer.statusCode, answer.data.reason];
    };

    // A correctly signed licence the service no longer holds (its rows removed behind its back).
    const gone = await p.issue({ licenceType: 'OFFLINE' });
    const row = await h.database.db.selectFrom('licences').select('id').where('lid', '=', gone.lid).executeTakeFirstOrThrow();
    await h.database.db.deleteFrom('licence_stamps').where('licence_id', '=', row.id).execute();
    await h.database.db.deleteFrom('licences').where('id', '=', row.id).execute();
    expect(await reason(gone, 'x')).toEqual([403, 'UNKNOWN_LICENCE']);

    // Revoked comes before the missing seat.
    const revoked = await p.issue();
    expect((await h.admin('POST', `/licenses/${revoked.lid}/revoke`, {})).statusCode).toBe(200);
    expect(await reason(revoked, 'never-checked')).toEqual([403, 'REVOKED']);

    const pending = await p.issue({ startsOn: addDays(todayUtc(), 10) });
    expect(await reason(pending, 'never-checked')).toEqual([403, 'NOT_YET_VALID']);

    const trial = await p.seated('trial-machine');
    await setRow(trial.lid, { trial: 1, expires_at: Date.now() - 86_400_000, grace_days: 0, grace_ends_at: Date.now() - 86_400_000 });
    expect(await reason(trial, 'trial-machine')).toEqual([403, 'EXPIRED']);

    const unseated = await p.issue();
    expect(await reason(unseated, 'never-checked')).toEqual([403, 'NO_SEAT']);
    const seated = await p.seated('seated', { params: { edition: 'std' } });
    expect(await reason(seated, 'another-machine')).toEqual([403, 'NO_SEAT']);

    // An OFFLINE licence needs no fingerprint and no seat.
    const offline = await p.issue({ licenceType: 'OFFLINE' });
    expect((await p.grant({ license: offline.licenseString, artifactId })).statusCode).toBe(200);

    const other = await releasedProduct(h);
    const elsewhere = await other.ship('1.0.0', [{ filename: 'c.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }]);
    expect((await ask(seated, 'seated', elsewhere.artifacts[0].id)).statusCode).toBe(404);
    const draft = await p.ship('1.0.3', [{ filename: 'd.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }], { draft: true });
    expect((await ask(seated, 'seated', draft.artifacts[0].id)).statusCode).toBe(404);
    const yanked = await p.ship('1.0.4', [{ filename: 'e.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }]);
    await h.admin('POST', `/releases/${yanked.id}/yank`, {});
    expect((await ask(seated, 'seated', yanked.artifacts[0].id)).statusCode).toBe(404);

    // A window that ended before the release: UPDATES_EXPIRED; `requires` unmet comes first.
    const pro = await p.ship('1.1.0', [{ filename: 'f.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }], { requires: { edition: 'pro' } });
    expect(await reason(seated, 'seated', pro.artifacts[0].id)).toEqual([403, 'NOT_ENTITLED']);
    await setRow(seated.lid, { updates_until: Math.floor(Date.parse(release.publishedAt) / 1000) - 1 });
    expect(await reason(seated, 'seated', pro.artifacts[0].id)).toEqual([403, 'NOT_ENTITLED']);
    expect(await reason(seated, 'seated')).toEqual([403, 'UPDATES_EXPIRED']);
    // A release published before the window ended is covered, backdated or not.
    const old = await p.ship('0.9.0', [{ filename: 'g.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }], {
      publishedAt: new Date(Date.parse(release.publishedAt) - 3_600_000).toISOString(),
    });
    expect((await ask(seated, 'seated', old.artifacts[0].id)).statusCode).toBe(200);
  });

  it('lets a floating licence download from a machine holding a live lease only', async () => {
    const floating = await releasedProduct(h, { seatModel: 'FLOATING', allowedLicenceTypes: ['ONLINE'], leaseSeconds: 60 });
    const r = await floating.ship('1.0.0', [{ filename: 'f.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }]);
    const licence = await floating.seated('leased', { maxMachines: 2 });
    const ask = (machine: string) => floating.grant({ license: licence.licenseString, fingerprint: fingerprint(machine), artifactId: r.artifacts[0].id });
    expect((await ask('leased')).statusCode).toBe(200);
    const other = await ask('not-leased');
    expect([other.statusCode, other.data.reason]).toEqual([403, 'NO_SEAT']);
    // A lapsed lease is no seat.
    const row = await h.database.db.selectFrom('licences').select('id').where('lid', '=', licence.lid).executeTakeFirstOrThrow();
    await h.database.db
      .updateTable('machine_bindings')
      .set({ lease_ends_at: Date.now() - 1_000 })
      .where('licence_id', '=', row.id)
      .execute();
    expect((await ask('leased')).data.reason).toBe('NO_SEAT');
  });

  it('lets an expired paid licence without a window keep what was published before its grace end', async () => {
    const before = await p.ship('2.0.0', [{ filename: 'h.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }], {
      publishedAt: new Date(Date.now() - 10 * 86_400_000).toISOString(),
    });
    const after = await p.ship('2.0.1', [{ filename: 'i.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }]);
    const offline = await p.issue({ licenceType: 'OFFLINE', validityMonths: 12 });
    const ended = Date.now() - 5 * 86_400_000;
    await setRow(offline.lid, { expires_at: ended, grace_days: 0, grace_ends_at: ended, updates_until: null });
    expect((await p.grant({ license: offline.licenseString, artifactId: before.artifacts[0].id })).statusCode).toBe(200);
    const refused = await p.grant({ license: offline.licenseString, artifactId: after.artifacts[0].id });
    expect([refused.statusCode, refused.data.reason]).toEqual([403, 'UPDATES_EXPIRED']);
    // A perpetual licence without a window has every release.
    const perpetual = await p.issue({ licenceType: 'OFFLINE' });
    expect((await p.grant({ license: perpetual.licenseString, artifactId: after.artifacts[0].id })).statusCode).toBe(200);
  });
});

describe('grant links (DESIGN 20, path tokens)', () => {
  let release: any;
  let licence: any;
  let url: string;

  beforeAll(async () => {
    release = await p.ship('3.0.0', [{ filename: 'App-3.0.0.zip', platform: 'darwin', arch: 'universal', content: CONTENT }]);
    licence = await p.issue({ licenceType: 'OFFLINE' });
    url = (await p.grant({ license: licence.licenseString, artifactId: release.artifacts[0].id })).data.url;
  });

  it('refuses a tampered, non-canonical or expired grant with 403 before any lookup, and an unknown slug with 404 after', async () => {
    const path = new URL(url).pathname;
    const grant = path.split('/')[6]!;
    const with_ = (token: string, slug = h.slug) => h.request('GET', `/o/${slug}/api/public/downloads/${token}/App-3.0.0.zip`);
    const flipped = `${grant.slice(0, -2)}${grant.endsWith('AA') ? 'BB' : 'AA'}`;
    expect([(await with_(flipped)).statusCode, (await with_(flipped)).data.error]).toEqual([
      403,
      'this download link is not valid: ask the application for a new one',
    ]);
    // A valid MAC over JSON that is not byte for byte the grant's form.
    const art = release.artifacts[0].id;
    const exp = Math.floor(Date.now() / 1000) + 300;
    expect((await with_(signedGrant(`{"art": ${art},"lid":"${licence.lid}","exp":${exp}}`))).statusCode).toBe(403);
    expect((await with_(signedGrant(`{"lid":"${licence.lid}","art":${art},"exp":${exp}}`))).statusCode).toBe(403);
    const expired = await with_(signedGrant(`{"art":${art},"lid":"${licence.lid}","exp":${Math.floor(Date.now() / 1000) - 1}}`));
    expect([expired.statusCode, expired.data.error]).toEqual([403, 'this download link has expired: ask the application for a new one']);
    // Even under an unknown organisation the bad token is refused first.
    expect((await with_(flipped, 'no-such-org')).statusCode).toBe(403);
    expect((await with_(grant, 'no-such-org')).statusCode).toBe(404);
    const other = await h.otherOrg();
    expect((await with_(grant, other.slug)).statusCode).toBe(404);
    expect((await with_(grant)).statusCode).toBe(200);
  });

  it('answers 404 for another filename or a yanked release, 403 REVOKED once revoked, 403 for an inactive product', async () => {
    const path = new URL(url).pathname;
    expect((await h.request('GET', path.replace(/App-3\.0\.0\.zip$/, 'Other.zip'))).statusCode).toBe(404);
    const q = await releasedProduct(h);
    const r = await q.ship('1.0.0', [{ filename: 'q.exe', platform: 'windows', arch: 'x86_64', content: CONTENT }]);
    const l = await q.issue({ licenceType: 'OFFLINE' });
    const link = (await q.grant({ license: l.licenseString, artifactId: r.artifacts[0].id })).data.url;
    expect((await get(link)).statusCode).toBe(200);
    await h.admin('PUT', `/products/${q.id}`, { active: false });
    expect([(await get(link)).statusCode, (await get(link)).data.error]).toEqual([403, 'the product is inactive']);
    await h.admin('PUT', `/products/${q.id}`, { active: true });
    await h.admin('POST', `/releases/${r.id}/yank`, {});
    expect((await get(link)).statusCode).toBe(404);
    await h.admin('POST', `/releases/${r.id}/unyank`);
    expect((await get(link)).statusCode).toBe(200);
    await h.admin('POST', `/licenses/${l.lid}/revoke`, {});
    const revoked = await get(link);
    expect([revoked.statusCode, revoked.data.reason]).toEqual([403, 'REVOKED']);
  });

  it('writes the token to the request log cut to 12 characters', async () => {
    const { app, lines } = await h.loggedApp();
    const path = new URL(url).pathname;
    const grant = path.split('/')[6]!;
    expect((await h.request('GET', path, { app })).statusCode).toBe(200);
    const logged = lines.join('\n');
    expect(logged).not.toContain(grant.slice(12, 40));
    expect(logged).toContain(`/public/downloads/${grant.slice(0, 12)}…/App-3.0.0.zip`);
    await app.close();
  });
});

describe('the per-address limit (DESIGN 20, path tokens)', () => {
  it('answers 429 with Retry-After before the token is read, counting path-token requests with checks', async () => {
    const limited = await startHarness({ LICENSOR_CHECK_RATE_ADDRESS: '3' });
    try {
      const statuses: number[] = [];
      let last: any;
      await inOneRateWindow(10);
      for (let i = 0; i < 4; i++) {
        // The second is a check: both kinds count towards one per-address limit.
        last =
          i === 1
            ? await limited.request('POST', `/o/${limited.slug}/api/public/license/nosuchproduct1/check`, { body: {} })
            : await limited.request('GET', `/o/${limited.slug}/api/public/downloads/SVCG1.bad.token/x.exe`);
        statuses.push(last.statusCode);
      }
      expect(statuses.slice(0, 3)).toEqual([403, 401, 403]);
      expect(statuses[3]).toBe(429);
      expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });
});

describe('reset-download-links', () => {
  it('raises feedGeneration (licenses:write), audited', async () => {
    const licence = await p.seated('reset');
    expect(licence.feedGeneration).toBe(1);
    const reader = await h.createToken(['licenses:read']);
    expect((await h.as({ token: reader })('POST', `/licenses/${licence.lid}/reset-download-links`)).statusCode).toBe(403);
    const reset = await h.admin('POST', `/licenses/${licence.lid}/reset-download-links`);
    expect(reset.statusCode).toBe(200);
    expect(reset.data).toMatchObject({ lid: licence.lid, feedGeneration: 2 });
    expect((await h.admin('POST', '/licenses/no-such-licence/reset-download-links')).statusCode).toBe(404);
    const activity = await h.admin('GET', `/licenses/${licence.lid}/activity`);
    expect(JSON.stringify(activity.data)).toContain('licence.download_links_reset');
  });
});
