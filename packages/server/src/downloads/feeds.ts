import semver from 'semver';
import { encodeFilename } from '../releases/ranges.js';

/**
 * The four feeds of DESIGN section 20, as pure functions of the covered PUBLISHED releases a licence
 * may download (the caller filters by licence, window, `requires` and channel). Byte for byte as the
 * section writes them; docs/protocol.md shows each with an example.
 */

export const CHANNELS = ['stable', 'rc', 'beta', 'alpha', 'dev'] as const;
export type Channel = (typeof CHANNELS)[number];
export const PLATFORMS = ['linux', 'darwin', 'windows', 'any'] as const;
export const ARCHES = ['x86_64', 'aarch64', 'i686', 'armv7', 'riscv64', 'universal', 'any'] as const;

export interface FeedArtifact {
  id: number;
  filename: string;
  platform: string;
  arch: string;
  size: number;
  sha256: string;
  sha512: string;
  contentType: string;
  tauriSignature: string | null;
  edSignature: string | null;
}

export interface FeedRelease {
  version: string;
  channel: string;
  /** Unix seconds. */
  publishedAt: number;
  notes: string;
  bundleVersion: string | null;
  manifest: string | null;
  manifestSignatures: { keyFingerprint: string; signature: string }[];
  manifestSignature: string | null;
  manifestKeyFingerprint: string | null;
  artifacts: FeedArtifact[];
}

/** A feed of channel C offers C and the channels before it. */
export function channelOffers(feed: Channel, release: string): boolean {
  const r = CHANNELS.indexOf(release as Channel);
  return r >= 0 && r <= CHANNELS.indexOf(feed);
}

export function isChannel(value: string): value is Channel {
  return (CHANNELS as readonly string[]).includes(value);
}

/** Highest SemVer precedence first. */
export function byPrecedence<T extends { version: string }>(releases: T[]): T[] {
  return [...releases].sort((a, b) => semver.rcompare(a.version, b.version));
}

/** An artifact matches (P, A) when its platform is P or `any` and its arch A, `universal` or `any`; A null: any arch. */
export function matches(artifact: FeedArtifact, platform: string, arch: string | null): boolean {
  return (
    (artifact.platform === platform || artifact.platform === 'any') &&
    (arch === null || artifact.arch === arch || artifact.arch === 'universal' || artifact.arch === 'any')
  );
}

function byteOrder(a: string, b: string): number {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return Buffer.compare(x, y);
}

export function byFilename<T extends { filename: string }>(artifacts: T[]): T[] {
  return [...artifacts].sort((a, b) => byteOrder(a.filename, b.filename));
}

/** The `files/` URL of an artifact under a feed base `{public URL}/o/{slug}/api/public/feeds/{token}/`. */
export function fileUrl(feedBase: string, version: string, filename: string): string {
  return `${feedBase}files/${encodeFilename(version)}/${encodeFilename(filename)}`;
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}

// ---- electron-updater

const ELECTRON_LINUX_ARCH: Record<string, string> = { arm64: 'aarch64', arm: 'armv7', ia32: 'i686', riscv64: 'riscv64' };

export interface ElectronFeed {
  channel: Channel;
  platform: 'windows' | 'darwin' | 'linux';
  arch: string | null;
}

/** `{C}.yml` windows, `{C}-mac.yml` darwin (both any arch), `{C}-linux.yml` x86_64, `{C}-linux-{arm64|arm|ia32|riscv64}.yml`; C a channel or `latest`. */
export function parseElectronName(name: string): ElectronFeed | null {
  const match = /^([a-z]+)(?:-(mac|linux)(?:-(arm64|arm|ia32|riscv64))?)?\.yml$/.exec(name);
  if (!match) return null;
  const [, c, os, linuxArch] = match as unknown as [string, string, string | undefined, string | undefined];
  const channel = c === 'latest' ? 'stable' : c;
  if (!isChannel(channel)) return null;
  if (os === undefined) return { channel, platform: 'windows', arch: null };
  if (os === 'mac') return linuxArch === undefined ? { channel, platform: 'darwin', arch: null } : null;
  return { channel, platform: 'linux', arch: linuxArch === undefined ? 'x86_64' : (ELECTRON_LINUX_ARCH[linuxArch] as string) };
}

export function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

/** The YAML of the highest release (`releases` highest first) with matching files, or null (404). */
export function electronYaml(releases: FeedRelease[], feed: ElectronFeed, feedBase: string): string | null {
  for (const release of releases) {
    const files = byFilename(
      release.artifacts.filter((a) => matches(a, feed.platform, feed.arch) && !a.filename.endsWith('.blockmap') && !a.filename.endsWith('.sig')),
    );
    const first = files[0];
    if (!first) continue;
    const lines = [`version: ${JSON.stringify(release.version)}`, 'files:'];
    for (const file of files) {
      lines.push(`  - url: ${JSON.stringify(fileUrl(feedBase, release.version, file.filename))}`);
      lines.push(`    sha512: ${JSON.stringify(hexToBase64(file.sha512))}`);
      lines.push(`    size: ${file.size}`);
    }
    lines.push(`path: ${JSON.stringify(fileUrl(feedBase, release.version, first.filename))}`);
    lines.push(`sha512: ${JSON.stringify(hexToBase64(first.sha512))}`);
    lines.push(`releaseDate: ${JSON.stringify(iso(release.publishedAt))}`);
    if (release.notes !== '') lines.push(`releaseNotes: ${JSON.stringify(release.notes)}`);
    return `${lines.join('\n')}\n`;
  }
  return null;
}

// ---- Tauri v2

export const TAURI_TARGETS = ['linux', 'windows', 'darwin'] as const;
export const TAURI_ARCHES = ['x86_64', 'i686', 'aarch64', 'armv7', 'riscv64'] as const;
const BUNDLE_ENDINGS: Record<string, string> = { appimage: '.AppImage', deb: '.deb', rpm: '.rpm', app: '.app.tar.gz', msi: '.msi', nsis: '.exe' };
const TAURI_ORDER = ['.AppImage', '.app.tar.gz', '.exe', '.msi', '.deb', '.rpm'];

export function isBundleType(value: string): boolean {
  return Object.hasOwn(BUNDLE_ENDINGS, value);
}

function endingRank(filename: string, order: string[]): number {
  const i = order.findIndex((ending) => filename.endsWith(ending));
  return i < 0 ? order.length : i;
}

function firstByEnding<T extends { filename: string }>(candidates: T[], order: string[]): T | undefined {
  return [...candidates].sort((a, b) => endingRank(a.filename, order) - endingRank(b.filename, order) || byteOrder(a.filename, b.filename))[0];
}

export interface TauriAnswer {
  version: string;
  notes: string;
  pub_date: string;
  url: string;
  signature: string;
}

/** The highest release above `current` with a candidate, or null (204). */
export function tauriUpdate(
  releases: FeedRelease[],
  target: string,
  arch: string,
  current: string,
  bundleType: string | null,
  feedBase: string,
): TauriAnswer | null {
  const ending = bundleType === null ? null : (BUNDLE_ENDINGS[bundleType] as string);
  for (const release of releases) {
    if (!semver.gt(release.version, current)) continue;
    const candidates = release.artifacts.filter(
      (a) => matches(a, target, arch) && a.tauriSignature !== null && (ending === null || a.filename.endsWith(ending)),
    );
    const pick = firstByEnding(candidates, TAURI_ORDER);
    if (!pick) continue;
    return {
      version: release.version,
      notes: release.notes,
      pub_date: iso(release.publishedAt),
      url: fileUrl(feedBase, release.version, pick.filename),
      signature: pick.tauriSignature as string,
    };
  }
  return null;
}

// ---- Sparkle 2

const SPARKLE_ORDER = ['.zip', '.dmg', '.tar.xz', '.tar.gz', '.pkg'];

/** Escapes `&`, `<`, `>`, `"` and drops the characters below U+0020 other than tab, LF and CR. */
export function xmlText(value: string): string {
  let out = '';
  for (const c of value) {
    const code = c.charCodeAt(0);
    if (code < 0x20 && c !== '\t' && c !== '\n' && c !== '\r') continue;
    out += c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : c;
  }
  return out;
}

/** `Sun, 22 Nov 2026 07:00:00 +0000`. */
export function rfc822(seconds: number): string {
  return new Date(seconds * 1000).toUTCString().replace(/GMT$/, '+0000');
}

export function sparkleAppcast(productName: string, releases: FeedRelease[], feedBase: string): string {
  let items = '';
  let count = 0;
  for (const release of releases) {
    if (count === 20) break;
    const archives = release.artifacts.filter((a) => matches(a, 'darwin', null) && SPARKLE_ORDER.some((ending) => a.filename.endsWith(ending)));
    const pick = firstByEnding(archives, SPARKLE_ORDER);
    if (!pick) continue;
    count++;
    items += `<item><title>Version ${xmlText(release.version)}</title>`;
    items += `<pubDate>${rfc822(release.publishedAt)}</pubDate>`;
    items += `<sparkle:version>${xmlText(release.bundleVersion ?? release.version)}</sparkle:version>`;
    items += `<sparkle:shortVersionString>${xmlText(release.version)}</sparkle:shortVersionString>`;
    if (release.notes !== '') items += `<description sparkle:format="markdown">${xmlText(release.notes)}</description>`;
    items += `<enclosure url="${xmlText(fileUrl(feedBase, release.version, pick.filename))}" length="${pick.size}" type="${xmlText(pick.contentType)}"`;
    if (pick.edSignature !== null) items += ` sparkle:edSignature="${xmlText(pick.edSignature)}"`;
    if (pick.filename.endsWith('.pkg')) items += ' sparkle:installationType="package"';
    items += '/></item>';
  }
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    '<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle">' +
    `<channel><title>${xmlText(productName)}</title>${items}</channel></rss>\n`
  );
}

// ---- latest.json for the SDKs

export interface BlockedRelease {
  version: string;
  publishedAt: number;
  reason: 'UPDATES_EXPIRED' | 'NOT_ENTITLED';
}

export function latestJson(
  covered: FeedRelease[],
  blocked: BlockedRelease[],
  platform: string,
  arch: string,
  current: string | null,
  feedBase: string,
): { update: unknown; blocked: unknown } {
  let update: Record<string, unknown> | null = null;
  let updateVersion: string | null = null;
  for (const release of covered) {
    if (current !== null && !semver.gt(release.version, current)) continue;
    const files = byFilename(release.artifacts.filter((a) => matches(a, platform, arch)));
    if (files.length === 0) continue;
    updateVersion = release.version;
    update = {
      version: release.version,
      channel: release.channel,
      publishedAt: iso(release.publishedAt),
      notes: release.notes,
      manifest: release.manifest,
      manifestSignatures: release.manifestSignatures,
      manifestSignature: release.manifestSignature,
      manifestKeyFingerprint: release.manifestKeyFingerprint,
      artifacts: files.map((a) => ({
        id: a.id,
        filename: a.filename,
        platform: a.platform,
        arch: a.arch,
        size: a.size,
        sha256: a.sha256,
        sha512: a.sha512,
        contentType: a.contentType,
        url: fileUrl(feedBase, release.version, a.filename),
      })),
    };
    break;
  }
  const above = byPrecedence(blocked).find(
    (b) => (current === null || semver.gt(b.version, current)) && (updateVersion === null || semver.gt(b.version, updateVersion)),
  );
  return { update, blocked: above ? { version: above.version, publishedAt: iso(above.publishedAt), reason: above.reason } : null };
}
