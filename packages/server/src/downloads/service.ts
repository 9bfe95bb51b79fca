import type { FastifyReply } from 'fastify';
import semver from 'semver';
import { recordAudit, type Author } from '../audit/audit.js';
import { localDate } from '../core/calendar.js';
import type { Ctx, Organisation } from '../core/context.js';
import { badRequest, forbidden, notFound, refused, tooManyRequests } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { inTransaction } from '../core/transaction.js';
import { lockRow, type Database } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { findLicenceView, statusOf, toLicence } from '../listings/repos/views.js';
import type { OrganisationCache } from '../orgs/repo.js';
import { findProductRow } from '../products/repo.js';
import { artifactRowsOf, findReleaseIdByVersion, findReleaseRow, listReleaseRows, type ArtifactRow, type ReleaseRow } from '../releases/repo.js';
import { ARCHES, artifactFacts, byPrecedence, meetsRequires, oneOf, PLATFORMS } from '../releases/rules.js';
import type { ArtifactStores } from '../releases/stores.js';
import { isLive } from '../seats/live.js';
import type { DownloadCounts } from './counts.js';
import { deliver } from '../releases/delivery.js';
import {
  channelOffers,
  electronYaml,
  isBundleType,
  isChannel,
  latestJson,
  matches,
  parseElectronName,
  sparkleAppcast,
  TAURI_ARCHES,
  TAURI_TARGETS,
  tauriUpdate,
  type BlockedRelease,
  type Channel,
  type FeedRelease,
} from './feeds.js';
import { encodeFilename } from '../releases/ranges.js';
import { findArtifactWithRelease, findBindingState, findDownloadLicence, publishedStamp, raiseFeedGeneration } from './repo.js';
import { makeFeedToken, makeGrant, readFeedToken, readGrant, tokenKey } from './tokens.js';

/** What licensed downloads and feeds need of the app (app.ts wires them). */
export interface DownloadDeps {
  database: Database;
  stores: ArtifactStores;
  counts: DownloadCounts;
  limiter: RateLimiter;
  organisations: OrganisationCache;
  /** LICENSOR_CHECK_RATE_ADDRESS: path-token requests count towards the check's per-address limit. */
  rateAddress: number;
  publicUrl: string;
  grantSeconds: number;
  keys: { grant: Buffer; feed: Buffer };
  /** The products' published releases as feeds read them (FeedReleases). */
  feedReleases: FeedReleases;
  /** A feed answered (`licensor_feed_requests_total{feed}`). */
  countFeed: (feed: FeedName) => void;
  /** Bytes the service streamed itself (`licensor_artifact_bytes_sent_total`). */
  countBytes: (bytes: number) => void;
}

export type FeedName = 'electron' | 'tauri' | 'sparkle' | 'json';

export const pathTokenKeys = (masterKey: Buffer) => ({ grant: tokenKey(masterKey, 'grant'), feed: tokenKey(masterKey, 'feed') });

export type DownloadReason = 'UNKNOWN_LICENCE' | 'REVOKED' | 'NOT_YET_VALID' | 'EXPIRED' | 'NO_SEAT' | 'NOT_ENTITLED' | 'UPDATES_EXPIRED';

const REFUSALS: Record<DownloadReason, string> = {
  UNKNOWN_LICENCE: 'this licence is not known to the service',
  REVOKED: 'the licence is revoked',
  NOT_YET_VALID: 'the licence is not valid yet',
  EXPIRED: 'the trial has ended',
  NO_SEAT: 'this machine holds no seat of the licence: check first',
  NOT_ENTITLED: 'the licence does not include this release',
  UPDATES_EXPIRED: "the release was published after the licence's update window ended",
};

/** A 403 `{error, reason}` of DESIGN.md 20's "Who may download". */
export const downloadRefused = (reason: DownloadReason) => refused(REFUSALS[reason], reason);

export type DownloadLicence = NonNullable<Awaited<ReturnType<typeof findDownloadLicence>>>;

export const downloadLicence = (t: Tenant, lid: string) => findDownloadLicence(t, lid);

/** The refusals of the licence's current term, in their order: REVOKED, NOT_YET_VALID, EXPIRED (a trial past its end only). */
export function licenceRefusal(licence: DownloadLicence, now: number): DownloadReason | null {
  const status = statusOf(licence, now);
  if (status === 'REVOKED') return 'REVOKED';
  if (status === 'PENDING') return 'NOT_YET_VALID';
  // A paid licence past its end keeps what it covers (the perpetual fallback); a trial does not.
  if (status === 'EXPIRED' && licence.trial === 1) return 'EXPIRED';
  return null;
}

/** DESIGN.md 20's `updatesUntil` in milliseconds: the current term's `upd`, else its grace end, else null (every release). */
export function updatesUntilOf(licence: Pick<DownloadLicence, 'updates_until' | 'grace_ends_at'>): number | null {
  if (licence.updates_until !== null) return Number(licence.updates_until) * 1000;
  return licence.grace_ends_at === null ? null : Number(licence.grace_ends_at);
}

/** Why a PUBLISHED release is not covered for the licence, or null when it is: its `requires`, then the window. */
export function coverageOf(licence: DownloadLicence, release: { published_at: number | null; requires: string }): 'NOT_ENTITLED' | 'UPDATES_EXPIRED' | null {
  if (!meetsRequires(JSON.parse(release.requires) as Record<string, unknown>, JSON.parse(licence.params) as Record<string, unknown>)) return 'NOT_ENTITLED';
  const until = updatesUntilOf(licence);
  return until !== null && Number(release.published_at) > until ? 'UPDATES_EXPIRED' : null;
}

const signaturesOf = (row: { manifest_signatures: string | null }) =>
  row.manifest_signatures === null ? [] : (JSON.parse(row.manifest_signatures) as { keyFingerprint: string; signature: string }[]);

const apiBase = (deps: Pick<DownloadDeps, 'publicUrl'>, org: Organisation) => `${deps.publicUrl}/o/${org.slug}/api/public`;

/**
 * `POST .../download` once the licence may download (check/downloads.ts): the artifact of this
 * product in a PUBLISHED release (else 404), covered (else 403 NOT_ENTITLED, UPDATES_EXPIRED),
 * answered with a grant URL for `grantSeconds`.
 */
export async function grantAnswer(
  deps: DownloadDeps,
  t: Tenant,
  org: Organisation,
  productId: number,
  licence: DownloadLicence,
  artifactId: number,
  now: number,
) {
  const row = await findArtifactWithRelease(t, artifactId);
  if (!row || Number(row.product_id) !== productId || row.status !== 'PUBLISHED') throw notFound(`no published artifact ${artifactId} of this product`);
  const uncovered = coverageOf(licence, row);
  if (uncovered) throw downloadRefused(uncovered);
  const exp = Math.floor(now / 1000) + deps.grantSeconds;
  const grant = makeGrant(deps.keys.grant, { art: Number(row.id), lid: licence.lid, exp });
  const signatures = signaturesOf(row);
  return {
    url: `${apiBase(deps, org)}/downloads/${grant}/${encodeFilename(row.filename)}`,
    expiresAt: iso(exp * 1000)!,
    artifact: artifactFacts(row),
    release: {
      version: row.version,
      channel: row.channel,
      publishedAt: iso(Number(row.published_at))!,
      notes: row.notes,
      manifest: row.manifest,
      manifestSignatures: signatures,
      manifestSignature: signatures[0]?.signature ?? null,
      manifestKeyFingerprint: signatures[0]?.keyFingerprint ?? null,
    },
  };
}

/** `POST .../feed-token` once the licence may download: the token for this seat's binding (null for OFFLINE) and the four feed URLs. */
export function feedTokenAnswer(deps: DownloadDeps, org: Organisation, licence: DownloadLicence, bindingId: number | null) {
  const token = makeFeedToken(deps.keys.feed, { lid: licence.lid, mid: bindingId, gen: Number(licence.feed_generation) });
  const base = `${apiBase(deps, org)}/feeds/${token}/`;
  return {
    token,
    urls: {
      electron: `${base}electron/`,
      tauri: `${base}tauri/{{target}}/{{arch}}/{{current_version}}`,
      sparkle: `${base}sparkle/appcast.xml`,
      json: `${base}latest.json`,
    },
  };
}

// ---- Path tokens: grant and feed GETs (DESIGN.md 20, "Path tokens")

export interface PathRequest {
  slug: string;
  token: string;
  method: string;
  range: string | undefined;
}

const BAD_GRANT = 'this download link is not valid: ask the application for a new one';
const EXPIRED_GRANT = 'this download link has expired: ask the application for a new one';
const BAD_FEED = 'this feed URL is not valid';
const RESET_FEED = 'this feed URL was reset: the application asks for a new one';

/** The per-address check limit, counted for every path-token request before its token is read. */
export async function admitPathRequest(deps: DownloadDeps, ip: string): Promise<void> {
  const hit = await deps.limiter.hit(`address:${ip}`, deps.rateAddress, Date.now());
  if (!hit.allowed) throw tooManyRequests('too many requests from this address', hit.retryAfterSeconds);
}

/** The organisation, the licence and its product as they are now: 404 for an unknown slug or another organisation's path, 403 for an inactive product. */
async function pathScope(deps: DownloadDeps, slug: string, lid: string) {
  const org = await deps.organisations.find(deps.database.db, slug);
  if (!org) throw notFound(`no organisation "${slug}"`);
  const t = tenant(deps.database.db, org.id);
  const licence = await findDownloadLicence(t, lid);
  if (!licence) throw notFound('nothing of this organisation is at this address');
  const product = await findProductRow(t, Number(licence.product_id));
  if (!product) throw notFound('nothing of this organisation is at this address');
  if (product.active !== 1) throw forbidden('the product is inactive');
  return { org, t, licence, product };
}

/** Delivery of one artifact, counted as section 20 counts downloads. */
async function answerArtifact(
  deps: DownloadDeps,
  reply: FastifyReply,
  org: Organisation,
  artifact: ArtifactRow,
  request: PathRequest,
  presignSeconds: number,
  now: number,
): Promise<FastifyReply> {
  const delivered = await deliver(reply, deps.stores.of(artifact.backend), artifact, request, presignSeconds);
  if (delivered.counted) deps.counts.count(org.id, Number(artifact.id), localDate(now, org.timezone));
  if (delivered.bytes > 0) deps.countBytes(delivered.bytes);
  return reply;
}

/** `GET`/`HEAD .../downloads/{grant}/{filename}`. */
export async function serveGrant(deps: DownloadDeps, reply: FastifyReply, request: PathRequest, filename: string): Promise<FastifyReply> {
  const now = Date.now();
  const grant = readGrant(deps.keys.grant, request.token, Math.floor(now / 1000));
  if (grant === 'BAD_TOKEN') throw forbidden(BAD_GRANT);
  if (grant === 'EXPIRED') throw forbidden(EXPIRED_GRANT);
  const { org, t, licence } = await pathScope(deps, request.slug, grant.lid);
  const row = await findArtifactWithRelease(t, grant.art);
  if (!row || Number(row.product_id) !== Number(licence.product_id)) throw notFound('nothing of this organisation is at this address');
  if (row.filename !== filename) throw notFound(`this link is for ${row.filename}, not ${filename}`);
  if (row.status !== 'PUBLISHED') throw notFound(`release ${row.version} is no longer published`);
  if (statusOf(licence, now) === 'REVOKED') throw downloadRefused('REVOKED');
  // A presigned URL expires with the grant (at least a second, for a grant in its last one).
  return answerArtifact(deps, reply, org, row, request, Math.max(1, grant.exp - Math.floor(now / 1000)), now);
}

/** A feed request's licence once its token, organisation, product, generation and the rules admit it. */
async function openFeed(deps: DownloadDeps, request: PathRequest) {
  const now = Date.now();
  const feed = readFeedToken(deps.keys.feed, request.token);
  if (feed === null) throw forbidden(BAD_FEED);
  const scope = await pathScope(deps, request.slug, feed.lid);
  if (Number(scope.licence.feed_generation) !== feed.gen) throw forbidden(RESET_FEED);
  const refusal = licenceRefusal(scope.licence, now);
  if (refusal) throw downloadRefused(refusal);
  if (feed.mid !== null) {
    const binding = await findBindingState(scope.t, Number(scope.licence.id), feed.mid);
    if (!binding || !isLive({ released_at: binding.released_at, lease_ends_at: binding.lease_ends_at }, now)) throw downloadRefused('NO_SEAT');
  }
  return { ...scope, now, base: `${apiBase(deps, scope.org)}/feeds/${request.token}/` };
}

type OpenFeed = Awaited<ReturnType<typeof openFeed>>;

function toFeedRelease(row: ReleaseRow, artifacts: ArtifactRow[]): FeedRelease {
  const signatures = signaturesOf(row);
  return {
    version: row.version,
    channel: row.channel,
    publishedAt: Math.floor(Number(row.published_at) / 1000),
    notes: row.notes,
    bundleVersion: row.bundle_version,
    manifest: row.manifest,
    manifestSignatures: signatures,
    manifestSignature: signatures[0]?.signature ?? null,
    manifestKeyFingerprint: signatures[0]?.keyFingerprint ?? null,
    artifacts: artifacts.map((a) => ({ ...artifactFacts(a), tauriSignature: a.tauri_signature, edSignature: a.ed_signature })),
  };
}

interface PublishedReleases {
  stamp: string;
  /** Highest SemVer precedence first. */
  releases: Array<{ row: ReleaseRow; release: FeedRelease }>;
}

/** Products whose published releases are kept at once: a bound on memory, the least recently used going first. */
const KEPT_PRODUCTS = 500;

/**
 * Each product's PUBLISHED releases with their files, as the feeds read them: reading and shaping
 * them was most of a feed's cost (docs/benchmarks.md, bench:downloads). Kept while the product's
 * stamp (repo.ts publishedStamp), read afresh on every request, is unchanged, so a publish, yank or
 * edit on any instance shows in the very next feed.
 */
export class FeedReleases {
  private readonly kept = new Map<number, PublishedReleases>();

  async of(t: Tenant, productId: number): Promise<PublishedReleases['releases']> {
    const stamp = await publishedStamp(t, productId);
    let entry = this.kept.get(productId);
    this.kept.delete(productId);
    if (entry?.stamp !== stamp) {
      const rows = (await listReleaseRows(t, productId, { status: 'PUBLISHED' })).sort(byPrecedence);
      const files = new Map<number, ArtifactRow[]>();
      for (const a of await artifactRowsOf(
        t,
        rows.map((r) => Number(r.id)),
      ))
        files.set(Number(a.release_id), [...(files.get(Number(a.release_id)) ?? []), a]);
      entry = { stamp, releases: rows.map((row) => ({ row, release: toFeedRelease(row, files.get(Number(row.id)) ?? []) })) };
    }
    this.kept.set(productId, entry);
    if (this.kept.size > KEPT_PRODUCTS) this.kept.delete(this.kept.keys().next().value!);
    return entry.releases;
  }
}

/** The product's PUBLISHED releases a feed of `channel` offers, highest first: those covered, and those the licence may not download with why. */
async function feedReleases(deps: DownloadDeps, feed: OpenFeed, channel: Channel) {
  const covered: FeedRelease[] = [];
  const blocked: (BlockedRelease & { release: FeedRelease })[] = [];
  for (const { row, release } of await deps.feedReleases.of(feed.t, Number(feed.licence.product_id))) {
    if (!channelOffers(channel, row.channel)) continue;
    const reason = coverageOf(feed.licence, row);
    if (reason === null) covered.push(release);
    else blocked.push({ version: row.version, publishedAt: release.publishedAt, reason, release });
  }
  return { covered, blocked };
}

function channelOf(value: string | undefined): Channel {
  const channel = value ?? 'stable';
  if (!isChannel(channel)) throw badRequest('Query parameter "channel": must be one of stable, rc, beta, alpha, dev');
  return channel;
}

/** A SemVer version as a feed query or path carries it (Tauri's current version, latest.json's). */
function semverOf(where: string, value: string): string {
  if (semver.valid(value) !== value) throw badRequest(`${where}: must be a SemVer version such as 1.2.3`);
  return value;
}

/** `GET`/`HEAD .../feeds/{token}/files/{version}/{filename}`: a covered PUBLISHED release's artifact. */
export async function serveFeedFile(deps: DownloadDeps, reply: FastifyReply, request: PathRequest, version: string, filename: string) {
  const feed = await openFeed(deps, request);
  const found = await findReleaseIdByVersion(feed.t, Number(feed.licence.product_id), version);
  const release = found ? await findReleaseRow(feed.t, Number(found.id)) : undefined;
  if (release?.status !== 'PUBLISHED') throw notFound(`no published release ${version}`);
  const uncovered = coverageOf(feed.licence, release);
  if (uncovered) throw downloadRefused(uncovered);
  const artifact = (await artifactRowsOf(feed.t, [Number(release.id)])).find((a) => a.filename === filename);
  if (!artifact) throw notFound(`release ${version} has no file ${filename}`);
  return answerArtifact(deps, reply, feed.org, artifact, request, deps.grantSeconds, feed.now);
}

/** electron-updater's `{C}.yml` and its variants: the YAML; 404 for a name that is no feed, or a feed without files. */
export async function electronFeed(deps: DownloadDeps, request: PathRequest, name: string): Promise<string> {
  const feed = await openFeed(deps, request);
  const wanted = parseElectronName(name);
  if (!wanted) throw notFound(`no electron-updater feed ${name}: latest.yml, latest-mac.yml, latest-linux.yml, latest-linux-arm64.yml, …`);
  deps.countFeed('electron');
  const yaml = electronYaml((await feedReleases(deps, feed, wanted.channel)).covered, wanted, feed.base);
  if (yaml === null) throw notFound(`no covered release with files for ${name}`);
  return yaml;
}

export interface TauriQuery {
  target: string;
  arch: string;
  currentVersion: string;
  bundleType: string | undefined;
  channel: string | undefined;
}

/** Tauri v2's dynamic endpoint: the update (200) or null (204). */
export async function tauriFeed(deps: DownloadDeps, request: PathRequest, query: TauriQuery) {
  const target = oneOf('target', TAURI_TARGETS, query.target);
  const arch = oneOf('arch', TAURI_ARCHES, query.arch);
  const current = semverOf('Path parameter "current_version"', query.currentVersion);
  if (query.bundleType !== undefined && !isBundleType(query.bundleType))
    throw badRequest('Query parameter "bundle_type": must be one of appimage, deb, rpm, app, msi, nsis');
  const channel = channelOf(query.channel);
  const feed = await openFeed(deps, request);
  deps.countFeed('tauri');
  return tauriUpdate((await feedReleases(deps, feed, channel)).covered, target, arch, current, query.bundleType ?? null, feed.base);
}

/** Sparkle 2's appcast. */
export async function sparkleFeed(deps: DownloadDeps, request: PathRequest, channelQuery: string | undefined): Promise<string> {
  const channel = channelOf(channelQuery);
  const feed = await openFeed(deps, request);
  deps.countFeed('sparkle');
  return sparkleAppcast(feed.product.name, (await feedReleases(deps, feed, channel)).covered, feed.base);
}

export interface LatestQuery {
  platform?: string | undefined;
  arch?: string | undefined;
  version?: string | undefined;
  channel?: string | undefined;
}

/** `latest.json` for the SDKs, as JSON.stringify writes it (the keys in DESIGN.md 20's order). */
export async function latestFeed(deps: DownloadDeps, request: PathRequest, query: LatestQuery): Promise<string> {
  const platform = oneOf('platform', PLATFORMS, query.platform);
  const arch = oneOf('arch', ARCHES, query.arch);
  const current = query.version === undefined ? null : semverOf('Query parameter "version"', query.version);
  const channel = channelOf(query.channel);
  const feed = await openFeed(deps, request);
  deps.countFeed('json');
  const { covered, blocked } = await feedReleases(deps, feed, channel);
  // Only what this platform and arch would be offered can be blocked for it.
  const mayNot = blocked.filter((b) => b.release.artifacts.some((a) => matches(a, platform, arch)));
  return JSON.stringify(latestJson(covered, mayNot, platform, arch, current, feed.base));
}

// ---- reset-download-links

/** Raises the licence's feed generation, so every feed URL made before answers 403; audited in the same transaction. */
export async function resetDownloadLinks(ctx: Pick<Ctx, 'database' | 'org'> & Author, lid: string) {
  return inTransaction(ctx, async (t) => {
    const licence = await findDownloadLicence(t, lid);
    if (!licence) throw notFound(`no licence ${lid}`);
    await lockRow(ctx.database, t.db, 'licences', Number(licence.id));
    await raiseFeedGeneration(t, Number(licence.id));
    const view = await findLicenceView(t, lid, ctx.now);
    await recordAudit(t, ctx, {
      action: 'licence.download_links_reset',
      subjectType: 'licence',
      subjectId: lid,
      lid,
      summary: 'Reset download links: feed URLs made before stop working',
      details: { feedGeneration: Number(view.feed_generation) },
    });
    return toLicence(view, ctx.now);
  });
}

// ---- The customer portal's downloads (no seat needed: the customer is not a machine)

const PORTAL_RELEASES = 20;

/** The product's 20 highest PUBLISHED releases, each with whether the licence may download it and why not. */
export async function portalReleases(t: Tenant, licence: DownloadLicence, now: number) {
  const refusal = licenceRefusal(licence, now);
  const rows = (await listReleaseRows(t, Number(licence.product_id), { status: 'PUBLISHED' })).sort(byPrecedence).slice(0, PORTAL_RELEASES);
  const artifacts = await artifactRowsOf(
    t,
    rows.map((r) => Number(r.id)),
  );
  return rows.map((row) => {
    const reason = refusal ?? coverageOf(licence, row);
    return {
      id: Number(row.id),
      version: row.version,
      channel: row.channel,
      publishedAt: iso(Number(row.published_at))!,
      notes: row.notes,
      covered: reason === null,
      reason,
      artifacts: artifacts
        .filter((a) => Number(a.release_id) === Number(row.id))
        .map((a) => ({ id: Number(a.id), filename: a.filename, platform: a.platform, arch: a.arch, size: Number(a.size), sha256: a.sha256 })),
    };
  });
}

/** A download link for the customer: the licence's own refusals, then the artifact's (404, NOT_ENTITLED, UPDATES_EXPIRED). */
export async function portalGrant(deps: DownloadDeps, t: Tenant, org: Organisation, licence: DownloadLicence, artifactId: number, now: number) {
  const refusal = licenceRefusal(licence, now);
  if (refusal) throw downloadRefused(refusal);
  const { url, expiresAt } = await grantAnswer(deps, t, org, Number(licence.product_id), licence, artifactId, now);
  return { url, expiresAt };
}
