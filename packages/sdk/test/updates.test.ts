import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { releaseManifest, signBytes } from '@licensor/protocol';
import { fileStore, verifyLicence } from '@licensor/sdk';
import { genuineAnswer, keys, licensed, myFingerprint, onlineLicence, otherKeys, publicKeyPem, T0, testClient, type SentRequest } from './fake-service.js';

const DAY = 86_400;
const iat = T0 / 1000 - 30 * DAY;
const exp = iat + 365 * DAY;
/** Unix seconds of the end of a window two years after issue. */
const UPD = iat + 730 * DAY;
const ok = (request: SentRequest) => ({ status: 200, body: genuineAnswer(request, licensed()) });

describe('updatesUntil (DESIGN.md 20)', () => {
  it('is the signed upd, and upd is not one of the product parameters', () => {
    const licence = onlineLicence({
      params: [
        ['upd', UPD],
        ['seats', 5],
      ],
    });
    const { client } = testClient(ok, { licence });
    expect(client.updatesUntil()).toEqual(new Date(UPD * 1000));
    const verified = verifyLicence(licence, publicKeyPem, { now: new Date(T0) });
    expect(verified.signed && verified.params).toEqual({ seats: 5 });
  });

  it('is the grace end without upd, and null for a perpetual licence (every release)', () => {
    expect(testClient(ok, { licence: onlineLicence({ exp, grace: 7 }) }).client.updatesUntil()).toEqual(new Date((exp + 7 * DAY) * 1000));
    expect(testClient(ok, { licence: onlineLicence({ exp: null }) }).client.updatesUntil()).toBeNull();
  });

  it("keeps a product's own parameter named upd that is not a time", () => {
    const licence = onlineLicence({ exp: null, params: [['upd', 'nightly']] });
    const verified = verifyLicence(licence, publicKeyPem, { now: new Date(T0) });
    expect(verified.signed && verified.params).toEqual({ upd: 'nightly' });
    expect(testClient(ok, { licence }).client.updatesUntil()).toBeNull();
  });

  it('follows the newest verified term, and is null for a licence that does not verify', async () => {
    const old = onlineLicence({ params: [['upd', UPD]] });
    const lid = JSON.parse(Buffer.from(old.split('.')[0]!, 'base64url').toString()).lid as string;
    const renewed = onlineLicence({ lid, iat: iat + DAY, params: [['upd', UPD + 365 * DAY]] });
    const { client } = testClient((request) => (request.url.endsWith('/fetch') ? { status: 200, body: { license: renewed } } : ok(request)), { licence: old });
    expect(client.updatesUntil()).toEqual(new Date(UPD * 1000));
    await client.fetch();
    expect(client.updatesUntil()).toEqual(new Date((UPD + 365 * DAY) * 1000));
    const [payload, signature] = old.split('.');
    const forged = `${Buffer.from(
      Buffer.from(payload!, 'base64url')
        .toString()
        .replace(String(UPD), String(UPD + 1)),
    ).toString('base64url')}.${signature}`;
    expect(testClient(ok, { licence: forged }).client.updatesUntil()).toBeNull();
  });
});

// ---- checkForUpdate, download and feedUrls against the fake service (DESIGN.md 20)

const FEED = 'https://licensing.example.com/o/acme/api/public/feeds';
const BYTES = Buffer.from('the linux build of 2.0.0\n'.repeat(100));
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const fingerprintOf = (key: KeyObject) =>
  createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex');
const urlsOf = (token: string) => ({
  electron: `${FEED}/${token}/electron/`,
  tauri: `${FEED}/${token}/tauri/{{target}}/{{arch}}/{{current_version}}`,
  sparkle: `${FEED}/${token}/sparkle/appcast.xml`,
  json: `${FEED}/${token}/latest.json`,
});

interface Shipped {
  version?: string;
  channel?: string;
  product?: string;
  signers?: KeyObject[];
  file?: { filename?: string; size?: number; sha256?: string };
}

/** latest.json's update as the service answers it: the manifest signed by `signers` (default the product's key). */
function feedUpdate(token: string, { version = '2.0.0', channel = 'stable', product = 'cad', signers = [keys.privateKey], file = {} }: Shipped = {}) {
  const artifact = { filename: 'App-2.0.0.AppImage', platform: 'linux', arch: 'x86_64', size: BYTES.length, sha256: sha256(BYTES) };
  const manifest = releaseManifest({
    org: 'acme',
    productKey: product,
    version,
    channel,
    publishedAt: T0 / 1000,
    artifacts: [artifact, { filename: 'App Setup.exe', platform: 'windows', arch: 'x86_64', size: 3, sha256: 'a'.repeat(64) }],
  });
  const manifestSignatures = signers.map((key) => ({
    keyFingerprint: fingerprintOf(createPublicKey(key)),
    signature: signBytes(key, Buffer.from(manifest, 'utf8')).toString('base64url'),
  }));
  return {
    version,
    channel,
    publishedAt: new Date(T0).toISOString(),
    notes: 'Faster start-up',
    manifest,
    manifestSignatures,
    manifestSignature: manifestSignatures[0]?.signature ?? null,
    manifestKeyFingerprint: manifestSignatures[0]?.keyFingerprint ?? null,
    artifacts: [
      {
        id: 7,
        ...artifact,
        ...file,
        sha512: 'b'.repeat(128),
        contentType: 'application/octet-stream',
        url: `${FEED}/${token}/files/${version}/${encodeURIComponent(file.filename ?? artifact.filename)}`,
      },
    ],
  };
}

/**
 * The feed side of the fake service: feed-token answers SVCF1.<n> (n counting up), latest.json
 * answers `latest(token)` for the newest token (403 for an older one, a reset), files answer `file()`.
 */
function feedService(options: { latest?: (token: string) => unknown; file?: () => { status: number; body: unknown } } = {}) {
  const state = { issued: 0, current: '' };
  const latest = options.latest ?? ((token: string) => ({ update: feedUpdate(token), blocked: null }));
  return {
    state,
    respond(request: SentRequest) {
      if (request.url.endsWith('/feed-token')) {
        state.current = `SVCF1.${++state.issued}`;
        return { status: 200, body: { token: state.current, urls: urlsOf(state.current) } };
      }
      const token = decodeURIComponent(request.url.split('/feeds/')[1]?.split('/')[0] ?? '');
      if (token !== state.current) return { status: 403, body: { error: 'this feed URL was reset: the application asks for a new one' } };
      if (request.url.includes('/latest.json?')) return { status: 200, body: latest(token) };
      if (request.url.includes('/files/')) return options.file?.() ?? { status: 200, body: BYTES };
      return ok(request);
    },
  };
}

const query = { currentVersion: '1.0.0', platform: 'linux', arch: 'x86_64' } as const;

describe('checkForUpdate (DESIGN.md 20)', () => {
  it('asks for a feed token once, keeps it in the state directory, and reads latest.json with it and no credential', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sdk-updates-'));
    try {
      const licence = onlineLicence();
      const service = feedService();
      const { client, requests } = testClient((r) => service.respond(r), { licence, store: fileStore(dir) });
      const first = await client.checkForUpdate({ ...query, channel: 'beta' });
      expect(first).toEqual({ update: feedUpdate('SVCF1.1'), blocked: null });
      expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual([
        'POST https://licensing.example.com/o/acme/api/public/license/abc123def456/feed-token',
        `GET ${FEED}/SVCF1.1/latest.json?platform=linux&arch=x86_64&version=1.0.0&channel=beta`,
      ]);
      expect(requests[0]!.body).toEqual({ license: licence, fingerprint: myFingerprint });
      expect(requests[1]!.headers.authorization).toBeUndefined();
      const lid = JSON.parse(Buffer.from(licence.split('.')[0]!, 'base64url').toString()).lid as string;
      const file = path.join(dir, 'acme', 'cad', `${lid}.feed.json`);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ format: 1, lid, token: 'SVCF1.1', urls: urlsOf('SVCF1.1') });
      expect(statSync(file).mode & 0o777).toBe(0o600);

      // Another client of the same state directory (a restart) uses the kept token.
      const again = testClient((r) => service.respond(r), { licence, store: fileStore(dir) });
      await again.client.checkForUpdate(query);
      expect(again.requests.map((r) => r.method)).toEqual(['GET']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a 403 forgets the kept token and asks again, once; a refusal then is HTTP_STATUS with its reason', async () => {
    const service = feedService();
    const { client, requests } = testClient((r) => service.respond(r));
    await client.checkForUpdate(query);
    // A reset: the service makes new tokens, the kept one answers 403.
    service.state.current = 'SVCF1.reset';
    expect(await client.checkForUpdate(query)).toEqual({ update: feedUpdate('SVCF1.2'), blocked: null });
    expect(requests.slice(2).map((r) => r.method)).toEqual(['GET', 'POST', 'GET']);

    const refusing = testClient((r) =>
      r.url.endsWith('/feed-token') ? { status: 403, body: { error: 'this machine holds no seat', reason: 'NO_SEAT' } } : service.respond(r),
    );
    await expect(refusing.client.checkForUpdate(query)).rejects.toMatchObject({ code: 'HTTP_STATUS', status: 403, reason: 'NO_SEAT' });
    expect(refusing.requests).toHaveLength(1);
  });

  it('answers blocked as the feed does, and no update above the running version', async () => {
    const blocked = { version: '3.0.0', publishedAt: new Date(T0).toISOString(), reason: 'UPDATES_EXPIRED' };
    const service = feedService({ latest: () => ({ update: null, blocked }) });
    expect(await testClient((r) => service.respond(r)).client.checkForUpdate(query)).toEqual({ update: null, blocked });
  });

  it('keeps an update signed by any key the application knows: one shipped before a rotation still verifies', async () => {
    const service = feedService({ latest: (token) => ({ update: feedUpdate(token, { signers: [otherKeys.privateKey, keys.privateKey] }), blocked: null }) });
    const { update } = await testClient((r) => service.respond(r)).client.checkForUpdate(query);
    expect(update?.version).toBe('2.0.0');
  });

  it.each<[string, Shipped | ((token: string) => unknown), string]>([
    ['signed by a key the application does not know', { signers: [otherKeys.privateKey] }, 'not signed'],
    ['unsigned', { signers: [] }, 'not signed'],
    ['for another product', { product: 'other' }, "another organisation's or product's"],
    [
      'with its signed text changed',
      (token) => {
        const update = feedUpdate(token);
        return { update: { ...update, manifest: update.manifest.replace('x86_64', 'aarch64') }, blocked: null };
      },
      'not signed',
    ],
    [
      'for another version than the update says',
      (token) => ({ update: { ...feedUpdate(token, { version: '1.5.0' }), version: '2.0.0' }, blocked: null }),
      'another version or channel',
    ],
    ['not above the running version', { version: '1.0.0' }, 'not above'],
    ['listing a file unlike the update', { file: { sha256: 'c'.repeat(64) } }, 'does not list'],
  ])('refuses an update whose manifest is %s: BAD_MANIFEST', async (_label, shipped, message) => {
    const latest = typeof shipped === 'function' ? shipped : (token: string) => ({ update: feedUpdate(token, shipped), blocked: null });
    const service = feedService({ latest });
    const error = await testClient((r) => service.respond(r))
      .client.checkForUpdate(query)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BAD_MANIFEST' });
    expect((error as Error).message).toContain(message);
  });

  it('compares versions by SemVer precedence: a prerelease is below its release', async () => {
    const service = feedService({ latest: (token) => ({ update: feedUpdate(token, { version: '2.0.0-rc.10', channel: 'rc' }), blocked: null }) });
    const { client } = testClient((r) => service.respond(r));
    expect((await client.checkForUpdate({ ...query, currentVersion: '2.0.0-rc.9' })).update?.version).toBe('2.0.0-rc.10');
    await expect(client.checkForUpdate({ ...query, currentVersion: '2.0.0' })).rejects.toMatchObject({ code: 'BAD_MANIFEST' });
  });

  it('refuses what the feed would answer 400 with INVALID_OPTIONS, sending nothing', async () => {
    const { client, requests } = testClient(feedService().respond);
    for (const bad of [
      { ...query, currentVersion: 'v1.0.0' },
      { ...query, currentVersion: '1.0' },
      { ...query, currentVersion: '1.0.0+build.1' },
      { ...query, currentVersion: '01.0.0' },
      { ...query, platform: 'beos' },
      { ...query, arch: 'sparc' },
      { ...query, channel: 'nightly' },
    ])
      await expect(client.checkForUpdate(bad as never), JSON.stringify(bad)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(requests).toEqual([]);
  });

  it('a feed answer that is not {update, blocked} is BAD_RESPONSE', async () => {
    const service = feedService({ latest: () => ({ update: { version: '2.0.0' }, blocked: null }) });
    await expect(testClient((r) => service.respond(r)).client.checkForUpdate(query)).rejects.toMatchObject({ code: 'BAD_RESPONSE' });
  });
});

describe('download (DESIGN.md 20)', () => {
  async function held(file?: () => { status: number; body: unknown }, timeoutMs = 200) {
    const service = feedService({ file });
    const { client, requests } = testClient((r) => service.respond(r), { timeoutMs });
    const { update } = await client.checkForUpdate(query);
    const to = mkdtempSync(path.join(os.tmpdir(), 'sdk-download-'));
    return { client, requests, update: update!, to, [Symbol.dispose]: () => rmSync(to, { recursive: true, force: true }) };
  }

  it("streams the feed's file URL into the folder and keeps it when its size and SHA-256 are the manifest's", async () => {
    using h = await held();
    const kept = await h.client.download(h.update, 'App-2.0.0.AppImage', path.join(h.to, 'new'));
    expect(kept).toEqual({ path: path.join(h.to, 'new', 'App-2.0.0.AppImage'), size: BYTES.length, sha256: sha256(BYTES) });
    expect(readFileSync(kept.path)).toEqual(BYTES);
    expect(readdirSync(path.join(h.to, 'new'))).toEqual(['App-2.0.0.AppImage']);
    const get = h.requests.at(-1)!;
    expect(get.url).toBe(`${FEED}/SVCF1.1/files/2.0.0/App-2.0.0.AppImage`);
    expect(get.headers.authorization).toBeUndefined();
  });

  it.each([
    ['other bytes of the same size', () => Buffer.from(BYTES).fill(0x41, 0, 1)],
    ['fewer bytes', () => BYTES.subarray(1)],
    ['more bytes', () => Buffer.concat([BYTES, Buffer.from('!')])],
  ])('deletes %s: DIGEST_MISMATCH, nothing left in the folder', async (_label, bytes) => {
    using h = await held(() => ({ status: 200, body: bytes() }));
    await expect(h.client.download(h.update, 'App-2.0.0.AppImage', h.to)).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
    expect(readdirSync(h.to)).toEqual([]);
  });

  it('refuses a filename the update does not list (INVALID_OPTIONS), and an update whose manifest was changed since (BAD_MANIFEST)', async () => {
    using h = await held();
    const sent = h.requests.length;
    for (const filename of ['App Setup.exe', '../App-2.0.0.AppImage', ''])
      await expect(h.client.download(h.update, filename, h.to), filename).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    const changed = { ...h.update, artifacts: [{ ...h.update.artifacts[0]!, sha256: sha256(Buffer.from('other')) }] };
    await expect(h.client.download(changed, 'App-2.0.0.AppImage', h.to)).resolves.toMatchObject({ sha256: sha256(BYTES) });
    const forged = { ...h.update, manifest: h.update.manifest.replace(String(BYTES.length), '1') };
    await expect(h.client.download(forged, 'App-2.0.0.AppImage', h.to)).rejects.toMatchObject({ code: 'BAD_MANIFEST' });
    expect(h.requests.length).toBe(sent + 1);
  });

  it('a slow download that keeps coming is no timeout: fifteen chunks 100 ms apart outlast the 1,000 ms timeout', async () => {
    // The gaps leave the timeout 900 ms of slack, so a busy machine cannot make the test lie.
    const slow = () => {
      const parts = Array.from({ length: 15 }, (_, i) => BYTES.subarray(Math.floor((i * BYTES.length) / 15), Math.floor(((i + 1) * BYTES.length) / 15)));
      return {
        status: 200,
        body: new ReadableStream({
          async pull(controller) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            const part = parts.shift();
            if (part) controller.enqueue(part);
            else controller.close();
          },
        }),
      };
    };
    using h = await held(slow, 1000);
    await expect(h.client.download(h.update, 'App-2.0.0.AppImage', h.to)).resolves.toMatchObject({ size: BYTES.length, sha256: sha256(BYTES) });
  });

  it('a download whose bytes stop coming is TIMEOUT (the timeout holds between chunks), nothing kept', async () => {
    // Half the file, then silence: the client's timeout is 200 ms.
    const stalled = () => ({ status: 200, body: new ReadableStream({ start: (controller) => controller.enqueue(BYTES.subarray(0, 1000)) }) });
    using h = await held(stalled);
    await expect(h.client.download(h.update, 'App-2.0.0.AppImage', h.to)).rejects.toMatchObject({ code: 'TIMEOUT' });
    expect(readdirSync(h.to)).toEqual([]);
  });

  it('a refused file is HTTP_STATUS with its reason, nothing kept', async () => {
    using h = await held(() => ({ status: 403, body: { error: 'updates ended before this release', reason: 'UPDATES_EXPIRED' } }));
    await expect(h.client.download(h.update, 'App-2.0.0.AppImage', h.to)).rejects.toMatchObject({
      code: 'HTTP_STATUS',
      status: 403,
      reason: 'UPDATES_EXPIRED',
    });
    expect(readdirSync(h.to)).toEqual([]);
  });
});

describe('feedUrls (DESIGN.md 20)', () => {
  it('asks for a token on each call, and answers the kept URLs when no answer comes', async () => {
    const service = feedService();
    let down = false;
    const { client, requests } = testClient((r) => (down ? Promise.reject(new Error('connection refused')) : service.respond(r)));
    expect(await client.feedUrls()).toEqual(urlsOf('SVCF1.1'));
    expect(await client.feedUrls()).toEqual(urlsOf('SVCF1.2'));
    down = true;
    expect(await client.feedUrls()).toEqual(urlsOf('SVCF1.2'));
    expect(requests.filter((r) => r.url.endsWith('/feed-token'))).toHaveLength(3);
    await expect(testClient(() => Promise.reject(new Error('connection refused'))).client.feedUrls()).rejects.toMatchObject({ code: 'NETWORK' });
  });
});
