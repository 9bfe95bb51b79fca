import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  channelOffers,
  electronYaml,
  type FeedArtifact,
  type FeedRelease,
  latestJson,
  parseElectronName,
  rfc822,
  sparkleAppcast,
  tauriUpdate,
  xmlText,
} from '../../src/downloads/feeds.js';

const base = 'https://lic.example.com/o/acme/api/public/feeds/SVCF1.x.y/';
const hex = (c: string, n: number) => c.repeat(n);

function artifact(id: number, filename: string, platform: string, arch: string, extra: Partial<FeedArtifact> = {}): FeedArtifact {
  return {
    id,
    filename,
    platform,
    arch,
    size: 1000 + id,
    sha256: hex('a', 64),
    sha512: hex('b', 128),
    contentType: 'application/octet-stream',
    tauriSignature: null,
    edSignature: null,
    ...extra,
  };
}

function release(version: string, artifacts: FeedArtifact[], extra: Partial<FeedRelease> = {}): FeedRelease {
  return {
    version,
    channel: 'stable',
    publishedAt: 1_795_330_800, // 2026-11-22T07:00:00Z
    notes: '',
    bundleVersion: null,
    manifest: 'SVCM1',
    manifestSignatures: [{ keyFingerprint: 'f', signature: 's' }],
    manifestSignature: 's',
    manifestKeyFingerprint: 'f',
    artifacts,
    ...extra,
  };
}

describe('electron-updater feed', () => {
  it('names the feeds by channel, platform and arch', () => {
    expect(parseElectronName('latest.yml')).toEqual({ channel: 'stable', platform: 'windows', arch: null });
    expect(parseElectronName('beta-mac.yml')).toEqual({ channel: 'beta', platform: 'darwin', arch: null });
    expect(parseElectronName('latest-linux.yml')).toEqual({ channel: 'stable', platform: 'linux', arch: 'x86_64' });
    expect(parseElectronName('rc-linux-arm64.yml')).toEqual({ channel: 'rc', platform: 'linux', arch: 'aarch64' });
    expect(parseElectronName('latest-linux-ia32.yml')).toEqual({ channel: 'stable', platform: 'linux', arch: 'i686' });
    expect(parseElectronName('nightly.yml')).toBeNull();
    expect(parseElectronName('latest-mac-arm64.yml')).toBeNull();
    expect(channelOffers('rc', 'stable')).toBe(true);
    expect(channelOffers('stable', 'rc')).toBe(false);
  });

  it('writes exactly the lines, parsed by js-yaml as electron-updater reads them', () => {
    const r = release(
      '1.2.3',
      [
        artifact(2, 'App Setup 1.2.3.exe', 'windows', 'x86_64'),
        artifact(3, 'App Setup 1.2.3.exe.blockmap', 'windows', 'x86_64'),
        artifact(1, 'App-1.2.3-arm64.exe', 'windows', 'aarch64'),
        artifact(4, 'App-1.2.3.dmg', 'darwin', 'universal'),
      ],
      { notes: 'Fixes "quotes"\nand lines' },
    );
    const text = electronYaml([r], { channel: 'stable', platform: 'windows', arch: null }, base) as string;
    const sha512 = Buffer.from(hex('b', 128), 'hex').toString('base64');
    expect(text).toBe(
      [
        'version: "1.2.3"',
        'files:',
        `  - url: "${base}files/1.2.3/App%20Setup%201.2.3.exe"`,
        `    sha512: "${sha512}"`,
        '    size: 1002',
        `  - url: "${base}files/1.2.3/App-1.2.3-arm64.exe"`,
        `    sha512: "${sha512}"`,
        '    size: 1001',
        `path: "${base}files/1.2.3/App%20Setup%201.2.3.exe"`,
        `sha512: "${sha512}"`,
        'releaseDate: "2026-11-22T07:00:00.000Z"',
        'releaseNotes: "Fixes \\"quotes\\"\\nand lines"',
        '',
      ].join('\n'),
    );
    const parsed = load(text) as { version: string; files: { url: string; sha512: string; size: number }[]; releaseNotes: string; releaseDate: string };
    expect(parsed.version).toBe('1.2.3');
    expect(parsed.files).toHaveLength(2);
    expect(parsed.files[0]?.size).toBe(1002);
    expect(parsed.releaseNotes).toBe('Fixes "quotes"\nand lines');
    expect(parsed.releaseDate).toBe('2026-11-22T07:00:00.000Z');
    expect(electronYaml([r], { channel: 'stable', platform: 'linux', arch: 'x86_64' }, base)).toBeNull();
  });
});

describe('Tauri feed', () => {
  const sig = 'dW50cnVzdGVkIGNvbW1lbnQ6';
  const rs = [
    release('1.3.0', [artifact(5, 'App_1.3.0_amd64.deb', 'linux', 'x86_64', { tauriSignature: sig })]),
    release('1.2.0', [
      artifact(3, 'App_1.2.0_amd64.deb', 'linux', 'x86_64', { tauriSignature: sig }),
      artifact(4, 'App_1.2.0_amd64.AppImage', 'linux', 'x86_64', { tauriSignature: sig }),
    ]),
  ];

  it('answers the highest release above the current one, AppImage first, bundle_type filtering', () => {
    expect(tauriUpdate(rs, 'linux', 'x86_64', '1.0.0', null, base)?.url).toBe(`${base}files/1.3.0/App_1.3.0_amd64.deb`);
    expect(tauriUpdate(rs, 'linux', 'x86_64', '1.0.0', 'appimage', base)).toEqual({
      version: '1.2.0',
      notes: '',
      pub_date: '2026-11-22T07:00:00.000Z',
      url: `${base}files/1.2.0/App_1.2.0_amd64.AppImage`,
      signature: sig,
    });
    expect(tauriUpdate(rs.slice(1), 'linux', 'x86_64', '1.0.0', null, base)?.url).toContain('AppImage');
    expect(tauriUpdate(rs, 'linux', 'x86_64', '1.3.0', null, base)).toBeNull();
    expect(tauriUpdate(rs, 'windows', 'x86_64', '1.0.0', null, base)).toBeNull();
  });
});

describe('Sparkle appcast', () => {
  it('writes exactly the pieces, escaped, with edSignature and package installs', () => {
    const rs = [
      release('2.0.0', [artifact(2, 'App.pkg', 'darwin', 'universal', { edSignature: 'ZWQ=' })], { bundleVersion: '200', notes: 'A & <b>' }),
      release('1.0.0', [artifact(1, 'App.dmg', 'any', 'any', { contentType: 'application/x-apple-diskimage' }), artifact(0, 'App.zip', 'darwin', 'aarch64')]),
      release('0.9.0', [artifact(9, 'App.exe', 'windows', 'x86_64')]),
    ];
    expect(sparkleAppcast('Acme "Pro"\u0001', rs, base)).toBe(
      '<?xml version="1.0" encoding="utf-8"?>\n' +
        '<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle"><channel><title>Acme &quot;Pro&quot;</title>' +
        '<item><title>Version 2.0.0</title><pubDate>Sun, 22 Nov 2026 07:00:00 +0000</pubDate><sparkle:version>200</sparkle:version>' +
        '<sparkle:shortVersionString>2.0.0</sparkle:shortVersionString><description sparkle:format="markdown">A &amp; &lt;b&gt;</description>' +
        `<enclosure url="${base}files/2.0.0/App.pkg" length="1002" type="application/octet-stream" sparkle:edSignature="ZWQ=" sparkle:installationType="package"/></item>` +
        '<item><title>Version 1.0.0</title><pubDate>Sun, 22 Nov 2026 07:00:00 +0000</pubDate><sparkle:version>1.0.0</sparkle:version>' +
        `<sparkle:shortVersionString>1.0.0</sparkle:shortVersionString><enclosure url="${base}files/1.0.0/App.zip" length="1000" type="application/octet-stream"/></item>` +
        '</channel></rss>\n',
    );
    expect(xmlText('a\tb\nc\rd\u0000e\u001f')).toBe('a\tb\nc\rde');
    expect(rfc822(0)).toBe('Thu, 01 Jan 1970 00:00:00 +0000');
  });
});

describe('latest.json', () => {
  it('answers the update above the version with matching artifacts and the blocked one above it, keys in order', () => {
    const rs = [
      release('1.2.0', [artifact(2, 'b.tar.gz', 'linux', 'x86_64'), artifact(1, 'a.tar.gz', 'any', 'any'), artifact(3, 'c.exe', 'windows', 'x86_64')]),
    ];
    const answer = latestJson(rs, [{ version: '2.0.0', publishedAt: 1_795_330_800, reason: 'UPDATES_EXPIRED' }], 'linux', 'x86_64', '1.0.0', base);
    const json = JSON.stringify(answer);
    expect(json.startsWith('{"update":{"version":"1.2.0","channel":"stable","publishedAt":"2026-11-22T07:00:00.000Z","notes":"","manifest":"SVCM1",')).toBe(
      true,
    );
    expect(json).toContain(`"artifacts":[{"id":1,"filename":"a.tar.gz","platform":"any","arch":"any","size":1001,`);
    expect(
      json.endsWith(
        `"url":"${base}files/1.2.0/b.tar.gz"}]},"blocked":{"version":"2.0.0","publishedAt":"2026-11-22T07:00:00.000Z","reason":"UPDATES_EXPIRED"}}`,
      ),
    ).toBe(true);
    expect(latestJson(rs, [], 'linux', 'x86_64', '1.2.0', base)).toEqual({ update: null, blocked: null });
    expect(latestJson(rs, [{ version: '1.1.0', publishedAt: 0, reason: 'NOT_ENTITLED' }], 'linux', 'x86_64', null, base).blocked).toBeNull();
  });
});
