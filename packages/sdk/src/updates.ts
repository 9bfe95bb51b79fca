import { createHash, randomBytes, type KeyObject } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { b64uDecode, verifyBytes } from '@licensor/protocol';
import { LicensorError } from './errors.js';
import { isObject, readStateFile, writeFileAtomically } from './store.js';

/** DESIGN.md 20's names: a release's channel, an artifact's platform and arch. */
export const CHANNELS = ['stable', 'rc', 'beta', 'alpha', 'dev'] as const;
export const PLATFORMS = ['linux', 'darwin', 'windows', 'any'] as const;
export const ARCHES = ['x86_64', 'aarch64', 'i686', 'armv7', 'riscv64', 'universal', 'any'] as const;
export type Channel = (typeof CHANNELS)[number];
export type Platform = (typeof PLATFORMS)[number];
export type Arch = (typeof ARCHES)[number];

/** One file of an update, as `latest.json` lists it; `size` and `sha256` are the signed manifest's. */
export interface UpdateArtifact {
  id: number;
  filename: string;
  platform: string;
  arch: string;
  size: number;
  sha256: string;
  sha512: string;
  contentType: string;
  /** The feed's `files/` URL: it works without a credential while the feed token does. */
  url: string;
}

/** A newer release whose manifest verified with a key this application ships (DESIGN.md 20). */
export interface Update {
  version: string;
  channel: string;
  /** ISO 8601. */
  publishedAt: string;
  notes: string;
  /** The SVCM1 text the signatures cover (docs/protocol.md section 14). */
  manifest: string;
  manifestSignatures: Array<{ keyFingerprint: string; signature: string }>;
  manifestSignature: string | null;
  manifestKeyFingerprint: string | null;
  /** This platform's and arch's files, by filename in byte order. */
  artifacts: UpdateArtifact[];
}

/** A newer release the licence may not download: its window ended before it was published, or its `requires` are not met. */
export interface BlockedUpdate {
  version: string;
  publishedAt: string;
  reason: 'UPDATES_EXPIRED' | 'NOT_ENTITLED';
}

export interface UpdateCheck {
  /** The highest covered release above the current version with files for this machine, or null. */
  update: Update | null;
  /** The highest release above both that this licence may not download, or null. */
  blocked: BlockedUpdate | null;
}

export interface UpdateOptions {
  /** The running version, SemVer `MAJOR.MINOR.PATCH[-PRERELEASE]`. */
  currentVersion: string;
  /** Default: this machine's (`process.platform`). */
  platform?: Platform;
  /** Default: this machine's (`process.arch`). */
  arch?: Arch;
  /** `stable` (default), `rc`, `beta`, `alpha` or `dev`: that channel and the ones before it. */
  channel?: Channel;
}

/** The feed URLs of `POST .../feed-token`: secrets, for electron-updater, Tauri, Sparkle and `latest.json`. */
export interface FeedUrls {
  electron: string;
  tauri: string;
  sparkle: string;
  json: string;
}

/** A feed token and its URLs, kept per licence so that every check for updates need not ask for one. */
export interface KeptFeed {
  lid: string;
  token: string;
  urls: FeedUrls;
}

/** What download() kept: the file, its size and its SHA-256 (lowercase hex), both the manifest's. */
export interface Download {
  path: string;
  size: number;
  sha256: string;
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?$/;

export const isVersion = (value: unknown): value is string => typeof value === 'string' && value.length <= 64 && SEMVER.test(value);

/** SemVer 2.0.0 precedence of two versions without build metadata: negative, zero or positive. */
export function compareVersions(a: string, b: string): number {
  const [, ...x] = SEMVER.exec(a)!;
  const [, ...y] = SEMVER.exec(b)!;
  for (let i = 0; i < 3; i++) {
    const d = BigInt(x[i]!) - BigInt(y[i]!);
    if (d !== 0n) return d < 0n ? -1 : 1;
  }
  if (x[3] === undefined || y[3] === undefined) return x[3] === y[3] ? 0 : x[3] === undefined ? 1 : -1;
  const p = x[3].split('.');
  const q = y[3].split('.');
  for (let i = 0; i < Math.min(p.length, q.length); i++) {
    const [m, n] = [p[i]!, q[i]!];
    const numeric = [/^\d+$/.test(m), /^\d+$/.test(n)];
    if (numeric[0] && numeric[1]) {
      const d = BigInt(m) - BigInt(n);
      if (d !== 0n) return d < 0n ? -1 : 1;
    } else if (numeric[0] !== numeric[1]) return numeric[0] ? -1 : 1;
    else if (m !== n) return m < n ? -1 : 1;
  }
  return Math.sign(p.length - q.length);
}

const NODE_PLATFORMS: Partial<Record<NodeJS.Platform, Platform>> = { linux: 'linux', darwin: 'darwin', win32: 'windows' };
const NODE_ARCHES: Partial<Record<string, Arch>> = { x64: 'x86_64', arm64: 'aarch64', ia32: 'i686', arm: 'armv7', riscv64: 'riscv64' };

/** The query of `latest.json`, or INVALID_OPTIONS for what the service would answer 400. */
export function updateQuery(options: UpdateOptions): URLSearchParams {
  if (!isObject(options) || !isVersion(options.currentVersion))
    throw new LicensorError('INVALID_OPTIONS', 'currentVersion must be a SemVer version such as 1.2.3 (no "v", no build metadata)');
  const platform = options.platform ?? NODE_PLATFORMS[process.platform];
  const arch = options.arch ?? NODE_ARCHES[process.arch];
  if (!(PLATFORMS as readonly unknown[]).includes(platform))
    throw new LicensorError('INVALID_OPTIONS', `platform must be one of ${PLATFORMS.join(', ')} (this machine's is not known: give it)`);
  if (!(ARCHES as readonly unknown[]).includes(arch))
    throw new LicensorError('INVALID_OPTIONS', `arch must be one of ${ARCHES.join(', ')} (this machine's is not known: give it)`);
  if (options.channel !== undefined && !(CHANNELS as readonly unknown[]).includes(options.channel))
    throw new LicensorError('INVALID_OPTIONS', `channel must be one of ${CHANNELS.join(', ')}`);
  const query = new URLSearchParams({ platform: platform!, arch: arch!, version: options.currentVersion });
  if (options.channel !== undefined) query.set('channel', options.channel);
  return query;
}

// ---- The kept feed token: <root>/<org>/<prd>/<lid>.feed.json (docs/protocol.md section 8)

const isUrls = (value: unknown): value is FeedUrls => isObject(value) && ['electron', 'tauri', 'sparkle', 'json'].every((k) => typeof value[k] === 'string');

/** A feed-token answer's `{token, urls}`, or BAD_RESPONSE. */
export function feedOf(lid: string, body: Record<string, unknown>): KeptFeed {
  if (typeof body.token !== 'string' || body.token === '' || !isUrls(body.urls))
    throw new LicensorError('BAD_RESPONSE', 'the feed-token answer lacks its token or URLs');
  const { electron, tauri, sparkle, json } = body.urls;
  return { lid, token: body.token, urls: { electron, tauri, sparkle, json } };
}

/** The kept feed of this licence, or null (none, unreadable, or another licence's). */
export async function readFeed(file: string, lid: string): Promise<KeptFeed | null> {
  const data = await readStateFile(file);
  if (data === null || data.lid !== lid || typeof data.token !== 'string' || data.token === '' || !isUrls(data.urls)) return null;
  return { lid, token: data.token, urls: data.urls };
}

export function writeFeed(file: string, feed: KeptFeed): Promise<void> {
  const { lid, token, urls } = feed;
  return mkdir(path.dirname(file), { recursive: true, mode: 0o700 }).then(() =>
    writeFileAtomically(file, `${JSON.stringify({ format: 1, lid, token, urls }, null, 2)}\n`),
  );
}

// ---- latest.json and its manifest

/** The SPKI SHA-256 (hex) of a key: how `manifestSignatures` name the key that signed. */
export const keyFingerprint = (key: KeyObject) =>
  createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex');

interface ManifestFile {
  platform: string;
  arch: string;
  size: number;
  sha256: string;
}

/** The SVCM1 text's fields, or null when it is not of that form. */
function parseManifest(text: string) {
  const parts = text.split('\u001f');
  const [tag, org, productKey, version, channel, publishedAt, count] = parts;
  const decimal = (value: string | undefined) => (value !== undefined && /^(0|[1-9]\d*)$/.test(value) ? Number(value) : null);
  const n = decimal(count);
  if (tag !== 'SVCM1' || decimal(publishedAt) === null || n === null || parts.length !== 7 + 5 * n) return null;
  const files = new Map<string, ManifestFile>();
  for (let i = 7; i < parts.length; i += 5) {
    const [filename, platform, arch, size, sha256] = parts.slice(i, i + 5) as [string, string, string, string, string];
    const bytes = decimal(size);
    if (bytes === null || !Number.isSafeInteger(bytes) || !/^[0-9a-f]{64}$/.test(sha256) || files.has(filename)) return null;
    files.set(filename, { platform, arch, size: bytes, sha256 });
  }
  return { org, productKey, version, channel, files };
}

const string = (value: unknown): value is string => typeof value === 'string';

function readArtifact(value: unknown): UpdateArtifact | null {
  if (!isObject(value)) return null;
  const { id, filename, platform, arch, size, sha256, sha512, contentType, url } = value;
  if (!Number.isSafeInteger(id) || !Number.isSafeInteger(size) || ![filename, platform, arch, sha256, sha512, contentType, url].every(string)) return null;
  return { id, filename, platform, arch, size, sha256, sha512, contentType, url } as UpdateArtifact;
}

function readUpdate(value: unknown): Update | null | undefined {
  if (value === null) return null;
  if (!isObject(value)) return undefined;
  const { version, channel, publishedAt, notes, manifest, manifestSignatures, manifestSignature, manifestKeyFingerprint, artifacts } = value;
  if (![version, channel, publishedAt, notes, manifest].every(string) || !Array.isArray(manifestSignatures) || !Array.isArray(artifacts)) return undefined;
  if ((manifestSignature !== null && !string(manifestSignature)) || (manifestKeyFingerprint !== null && !string(manifestKeyFingerprint))) return undefined;
  const signatures = manifestSignatures.map((s) =>
    isObject(s) && string(s.keyFingerprint) && string(s.signature) ? { keyFingerprint: s.keyFingerprint, signature: s.signature } : null,
  );
  const files = artifacts.map(readArtifact);
  if (signatures.includes(null) || files.includes(null)) return undefined;
  return {
    version,
    channel,
    publishedAt,
    notes,
    manifest,
    manifestSignatures: signatures as Update['manifestSignatures'],
    manifestSignature,
    manifestKeyFingerprint,
    artifacts: files as UpdateArtifact[],
  } as Update;
}

/** `latest.json`'s `{update, blocked}` as answered, or BAD_RESPONSE. */
export function readUpdateCheck(body: Record<string, unknown>): UpdateCheck {
  const update = readUpdate(body.update);
  const b = body.blocked;
  const blocked =
    b === null
      ? null
      : isObject(b) && string(b.version) && string(b.publishedAt) && (b.reason === 'UPDATES_EXPIRED' || b.reason === 'NOT_ENTITLED')
        ? { version: b.version, publishedAt: b.publishedAt, reason: b.reason as BlockedUpdate['reason'] }
        : undefined;
  if (update === undefined || blocked === undefined) throw new LicensorError('BAD_RESPONSE', 'the feed answer is not {update, blocked}');
  return { update, blocked };
}

/** The manifest's fields once one of its signatures verifies with a key the application ships, else BAD_MANIFEST. */
export function signedManifest(update: Update, keys: readonly KeyObject[]) {
  const known = new Map(keys.map((key) => [keyFingerprint(key), key]));
  const data = Buffer.from(update.manifest, 'utf8');
  const signed = update.manifestSignatures.some(({ keyFingerprint: fingerprint, signature }) => {
    const key = known.get(fingerprint);
    if (key === undefined) return false;
    try {
      return verifyBytes(key, data, b64uDecode(signature, 'signature'));
    } catch {
      return false;
    }
  });
  if (!signed) throw badManifest('is not signed by a key this application knows');
  const manifest = parseManifest(update.manifest);
  if (manifest === null) throw badManifest('is not SVCM1');
  return manifest;
}

const badManifest = (why: string) => new LicensorError('BAD_MANIFEST', `the update's manifest ${why}`);

/**
 * Keeps an update only when its manifest is signed by a key the application ships
 * (signedManifest), is this organisation's and product's, of the update's version and channel,
 * above the running version, and lists each of the update's files with the same platform, arch,
 * size and SHA-256: else BAD_MANIFEST. So nothing unsigned in the answer is taken on trust.
 */
export function verifyUpdate(update: Update, keys: readonly KeyObject[], expected: { org: string; productKey: string; currentVersion: string }): Update {
  const manifest = signedManifest(update, keys);
  if (manifest.org !== expected.org || manifest.productKey !== expected.productKey) throw badManifest("is another organisation's or product's");
  if (manifest.version !== update.version || manifest.channel !== update.channel) throw badManifest('is for another version or channel');
  if (!isVersion(manifest.version) || compareVersions(manifest.version, expected.currentVersion) <= 0) throw badManifest('is not above the running version');
  for (const file of update.artifacts) {
    const signed = manifest.files.get(file.filename);
    if (signed === undefined || signed.platform !== file.platform || signed.arch !== file.arch || signed.size !== file.size || signed.sha256 !== file.sha256)
      throw badManifest(`does not list ${file.filename} as the update does`);
  }
  return update;
}

// ---- download

/** The filename rule of DESIGN.md 20, so a name can never leave the folder it is written to. */
const FILENAME = /^[A-Za-z0-9](?:[A-Za-z0-9._+ -]{0,253}[A-Za-z0-9._+-])?$/;

/**
 * The update's file of this name (INVALID_OPTIONS when it lists none) with the size and SHA-256
 * its signed manifest gives (BAD_MANIFEST when the manifest does not verify or lacks the file).
 */
export function updateFile(update: Update, filename: string, keys: readonly KeyObject[]): UpdateArtifact {
  const file = isObject(update) && Array.isArray(update.artifacts) ? update.artifacts.find((a) => a.filename === filename) : undefined;
  if (file === undefined || !FILENAME.test(filename) || filename.includes('..'))
    throw new LicensorError('INVALID_OPTIONS', `the update lists no file ${JSON.stringify(filename)}`);
  const signed = signedManifest(update, keys).files.get(filename);
  if (signed === undefined) throw badManifest(`does not list ${filename}`);
  return { ...file, size: signed.size, sha256: signed.sha256 };
}

/**
 * Streams `response`'s body to a temporary file in `folder` while hashing it, then renames it to
 * `folder/filename` only when its size and SHA-256 are the manifest's; else the temporary file is
 * removed and DIGEST_MISMATCH thrown. `idle` rejects when no bytes come for too long.
 */
export async function keepFile(
  body: ReadableStream<Uint8Array>,
  folder: string,
  file: UpdateArtifact,
  idle: <T>(step: Promise<T>) => Promise<T>,
): Promise<Download> {
  await mkdir(folder, { recursive: true });
  const target = path.join(folder, file.filename);
  // In the same folder, so the rename is atomic; a leading dot keeps it out of ordinary listings.
  const temporary = path.join(folder, `.${file.filename}.${randomBytes(6).toString('hex')}.part`);
  const hash = createHash('sha256');
  let size = 0;
  try {
    const handle = await open(temporary, 'wx', 0o644);
    try {
      const reader = body.getReader();
      for (;;) {
        const { done, value } = await idle(reader.read());
        if (done) break;
        size += value.byteLength;
        // More than the manifest's size is a mismatch already: stop reading.
        if (size > file.size) {
          await reader.cancel().catch(() => undefined);
          break;
        }
        hash.update(value);
        await handle.write(value);
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    const sha256 = hash.digest('hex');
    if (size !== file.size || sha256 !== file.sha256)
      throw new LicensorError('DIGEST_MISMATCH', `${file.filename} is not the file the manifest signed (size or SHA-256 differ): it was deleted`);
    await rename(temporary, target);
    return { path: target, size, sha256 };
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
