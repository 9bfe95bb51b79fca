import { createHash, createHmac } from 'node:crypto';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenKey } from '../../src/downloads/tokens.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { checkBody, nonce } from '../check-helpers.js';
import { edSig, pathOf, releasedProduct, tauriSig, type ReleasedProduct } from '../download-helpers.js';
import { startHarness, type Harness } from '../harness.js';
import { fingerprint } from '../licence-helpers.js';

let h: Harness;
let p: ReleasedProduct;
let licence: any;
let urls: { electron: string; tauri: string; sparkle: string; json: string };
let token: string;
const releases: Record<string, any> = {};
const bytes = (label: string) => `bytes of ${label}`;
const sha512b64 = (label: string) => createHash('sha512').update(bytes(label)).digest('base64');

beforeAll(async () => {
  h = await startHarness();
  p = await releasedProduct(h, { name: 'Feed & <App>', params: [{ key: 'edition', label: 'Edition', type: 'ENUM', options: ['std', 'pro'] }] });
  const hourAgo = (n: number) => new Date(Date.now() - n * 3_600_000).toISOString();
  releases['1.0.0'] = await p.ship(
    '1.0.0',
    [
      { filename: 'App-1.0.0.exe', platform: 'windows', arch: 'x86_64', content: bytes('1.0.0 exe'), tauriSignature: tauriSig('1.0.0 exe') },
      { filename: 'App-1.0.0.zip', platform: 'darwin', arch: 'universal', content: bytes('1.0.0 zip'), edSignature: edSig(7) },
    ],
    { publishedAt: hourAgo(5), notes: 'One "quoted" & <b>bold</b>', bundleVersion: '100' },
  );
  releases['1.1.0'] = await p.ship(
    '1.1.0',
    [
      { filename: 'App Setup 1.1.0.exe', platform: 'windows', arch: 'x86_64', content: bytes('1.1.0 exe'), tauriSignature: tauriSig('1.1.0 exe') },
      { filename: 'App Setup 1.1.0.exe.blockmap', platform: 'windows', arch: 'x86_64', content: bytes('blockmap') },
      { filename: 'App-1.1.0.msi', platform: 'windows', arch: 'x86_64', content: bytes('1.1.0 msi'), tauriSignature: tauriSig('1.1.0 msi') },
      { filename: 'App-1.1.0.AppImage', platform: 'linux', arch: 'x86_64', content: bytes('1.1.0 appimage'), tauriSignature: tauriSig('1.1.0 appimage') },
      { filename: 'App-1.1.0.pkg', platform: 'darwin', arch: 'universal', content: bytes('1.1.0 pkg') },
    ],
    { publishedAt: hourAgo(4) },
  );
  releases['1.2.0-beta.1'] = await p.ship(
    '1.2.0-beta.1',
    [{ filename: 'App-1.2.0-beta.1.exe', platform: 'windows', arch: 'x86_64', content: bytes('beta exe'), tauriSignature: tauriSig('beta') }],
    { publishedAt: hourAgo(3) },
  );
  releases['2.0.0'] = await p.ship('2.0.0', [{ filename: 'App-2.0.0.exe', platform: 'windows', arch: 'x86_64', content: bytes('2.0.0 exe') }], {
    publishedAt: hourAgo(2),
    requires: { edition: 'pro' },
  });
  licence = await p.seated('feeds', { params: { edition: 'std' } });
  const answer = await p.feedToken({ license: licence.licenseString, fingerprint: fingerprint('feeds') });
  expect(answer.statusCode, answer.body).toBe(200);
  ({ token, urls } = answer.data);
});
afterAll(() => h?.close());

const get = (url: string, headers: Record<string, string> = {}) => h.request('GET', pathOf(url), { headers });
const base = () => urls.json.replace(/latest\.json$/, '');

describe('the feed token (DESIGN 20)', () => {
  it('is SVCF1 over {lid, mid, gen}, the same for the same seat, with the four URLs', async () => {
    const json = Buffer.from(token.split('.')[1]!, 'base64url').toString();
    const seat = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data[0];
    expect(json).toBe(`{"lid":"${licence.lid}","mid":${seat.id},"gen":1}`);
    const prefix = `/o/${h.slug}/api/public/feeds/${token}/`;
    expect(Object.fromEntries(Object.entries(urls).map(([k, v]) => [k, new URL(v).pathname]))).toEqual({
      electron: `${prefix}electron/`,
      tauri: `${prefix}tauri/%7B%7Btarget%7D%7D/%7B%7Barch%7D%7D/%7B%7Bcurrent_version%7D%7D`,
      sparkle: `${prefix}sparkle/appcast.xml`,
      json: `${prefix}latest.json`,
    });
    expect(urls.tauri.endsWith('/tauri/{{target}}/{{arch}}/{{current_version}}')).toBe(true);
    const again = await p.feedToken({ license: licence.licenseString, fingerprint: fingerprint('feeds') });
    expect(again.data.token).toBe(token);
    // An OFFLINE licence's token names no seat.
    const offline = await p.issue({ licenceType: 'OFFLINE' });
    const offlineToken = (await p.feedToken({ license: offline.licenseString })).data.token;
    expect(Buffer.from(offlineToken.split('.')[1]!, 'base64url').toString()).toBe(`{"lid":"${offline.lid}","mid":null,"gen":1}`);
    expect((await p.feedToken({ license: licence.licenseString, fingerprint: fingerprint('feeds'), nonce: nonce() })).statusCode).toBe(400);
    const elsewhere = await p.feedToken({ license: licence.licenseString, fingerprint: fingerprint('not-seated') });
    expect([elsewhere.statusCode, elsewhere.data.reason]).toEqual([403, 'NO_SEAT']);
  });
});

describe('electron-updater (DESIGN 20)', () => {
  it('answers latest.yml as electron-updater parses it: the highest covered release with its files', async () => {
    const answer = await get(`${urls.electron}latest.yml`);
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('text/yaml');
    expect(answer.headers['cache-control']).toBe('no-store');
    const info = load(answer.body) as any;
    // 2.0.0 needs edition pro and the beta is not stable: 1.1.0, its windows files less the blockmap.
    const file = `${base()}files/1.1.0/App%20Setup%201.1.0.exe`;
    expect(info).toEqual({
      version: '1.1.0',
      files: [
        { url: file, sha512: sha512b64('1.1.0 exe'), size: bytes('1.1.0 exe').length },
        { url: `${base()}files/1.1.0/App-1.1.0.msi`, sha512: sha512b64('1.1.0 msi'), size: bytes('1.1.0 msi').length },
      ],
      path: file,
      sha512: sha512b64('1.1.0 exe'),
      releaseDate: releases['1.1.0'].publishedAt,
    });
    expect(answer.body.endsWith('\n')).toBe(true);
    const mac = load((await get(`${urls.electron}latest-mac.yml`)).body) as any;
    expect(mac.files.map((f: any) => f.url.split('/').pop())).toEqual(['App-1.1.0.pkg']);
    const linux = load((await get(`${urls.electron}latest-linux.yml`)).body) as any;
    expect(linux.path.endsWith('/App-1.1.0.AppImage')).toBe(true);
    expect((await get(`${urls.electron}latest-linux-arm64.yml`)).statusCode).toBe(404);
    expect((await get(`${urls.electron}nightly.yml`)).statusCode).toBe(404);
    // The beta channel offers the beta and the channels before it.
    const beta = load((await get(`${urls.electron}beta.yml`)).body) as any;
    expect(beta.version).toBe('1.2.0-beta.1');
    const old = load((await get(`${urls.electron}latest.yml`)).body) as any;
    expect(old.releaseNotes).toBeUndefined();
  });

  it('serves the files it links, a whole GET counted (a later range and HEAD not); a file of an uncovered release is refused', async () => {
    const info = load((await get(`${urls.electron}latest.yml`)).body) as any;
    const file = await get(info.path);
    expect([file.statusCode, file.body, file.headers['content-disposition']]).toEqual([200, bytes('1.1.0 exe'), 'attachment; filename="App Setup 1.1.0.exe"']);
    const partial = await get(info.path, { range: 'bytes=2-' });
    expect(partial.statusCode).toBe(206);
    const head = await h.request('HEAD', pathOf(info.path));
    expect([head.statusCode, head.body, head.headers['content-length']]).toEqual([200, '', String(bytes('1.1.0 exe').length)]);
    const uncovered = await get(`${base()}files/2.0.0/App-2.0.0.exe`);
    expect([uncovered.statusCode, uncovered.data.reason]).toEqual([403, 'NOT_ENTITLED']);
    expect((await get(`${base()}files/1.1.0/nothing.exe`)).statusCode).toBe(404);
    expect((await get(`${base()}files/9.9.9/App-1.1.0.msi`)).statusCode).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const counted = (await h.admin('GET', `/releases/${releases['1.1.0'].id}`)).data.artifacts.find((a: any) => a.filename === 'App Setup 1.1.0.exe');
    expect(counted.downloads).toBe(1);
  });
});

describe('Tauri v2 (DESIGN 20)', () => {
  const tauri = (target: string, arch: string, current: string, query = '') =>
    get(`${urls.tauri.replace('{{target}}', target).replace('{{arch}}', arch).replace('{{current_version}}', current)}${query}`);

  it('answers 200 with the update above the running version, else 204', async () => {
    const answer = await tauri('windows', 'x86_64', '1.0.0');
    expect(answer.statusCode).toBe(200);
    expect(answer.body).toBe(
      JSON.stringify({
        version: '1.1.0',
        notes: '',
        pub_date: releases['1.1.0'].publishedAt,
        url: `${base()}files/1.1.0/App%20Setup%201.1.0.exe`,
        signature: tauriSig('1.1.0 exe'),
      }),
    );
    expect(JSON.parse((await tauri('windows', 'x86_64', '1.0.0', '?bundle_type=msi')).body).url.endsWith('/App-1.1.0.msi')).toBe(true);
    expect((await tauri('windows', 'x86_64', '1.0.0', '?channel=beta')).data.version).toBe('1.2.0-beta.1');
    expect((await tauri('linux', 'x86_64', '1.0.0')).data.url.endsWith('/App-1.1.0.AppImage')).toBe(true);
    const none = await tauri('windows', 'x86_64', '1.1.0');
    expect([none.statusCode, none.body]).toEqual([204, '']);
    expect((await tauri('darwin', 'aarch64', '1.0.0')).statusCode).toBe(204);
    for (const [target, arch, current, query] of [
      ['android', 'x86_64', '1.0.0', ''],
      ['windows', 'universal', '1.0.0', ''],
      ['windows', 'x86_64', 'v1.0.0', ''],
      ['windows', 'x86_64', '1.0.0', '?bundle_type=snap'],
    ] as const)
      expect((await tauri(target, arch, current, query)).statusCode).toBe(400);
  });
});

describe('Sparkle 2 (DESIGN 20)', () => {
  it('answers a well-formed appcast with an item per covered release with a darwin archive', async () => {
    const answer = await get(urls.sparkle);
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('application/rss+xml');
    expect(XMLValidator.validate(answer.body)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(answer.body);
    const channel = doc.rss.channel;
    expect(doc.rss['@xmlns:sparkle']).toBe('http://www.andymatuschak.org/xml-namespaces/sparkle');
    expect(channel.title).toBe('Feed & <App>');
    expect(answer.body).toContain('<channel><title>Feed &amp; &lt;App&gt;</title><item>');
    const items = [channel.item].flat();
    expect(items.map((i: any) => i['sparkle:shortVersionString'])).toEqual(['1.1.0', '1.0.0']);
    const [newest, oldest] = items;
    expect(newest.enclosure).toMatchObject({
      '@url': `${base()}files/1.1.0/App-1.1.0.pkg`,
      '@length': String(bytes('1.1.0 pkg').length),
      '@sparkle:installationType': 'package',
    });
    expect(oldest['sparkle:version']).toBe(100);
    expect(oldest.enclosure).toMatchObject({ '@type': 'application/zip', '@sparkle:edSignature': edSig(7) });
    expect(oldest.pubDate).toBe(new Date(releases['1.0.0'].publishedAt).toUTCString().replace('GMT', '+0000'));
    expect(answer.body).toContain('<description sparkle:format="markdown">One &quot;quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt;</description>');
    expect((await h.request('GET', '/metrics')).body).toMatch(/^licensor_feed_requests_total\{feed="sparkle"\} 1$/m);
  });
});

describe('latest.json (DESIGN 20)', () => {
  it('answers the update and what the licence may not download', async () => {
    const answer = await get(`${urls.json}?platform=windows&arch=x86_64&version=1.0.0`);
    expect(answer.statusCode).toBe(200);
    const { update, blocked } = JSON.parse(answer.body);
    expect(Object.keys(update)).toEqual([
      'version',
      'channel',
      'publishedAt',
      'notes',
      'manifest',
      'manifestSignatures',
      'manifestSignature',
      'manifestKeyFingerprint',
      'artifacts',
    ]);
    expect(update).toMatchObject({ version: '1.1.0', channel: 'stable', manifest: releases['1.1.0'].manifest });
    expect(update.artifacts.map((a: any) => a.filename)).toEqual(['App Setup 1.1.0.exe', 'App Setup 1.1.0.exe.blockmap', 'App-1.1.0.msi']);
    expect(blocked).toEqual({ version: '2.0.0', publishedAt: releases['2.0.0'].publishedAt, reason: 'NOT_ENTITLED' });
    const current = JSON.parse((await get(`${urls.json}?platform=windows&arch=x86_64&version=1.1.0`)).body);
    expect(current.update).toBeNull();
    for (const query of ['?arch=x86_64', '?platform=windows', '?platform=windows&arch=x86_64&version=1.0', '?platform=beos&arch=x86_64'])
      expect((await get(`${urls.json}${query}`)).statusCode).toBe(400);
  });

  it('blocks a release published after the update window with UPDATES_EXPIRED', async () => {
    const windowed = await p.seated('windowed', { params: { edition: 'pro' } });
    await h.database.db
      .updateTable('licences')
      .set({ updates_until: Math.floor(Date.parse(releases['1.1.0'].publishedAt) / 1000) })
      .where('lid', '=', windowed.lid)
      .execute();
    const feed = (await p.feedToken({ license: windowed.licenseString, fingerprint: fingerprint('windowed') })).data.urls.json;
    const { update, blocked } = JSON.parse((await get(`${feed}?platform=windows&arch=x86_64&version=1.0.0`)).body);
    expect(update.version).toBe('1.1.0');
    expect(blocked).toEqual({ version: '2.0.0', publishedAt: releases['2.0.0'].publishedAt, reason: 'UPDATES_EXPIRED' });
  });
});

describe('feed URLs stop working (DESIGN 20)', () => {
  it('refuses a tampered token, a reset one at once, and one whose seat is released', async () => {
    const own = await p.seated('stopping');
    const feed = (await p.feedToken({ license: own.licenseString, fingerprint: fingerprint('stopping') })).data;
    const latest = (url: string) => get(`${url}?platform=windows&arch=x86_64`);
    expect((await latest(feed.urls.json)).statusCode).toBe(200);
    const body = feed.token.split('.')[1];
    const tampered = feed.urls.json.replace(body, `${body.slice(0, -1)}${body.endsWith('A') ? 'B' : 'A'}`);
    const refusedTampered = await latest(tampered);
    expect([refusedTampered.statusCode, refusedTampered.data]).toEqual([403, { error: 'this feed URL is not valid' }]);
    // A valid MAC over another generation's JSON is still refused once the licence's generation moved on.
    const key = tokenKey(
      loadMasterKey(h.config, () => {}),
      'feed',
    );
    const forge = (json: string) => {
      const signed = `SVCF1.${Buffer.from(json).toString('base64url')}`;
      return `${signed}.${createHmac('sha256', key).update(signed, 'ascii').digest('base64url')}`;
    };
    const seat = (await h.admin('GET', `/licenses/${own.lid}/machines`)).data[0].id;
    expect((await latest(feed.urls.json.replace(feed.token, forge(`{"lid":"${own.lid}","mid":${seat},"gen":1}`)))).statusCode).toBe(200);
    expect((await latest(feed.urls.json.replace(feed.token, forge(`{"lid":"${own.lid}","mid":${seat},"gen":1 }`)))).statusCode).toBe(403);

    expect((await h.admin('POST', `/licenses/${own.lid}/reset-download-links`)).data.feedGeneration).toBe(2);
    for (const url of [`${feed.urls.json}?platform=windows&arch=x86_64`, `${feed.urls.electron}latest.yml`, feed.urls.sparkle]) {
      const refused = await get(url);
      expect([refused.statusCode, refused.data.error]).toEqual([403, 'this feed URL was reset: the application asks for a new one']);
    }
    const renewed = (await p.feedToken({ license: own.licenseString, fingerprint: fingerprint('stopping') })).data;
    expect(renewed.token).not.toBe(feed.token);
    expect((await latest(renewed.urls.json)).statusCode).toBe(200);

    expect((await h.admin('POST', `/licenses/${own.lid}/release-binding`, { machineId: seat })).statusCode).toBe(200);
    const unseated = await latest(renewed.urls.json);
    expect([unseated.statusCode, unseated.data.reason]).toEqual([403, 'NO_SEAT']);
    expect((await p.check(checkBody(own.licenseString, 'stopping'))).data.valid).toBe(true);

    await h.admin('POST', `/licenses/${own.lid}/revoke`, {});
    const revoked = await latest(renewed.urls.json);
    expect([revoked.statusCode, revoked.data.reason]).toEqual([403, 'REVOKED']);
  });

  it('lets the customer list releases, download what is covered and reset the feed URLs in the portal', async () => {
    const own = await p.seated('portal-reset', { licensee: 'Portal Person', licenseeEmail: 'portal@feeds.example' });
    const feed = (await p.feedToken({ license: own.licenseString, fingerprint: fingerprint('portal-reset') })).data;
    const link = await h.admin('POST', `/customers/${own.customerId}/portal-links`);
    const code = link.data.url.split('/portal/')[1];
    const opened = await h.request('POST', `/o/${h.slug}/api/portal/session`, { body: { code } });
    const cookie = opened.cookies.find((c) => c.name === 'svc_portal')!.value;
    const portal = (method: string, path: string, body?: unknown) =>
      h.request(method, `/o/${h.slug}/api/portal/licenses/${path}`, { cookies: { svc_portal: cookie }, ...(body === undefined ? {} : { body }) });
    const listed = await portal('GET', `${own.lid}/releases`);
    expect(listed.statusCode).toBe(200);
    expect(listed.data.map((r: any) => [r.version, r.covered, r.reason])).toEqual([
      ['2.0.0', false, 'NOT_ENTITLED'],
      ['1.2.0-beta.1', true, null],
      ['1.1.0', true, null],
      ['1.0.0', true, null],
    ]);
    const zip = listed.data[3].artifacts.find((a: any) => a.filename === 'App-1.0.0.zip');
    const granted = await portal('POST', `${own.lid}/downloads`, { artifactId: zip.id });
    expect([granted.statusCode, Object.keys(granted.data)]).toEqual([200, ['url', 'expiresAt']]);
    expect((await get(granted.data.url)).body).toBe(bytes('1.0.0 zip'));
    const notEntitled = await portal('POST', `${own.lid}/downloads`, { artifactId: listed.data[0].artifacts[0].id });
    expect([notEntitled.statusCode, notEntitled.data.reason]).toEqual([403, 'NOT_ENTITLED']);
    expect((await portal('GET', `${licence.lid}/releases`)).statusCode).toBe(404);
    expect((await portal('POST', `${licence.lid}/downloads`, { artifactId: zip.id })).statusCode).toBe(404);
    const reset = await h.request('POST', `/o/${h.slug}/api/portal/licenses/${own.lid}/reset-download-links`, { cookies: { svc_portal: cookie } });
    expect(reset.statusCode).toBe(200);
    // The portal's Downloads says until when updates are covered, as the licence record does.
    const updatesUntil = (await h.admin('GET', `/licenses/${own.lid}`)).data.updatesUntil;
    expect(reset.data).toMatchObject({ lid: own.lid, feedGeneration: 2, updatesUntil });
    expect((await get(`${feed.urls.json}?platform=windows&arch=x86_64`)).statusCode).toBe(403);
    expect(
      (await h.request('POST', `/o/${h.slug}/api/portal/licenses/${licence.lid}/reset-download-links`, { cookies: { svc_portal: cookie } })).statusCode,
    ).toBe(404);
  });
});
