// The SDK against a real service (the server's test harness, SQLite), over real HTTP.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint } from '@licensor/protocol';
import { fileStore, LicenceClient, memoryStore, verifyLicence, type LicenceClientOptions } from '@licensor/sdk';
import { startHarness, type Harness } from '../../server/test/harness.js';

const root = path.resolve(import.meta.dirname, '../../..');
const machine = buildFingerprint({ machine: 'e2e-m', host: 'e2e-h', mac: 'e2e-a', cpu: 'e2e-c', disk: 'e2e-d' });
const elsewhere = buildFingerprint({ machine: 'e2e-m2', host: 'e2e-h2', mac: 'e2e-a2', cpu: 'e2e-c2', disk: 'e2e-d2' });

let h: Harness;
let baseUrl: string;

beforeAll(async () => {
  // The public URL is the service's own address, so the feed and file URLs it answers work: a free port first.
  const free = net.createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const port = (free.address() as AddressInfo).port;
  await new Promise((resolve) => free.close(resolve));
  baseUrl = `http://127.0.0.1:${port}`;
  h = await startHarness({ LICENSOR_PUBLIC_URL: baseUrl });
  await h.app.listen({ port, host: '127.0.0.1' });
});
afterAll(() => h?.close());

async function call(method: 'POST' | 'GET', url: string, body?: unknown) {
  const response = await h.admin(method, url, body);
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
  return response.data;
}

/** An ONLINE product with fetch enabled, its check credential and one issued licence. */
async function setUp(productFields: Record<string, unknown> = {}) {
  const product = await call('POST', '/products', {
    productKey: `sdk-e2e-${Math.random().toString(36).slice(2, 10)}`,
    name: 'SDK end to end',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['ONLINE'],
    licenceFetchEnabled: true,
    ...productFields,
  });
  const credential = await call('POST', `/products/${product.id}/check-token`);
  const licence = await call('POST', '/licenses', { productId: product.id, licensee: 'SDK Customer', validityMonths: 12 });
  const client = (options: Partial<LicenceClientOptions> = {}) =>
    new LicenceClient({
      baseUrl,
      slug: h.slug,
      checkId: credential.checkId,
      checkToken: credential.checkToken,
      publicKeyPem: product.publicKeyPem,
      licence: licence.licenseString,
      fingerprint: machine,
      store: memoryStore(),
      ...options,
    });
  return { product, credential, licence, client };
}

describe('the SDK against a real service', () => {
  it('checks, binds, sees a renewal and fetches the new term', async () => {
    const { product, licence, client } = await setUp();
    expect(verifyLicence(licence.licenseString, product.publicKeyPem, { fingerprint: machine })).toMatchObject({ valid: true, status: 'ACTIVE' });

    const c = client();
    const first = await c.check();
    expect(first).toMatchObject({ state: 'VALID', renewed: false, noAnswer: null, clockRollback: false });
    expect(first.answer).toMatchObject({ fresh: true, grants: true, status: 'ACTIVE', lid: licence.lid });

    // The seat is taken: another machine gets a signed "no seat", never a verdict of its own making.
    expect(await client({ fingerprint: elsewhere }).check()).toMatchObject({ state: 'INVALID', reasons: ['NO_SEAT'] });

    const renewed = await call('POST', `/licenses/${licence.lid}/renew`, { validityMonths: 24 });
    const afterRenewal = await c.check();
    expect(afterRenewal).toMatchObject({ state: 'VALID', renewed: true, serverReason: 'SUPERSEDED' });

    expect(await c.fetch()).toBe(renewed.licenseString);
    expect(c.licence).toBe(renewed.licenseString);
    const next = verifyLicence(c.licence, product.publicKeyPem, { fingerprint: machine });
    expect(next.signed && next.claims.lid).toBe(licence.lid);
    expect(next.signed && next.expiresAt?.toISOString()).toBe(renewed.expiresAt);
    expect(await c.check()).toMatchObject({ state: 'VALID', renewed: false });
  });

  it('reports revocation from the signed status', async () => {
    const { licence, client } = await setUp();
    const c = client();
    expect((await c.check()).state).toBe('VALID');
    await call('POST', `/licenses/${licence.lid}/revoke`, { reason: 'refunded' });
    expect(await c.check()).toMatchObject({ state: 'INVALID', reasons: ['REVOKED'], serverReason: 'REVOKED' });
  });

  it('counts a wrong check token as no answer', async () => {
    const { credential, client } = await setUp();
    const wrongToken = `svcc_${credential.checkId}_${'0'.repeat(64)}`;
    expect(await client({ checkToken: wrongToken }).check()).toMatchObject({ state: 'STALE', noAnswer: { code: 'HTTP_STATUS', status: 401 } });
  });

  it('accepts the product key among a key history, and sends nothing the keys do not verify', async () => {
    const { product, client } = await setUp();
    const other = await setUp();
    expect((await client({ publicKeyPem: [other.product.publicKeyPem, product.publicKeyPem] }).check()).state).toBe('VALID');
    expect(await client({ publicKeyPem: other.product.publicKeyPem }).check()).toMatchObject({ state: 'INVALID', reasons: ['BAD_SIGNATURE'], noAnswer: null });
  });

  it('releases this machine’s seat, forgets its answer, and the licence binds on another machine', async () => {
    const { client } = await setUp();
    const store = memoryStore();
    const here = client({ store });
    expect((await here.check()).state).toBe('VALID');
    expect(await client({ fingerprint: elsewhere }).check()).toMatchObject({ state: 'INVALID', serverReason: 'FINGERPRINT_MISMATCH' });
    const { claims } = (await here.check()).licence;
    const key = { slug: claims!.org, productKey: claims!.prd, lid: claims!.lid };
    expect((await store.load(key)).answer).not.toBeNull();

    expect(await here.release()).toEqual({ released: true, releasedAt: expect.any(String) });
    expect(await store.load(key)).toMatchObject({ answer: null, newestIat: claims!.iat });
    expect(await here.release()).toEqual({ released: false, reason: 'NO_SEAT' });
    expect(await client({ fingerprint: elsewhere }).check()).toMatchObject({ state: 'VALID', serverReason: null });
  });

  it('holds a floating lease while running, frees it on stop, and borrows one for a trip', async () => {
    const { licence, client } = await setUp({ seatModel: 'FLOATING', leaseSeconds: 300, maxBorrowSeconds: 86_400, maxMachines: 1 });
    const here = client();
    const holder = await here.keepLease({ releaseOnSignals: false });
    expect(holder.held).toBe(true);
    expect(holder.result).toMatchObject({ state: 'VALID', answer: { tag: 'SVCR2', lid: licence.lid } });
    expect(holder.leaseEndsAt!.getTime()).toBeGreaterThan(Date.now() + 290_000);

    // The one seat is held: another machine gets a signed SEATS_FULL.
    const there = client({ fingerprint: elsewhere });
    expect(await there.check()).toMatchObject({ state: 'INVALID', reasons: ['NO_SEAT'], serverReason: 'SEATS_FULL' });
    expect(await holder.stop()).toMatchObject({ released: true });
    expect((await there.check()).state).toBe('VALID');

    const until = new Date(Date.now() + 3_600_000);
    const borrowed = await there.borrow(until);
    expect(borrowed).toMatchObject({ state: 'VALID', answer: { leaseEndsAt: until.toISOString() } });
    expect(await there.release()).toEqual({ released: false, reason: 'BORROWED' });
    // Beyond the licence's brw: refused, and the lease borrowed before still holds.
    expect(await there.borrow(Date.now() + 2 * 86_400_000)).toMatchObject({
      state: 'VALID',
      noAnswer: { code: 'HTTP_STATUS', status: 400 },
      answer: { leaseEndsAt: until.toISOString() },
    });
    expect(there.borrowedUntil).toBe(until.getTime());
  });

  it('fetch is refused before the licence is bound (fetch never binds)', async () => {
    const { client } = await setUp();
    await expect(client().fetch()).rejects.toMatchObject({ code: 'HTTP_STATUS', status: 403 });
  });

  it('runs examples/check-licence.ts on the licence it is given, changing nothing but the seat its check binds', async () => {
    const { credential, licence, client } = await setUp();
    const token = await h.createToken(['licenses:read', 'products:read']);
    const counts = async () => [(await call('GET', '/products')).length, (await call('GET', '/licenses')).length];
    const before = await counts();
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'examples/check-licence.ts'], {
      cwd: root,
      env: {
        ...process.env,
        LICENSOR_URL: baseUrl,
        LICENSOR_ORG: h.slug,
        LICENSOR_TOKEN: token,
        LICENSOR_LICENCE: licence.lid,
        LICENSOR_CHECK_TOKEN: credential.checkToken,
      },
      timeout: 60_000,
    });
    expect(stdout).toContain(`- read licence ${licence.lid} of SDK Customer`);
    expect(stdout).toContain('- checked online: VALID');
    expect(stdout).toContain('- fetched the current term: the string you have');
    expect(stdout.trim().split('\n').pop()).toBe('done');
    // Nothing created, renewed or rotated: the same counts, no superseded term, and the check token still answers.
    expect(await counts()).toEqual(before);
    expect(await call('GET', `/licenses/${licence.lid}/versions`)).toEqual([]);
    expect(await call('GET', `/licenses/${licence.lid}`)).toMatchObject({ licenseString: licence.licenseString, seatsUsed: 1 });
    expect(await client().check()).toMatchObject({ noAnswer: null, serverReason: 'FINGERPRINT_MISMATCH' });
  });
});

describe('updates from the real service (DESIGN.md 20)', () => {
  // A string: the harness sends a string body as it is.
  const TEXT = 'the linux build of 1.1.0\n'.repeat(500);
  const CONTENT = Buffer.from(TEXT);
  const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
  const query = { currentVersion: '1.0.0', platform: 'linux', arch: 'x86_64' } as const;

  /** A product with release 1.1.0 published with a linux file, a client holding a seat, and a folder to download into. */
  async function released() {
    const set = await setUp();
    const release = await call('POST', `/products/${set.product.id}/releases`, { version: '1.1.0', notes: 'Faster start-up' });
    const uploaded = await h.admin('POST', `/releases/${release.id}/artifacts?filename=App-1.1.0.AppImage&platform=linux&arch=x86_64`, TEXT, {
      'content-type': 'application/octet-stream',
    });
    expect(uploaded.statusCode).toBe(201);
    const published = await call('POST', `/releases/${release.id}/publish`, {});
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sdk-e2e-updates-'));
    const seen: string[] = [];
    /** Records what the SDK asks and lets `alter` change the service's answer on the way. */
    const via = (alter: (url: string, response: Response) => Promise<Response> = async (_url, response) => response) =>
      (async (input: string | URL | Request, init?: RequestInit) => {
        const url = String(input);
        seen.push(`${init?.method ?? 'GET'} ${url.replace(/^.*\/(check|feed-token|latest\.json|files)\b.*$/, '$1')}`);
        return alter(url, await fetch(input, init));
      }) as typeof fetch;
    const updater = (alter?: Parameters<typeof via>[0]) => set.client({ store: fileStore(path.join(dir, 'state')), fetchImpl: via(alter) });
    expect(await updater().check()).toMatchObject({ state: 'VALID' });
    return { ...set, published, dir, seen, updater, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
  }

  it('finds the published release, verified by its manifest, and downloads its file with the right SHA-256', async () => {
    using r = await released();
    const { update, blocked } = await r.updater().checkForUpdate(query);
    expect(blocked).toBeNull();
    expect(update).toMatchObject({
      version: '1.1.0',
      channel: 'stable',
      notes: 'Faster start-up',
      manifest: r.published.manifest,
      manifestSignatures: r.published.manifestSignatures,
      artifacts: [{ filename: 'App-1.1.0.AppImage', platform: 'linux', arch: 'x86_64', size: CONTENT.length, sha256: sha256(CONTENT) }],
    });
    const kept = await r.updater().download(update!, 'App-1.1.0.AppImage', path.join(r.dir, 'downloads'));
    expect(kept).toEqual({ path: path.join(r.dir, 'downloads', 'App-1.1.0.AppImage'), size: CONTENT.length, sha256: sha256(CONTENT) });
    expect(readFileSync(kept.path)).toEqual(CONTENT);
    // The running version is the newest: nothing to offer.
    expect(await r.updater().checkForUpdate({ ...query, currentVersion: '1.1.0' })).toEqual({ update: null, blocked: null });
  });

  it('deletes a tampered file (DIGEST_MISMATCH) and refuses a forged manifest (BAD_MANIFEST)', async () => {
    using r = await released();
    const { update } = await r.updater().checkForUpdate(query);
    const flipped = r.updater(async (url, response) => {
      if (!url.includes('/files/')) return response;
      const bytes = Buffer.from(await response.arrayBuffer());
      bytes[100]! ^= 1;
      return new Response(bytes, { status: response.status, headers: response.headers });
    });
    await expect(flipped.download(update!, 'App-1.1.0.AppImage', path.join(r.dir, 'tampered'))).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
    expect(readdirSync(path.join(r.dir, 'tampered'))).toEqual([]);

    const forged = r.updater(async (url, response) => {
      if (!url.includes('/latest.json')) return response;
      const answer = (await response.json()) as { update: { manifest: string; artifacts: Array<{ sha256: string }> } };
      const other = sha256(Buffer.from('malware'));
      answer.update.manifest = answer.update.manifest.replace(answer.update.artifacts[0]!.sha256, other);
      answer.update.artifacts[0]!.sha256 = other;
      return Response.json(answer);
    });
    await expect(forged.checkForUpdate(query)).rejects.toMatchObject({ code: 'BAD_MANIFEST' });
  });

  it('after reset-download-links the kept feed token is refused, and the SDK asks for a new one once and goes on', async () => {
    using r = await released();
    await r.updater().checkForUpdate(query);
    expect(r.seen.splice(0)).toEqual(['POST check', 'POST feed-token', 'GET latest.json']);
    await call('POST', `/licenses/${r.licence.lid}/reset-download-links`);
    const { update } = await r.updater().checkForUpdate(query);
    expect(update?.version).toBe('1.1.0');
    expect(r.seen).toEqual(['GET latest.json', 'POST feed-token', 'GET latest.json']);
    // The new token's file URL works.
    await expect(r.updater().download(update!, 'App-1.1.0.AppImage', path.join(r.dir, 'after-reset'))).resolves.toMatchObject({ sha256: sha256(CONTENT) });
  });
});
