import { createHash, randomBytes } from 'node:crypto';
import type { Updateable } from 'kysely';
import { b64uEncode, releaseManifest } from '@licensor/protocol';
import { recordAudit } from '../audit/audit.js';
import type { Ctx } from '../core/context.js';
import { ApiError, badRequest, conflict, invalid, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { inTransaction } from '../core/transaction.js';
import { isUniqueViolation } from '../db/database.js';
import type { ReleasesTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import type { Keyring } from '../keys/keyring.js';
import { findProductRow, type ProductRow } from '../products/repo.js';
import type { ProductParam } from '../products/schemas.js';
import {
  artifactRowsOf,
  deleteArtifactRow,
  deleteReleaseRows,
  downloadsOf,
  findArtifactRow,
  findReleaseIdByVersion,
  findReleaseRow,
  insertArtifactRow,
  insertReleaseRow,
  keyIdsOf,
  listReleaseRows,
  lockReleaseRow,
  storedBytes,
  updateReleaseRow,
  type ArtifactRow,
  type ReleaseRow,
} from './repo.js';
import {
  ARCHES,
  artifactFacts,
  byPrecedence,
  CHANNELS,
  checkBundleVersion,
  checkChannel,
  checkEdSignature,
  checkFilename,
  checkRequires,
  checkTauriSignature,
  checkVersion,
  MAX_ARTIFACTS,
  oneOf,
  PLATFORMS,
  STATUSES,
} from './rules.js';
import { type ArtifactStore, TOO_LARGE } from './store.js';
import type { ArtifactStores } from './stores.js';

export interface ReleaseLimits {
  maxBytes: number;
  quotaBytes: number;
}

interface ManifestSignature {
  keyFingerprint: string;
  signature: string;
}

export function toArtifact(row: ArtifactRow, downloads: number) {
  const { id, ...facts } = artifactFacts(row);
  return {
    id,
    releaseId: Number(row.release_id),
    ...facts,
    tauriSignature: row.tauri_signature,
    edSignature: row.ed_signature,
    backend: row.backend,
    createdAt: iso(Number(row.created_at)),
    createdBy: row.created_by,
    downloads,
  };
}

/** The records of `rows` with their artifacts and download counts, in the order given. */
export async function toReleases(t: Tenant, rows: readonly ReleaseRow[]) {
  const artifacts = await artifactRowsOf(
    t,
    rows.map((r) => Number(r.id)),
  );
  const downloads = await downloadsOf(
    t,
    artifacts.map((a) => Number(a.id)),
  );
  return rows.map((row) => {
    const own = artifacts.filter((a) => Number(a.release_id) === Number(row.id)).map((a) => toArtifact(a, downloads.get(Number(a.id)) ?? 0));
    const signatures = row.manifest_signatures === null ? [] : (JSON.parse(row.manifest_signatures) as ManifestSignature[]);
    return {
      id: Number(row.id),
      productId: Number(row.product_id),
      version: row.version,
      channel: row.channel,
      status: row.status,
      notes: row.notes,
      requires: JSON.parse(row.requires) as Record<string, unknown>,
      bundleVersion: row.bundle_version,
      createdAt: iso(Number(row.created_at)),
      createdBy: row.created_by,
      publishedAt: iso(row.published_at === null ? null : Number(row.published_at)),
      publishedBy: row.published_by,
      yankedAt: iso(row.yanked_at === null ? null : Number(row.yanked_at)),
      yankedReason: row.yanked_reason,
      downloads: own.reduce((sum, a) => sum + a.downloads, 0),
      artifacts: own,
      manifest: row.manifest,
      manifestSignatures: signatures,
      manifestSignature: signatures[0]?.signature ?? null,
      manifestKeyFingerprint: signatures[0]?.keyFingerprint ?? null,
    };
  });
}
export type ReleaseRecord = Awaited<ReturnType<typeof toReleases>>[number];

export async function releaseData(t: Tenant, id: number) {
  const row = await findReleaseRow(t, id);
  return row ? { release: (await toReleases(t, [row]))[0] } : {};
}

async function loadProduct(t: Tenant, productId: number): Promise<ProductRow> {
  const product = await findProductRow(t, productId);
  if (!product) throw notFound(`no product ${productId}`);
  return product;
}

async function loadRelease(t: Tenant, id: number): Promise<ReleaseRow> {
  const row = await findReleaseRow(t, id);
  if (!row) throw notFound(`no release ${id}`);
  return row;
}

const releaseOne = async (t: Tenant, id: number) => (await toReleases(t, [await loadRelease(t, id)]))[0]!;
const paramsOf = (product: ProductRow) => JSON.parse(product.params) as ProductParam[];

function checkNotes(notes: string): string {
  if (notes.length > 65_536) throw invalid('notes', 'at most 65,536 characters');
  return notes;
}

export interface CreateReleaseInput {
  version: string;
  channel?: string | undefined;
  notes?: string | undefined;
  requires?: Record<string, unknown> | undefined;
  bundleVersion?: string | null | undefined;
}

export async function createRelease(ctx: Ctx, productId: number, input: CreateReleaseInput) {
  const version = checkVersion(input.version);
  const channel = checkChannel(version, input.channel);
  const notes = checkNotes(input.notes ?? '');
  const bundleVersion = checkBundleVersion(input.bundleVersion ?? null);
  try {
    return await inTransaction(ctx, async (t) => {
      const product = await loadProduct(t, productId);
      const requires = checkRequires(input.requires ?? {}, paramsOf(product));
      const taken = await findReleaseIdByVersion(t, productId, version);
      if (taken) throw versionTaken(version);
      const inserted = await insertReleaseRow(t, {
        product_id: productId,
        version,
        channel,
        status: 'DRAFT',
        notes,
        requires: JSON.stringify(requires),
        bundle_version: bundleVersion,
        created_at: ctx.now,
        created_by: ctx.actor.name,
        published_at: null,
        published_by: null,
        yanked_at: null,
        yanked_reason: null,
        manifest: null,
        manifest_signatures: null,
      });
      const id = Number(inserted.id);
      await recordAudit(t, ctx, {
        action: 'release.created',
        subjectType: 'release',
        subjectId: id,
        summary: `Created release ${version} (${channel}) of ${product.product_key}`,
        details: { productId, version, channel },
      });
      return releaseOne(t, id);
    });
  } catch (err) {
    // Two creators of one version on two instances: the unique index lets one in.
    if (isUniqueViolation(err)) throw versionTaken(version);
    throw err;
  }
}
const versionTaken = (version: string) => conflict(`the product already has a release ${version}`);

export async function listReleases(ctx: Ctx, productId: number, filter: { status?: string | undefined; channel?: string | undefined }) {
  if (filter.status !== undefined) oneOf('status', STATUSES, filter.status);
  if (filter.channel !== undefined) oneOf('channel', CHANNELS, filter.channel);
  const t = ctx.tenant;
  await loadProduct(t, productId);
  const rows = (await listReleaseRows(t, productId, filter)).sort(byPrecedence);
  return toReleases(t, rows);
}

export const getRelease = (ctx: Ctx, id: number) => releaseOne(ctx.tenant, id);

export interface UpdateReleaseInput {
  channel?: string | undefined;
  notes?: string | undefined;
  requires?: Record<string, unknown> | undefined;
  bundleVersion?: string | null | undefined;
}

export async function updateRelease(ctx: Ctx, id: number, input: UpdateReleaseInput) {
  return inTransaction(ctx, async (t) => {
    const row = await lockReleaseRow(ctx.database.dialect, t, id);
    if (!row) throw notFound(`no release ${id}`);
    const set: Updateable<ReleasesTable> = {};
    const changed: string[] = [];
    if (input.channel !== undefined && input.channel !== row.channel) {
      const channel = checkChannel(row.version, input.channel);
      if (row.status !== 'DRAFT') throw conflict(`the channel of a ${row.status.toLowerCase()} release cannot change`);
      set.channel = channel;
      changed.push('channel');
    }
    if (input.notes !== undefined && input.notes !== row.notes) {
      set.notes = checkNotes(input.notes);
      changed.push('notes');
    }
    if (input.requires !== undefined) {
      const requires = JSON.stringify(checkRequires(input.requires, paramsOf(await loadProduct(t, Number(row.product_id)))));
      if (requires !== row.requires) {
        set.requires = requires;
        changed.push('requires');
      }
    }
    if (input.bundleVersion !== undefined && input.bundleVersion !== row.bundle_version) {
      set.bundle_version = checkBundleVersion(input.bundleVersion);
      changed.push('bundleVersion');
    }
    if (changed.length > 0) {
      await updateReleaseRow(t, id, { ...set, row_version: Number(row.row_version) + 1 });
      await recordAudit(t, ctx, {
        action: 'release.updated',
        subjectType: 'release',
        subjectId: id,
        summary: `Updated release ${row.version}: ${changed.join(', ')}`,
        details: { version: row.version, changed },
      });
    }
    return releaseOne(t, id);
  });
}

export async function deleteRelease(ctx: Ctx, stores: ArtifactStores, id: number): Promise<void> {
  const removed = await inTransaction(ctx, async (t) => {
    const row = await lockReleaseRow(ctx.database.dialect, t, id);
    if (!row) throw notFound(`no release ${id}`);
    if (row.status !== 'DRAFT') throw conflict(`a ${row.status.toLowerCase()} release cannot be deleted`);
    const artifacts = await artifactRowsOf(t, [id]);
    await deleteReleaseRows(t, id);
    await recordAudit(t, ctx, {
      action: 'release.deleted',
      subjectType: 'release',
      subjectId: id,
      summary: `Deleted release ${row.version}`,
      details: { version: row.version, artifacts: artifacts.length },
    });
    return artifacts;
  });
  for (const artifact of removed) await stores.discard(artifact);
}

export interface UploadQuery {
  filename?: string | undefined;
  platform?: string | undefined;
  arch?: string | undefined;
  tauriSignature?: string | undefined;
  edSignature?: string | undefined;
}

/** The media type less parameters, lower-cased; `application/octet-stream` when none. */
function mediaType(header: string | undefined): string {
  const type = (header ?? '').split(';')[0]!.trim().toLowerCase();
  return /^[a-z0-9!#$&^_.+-]{1,127}\/[a-z0-9!#$&^_.+-]{1,127}$/.test(type) ? type : 'application/octet-stream';
}

async function quotaLeft(t: Tenant, limits: ReleaseLimits): Promise<number> {
  return limits.quotaBytes === 0 ? Number.MAX_SAFE_INTEGER : limits.quotaBytes - (await storedBytes(t));
}
const quotaExceeded = () => new ApiError(413, "the file would take the organisation's stored artifacts past its quota");

/** Refusals the store's row would meet at commit: not DRAFT, name taken, 100 already. */
async function uploadConflict(t: Tenant, release: ReleaseRow, filename: string): Promise<void> {
  if (release.status !== 'DRAFT') throw conflict(`artifacts are added to a draft release only (this one is ${release.status.toLowerCase()})`);
  const artifacts = await artifactRowsOf(t, [Number(release.id)]);
  if (artifacts.some((a) => a.filename === filename)) throw conflict(`the release already has a file named ${filename}`);
  if (artifacts.length >= MAX_ARTIFACTS) throw conflict(`a release holds at most ${MAX_ARTIFACTS} artifacts`);
}

/**
 * DESIGN.md 20's upload: every refusal that needs no body first (404, 400, 409, 413 by
 * Content-Length), then the body streamed into the store with both bounds, then the row under the
 * organisation's lock and the release's, where the quota and the release's rules are judged again.
 * A refusal after the bytes are stored deletes them.
 */
export async function uploadArtifact(
  ctx: Ctx,
  store: ArtifactStore,
  limits: ReleaseLimits,
  releaseId: number,
  query: UploadQuery,
  headers: { contentLength: string | undefined; contentType: string | undefined },
  body: NodeJS.ReadableStream,
) {
  const t = ctx.tenant;
  const release = await loadRelease(t, releaseId);
  const filename = checkFilename(query.filename);
  const platform = oneOf('platform', PLATFORMS, query.platform);
  const arch = oneOf('arch', ARCHES, query.arch);
  const tauriSignature = checkTauriSignature(query.tauriSignature);
  const edSignature = checkEdSignature(query.edSignature);
  await uploadConflict(t, release, filename);
  const left = await quotaLeft(t, limits);
  if (headers.contentLength !== undefined && /^[0-9]+$/.test(headers.contentLength)) {
    const length = Number(headers.contentLength);
    if (length > limits.maxBytes) throw new ApiError(413, `the file is larger than this service accepts (${limits.maxBytes} bytes)`);
    if (length > left) throw quotaExceeded();
    if (length === 0) throw badRequest('the file is empty');
  }
  if (left <= 0) throw quotaExceeded();
  const contentType = mediaType(headers.contentType);
  const key = `${ctx.org.id}/${releaseId}/${randomBytes(16).toString('hex')}/${filename}`;
  let stored: Awaited<ReturnType<ArtifactStore['put']>>;
  try {
    stored = await store.put(key, body, Math.min(limits.maxBytes, left), contentType);
  } catch (err) {
    if (err instanceof ApiError && err.status === 413 && err.message === TOO_LARGE)
      throw left < limits.maxBytes ? quotaExceeded() : new ApiError(413, `the file is larger than this service accepts (${limits.maxBytes} bytes)`);
    throw err;
  }
  try {
    const id = await inTransaction(
      ctx,
      async (tx) => {
        const locked = await lockReleaseRow(ctx.database.dialect, tx, releaseId);
        if (!locked) throw notFound(`no release ${releaseId}`);
        await uploadConflict(tx, locked, filename);
        if (stored.size > (await quotaLeft(tx, limits))) throw quotaExceeded();
        const inserted = await insertArtifactRow(tx, {
          product_id: Number(locked.product_id),
          release_id: releaseId,
          filename,
          platform,
          arch,
          size: stored.size,
          sha256: stored.sha256,
          sha512: stored.sha512,
          content_type: contentType,
          tauri_signature: tauriSignature,
          ed_signature: edSignature,
          backend: store.backend,
          storage_key: key,
          created_at: ctx.now,
          created_by: ctx.actor.name,
        });
        await updateReleaseRow(tx, releaseId, { row_version: Number(locked.row_version) + 1 });
        await recordAudit(tx, ctx, {
          action: 'artifact.uploaded',
          subjectType: 'release',
          subjectId: releaseId,
          summary: `Uploaded ${filename} (${stored.size} bytes) to release ${locked.version}`,
          details: { artifactId: Number(inserted.id), filename, platform, arch, size: stored.size, sha256: stored.sha256 },
        });
        return Number(inserted.id);
      },
      { lockOrganisation: true },
    );
    const row = (await findArtifactRow(t, releaseId, id))!;
    return toArtifact(row, 0);
  } catch (err) {
    await store.delete(key).catch(() => undefined);
    if (isUniqueViolation(err)) throw conflict(`the release already has a file named ${filename}`);
    throw err;
  }
}

export async function deleteArtifact(ctx: Ctx, stores: ArtifactStores, releaseId: number, artifactId: number): Promise<void> {
  const artifact = await inTransaction(ctx, async (t) => {
    const release = await lockReleaseRow(ctx.database.dialect, t, releaseId);
    if (!release) throw notFound(`no release ${releaseId}`);
    const artifact = await findArtifactRow(t, releaseId, artifactId);
    if (!artifact) throw notFound(`no artifact ${artifactId} in release ${releaseId}`);
    if (release.status !== 'DRAFT') throw conflict(`artifacts of a ${release.status.toLowerCase()} release cannot be deleted`);
    await deleteArtifactRow(t, artifactId);
    await updateReleaseRow(t, releaseId, { row_version: Number(release.row_version) + 1 });
    await recordAudit(t, ctx, {
      action: 'artifact.deleted',
      subjectType: 'release',
      subjectId: releaseId,
      summary: `Deleted ${artifact.filename} from release ${release.version}`,
      details: { artifactId, filename: artifact.filename },
    });
    return artifact;
  });
  await stores.discard(artifact);
}

export async function findArtifact(ctx: Ctx, releaseId: number, artifactId: number): Promise<ArtifactRow> {
  await loadRelease(ctx.tenant, releaseId);
  const artifact = await findArtifactRow(ctx.tenant, releaseId, artifactId);
  if (!artifact) throw notFound(`no artifact ${artifactId} in release ${releaseId}`);
  return artifact;
}

const fingerprintOf = (publicKey: import('node:crypto').KeyObject) =>
  createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');

/** What a signature was made over: the artifacts and the keys, so a commit can tell whether they changed. */
const stateOf = (artifacts: readonly ArtifactRow[], keyIds: readonly number[]) =>
  JSON.stringify([artifacts.map((a) => [Number(a.id), a.sha256]).sort(), keyIds]);

/**
 * DRAFT → PUBLISHED: the manifest signed by each key of the product that can sign (current first;
 * the current one unable is a 503), outside the transaction; committed under the release row's lock
 * only if it is still a draft with the artifacts and keys that were signed, else signed again.
 */
export async function publishRelease(ctx: Ctx, keyring: Keyring, id: number, input: { publishedAt?: string | undefined }) {
  let publishedAt = Math.floor(ctx.now / 1000) * 1000;
  let backdated = false;
  if (input.publishedAt !== undefined) {
    const at = Date.parse(input.publishedAt);
    if (!Number.isFinite(at)) throw invalid('publishedAt', 'must be an ISO 8601 time');
    if (at > ctx.now) throw invalid('publishedAt', 'cannot be in the future');
    const whole = Math.floor(at / 1000) * 1000;
    backdated = whole < publishedAt;
    publishedAt = whole;
  }
  const t = ctx.tenant;
  for (let attempt = 0; attempt < 5; attempt++) {
    const release = await loadRelease(t, id);
    if (release.status !== 'DRAFT') throw conflict(`only a draft release can be published (this one is ${release.status.toLowerCase()})`);
    const artifacts = await artifactRowsOf(t, [id]);
    if (artifacts.length === 0) throw conflict('no artifact: upload at least one file before publishing');
    const product = await loadProduct(t, Number(release.product_id));
    const manifest = releaseManifest({
      org: ctx.org.slug,
      productKey: product.product_key,
      version: release.version,
      channel: release.channel,
      publishedAt: publishedAt / 1000,
      artifacts: artifacts.map((a) => ({ filename: a.filename, platform: a.platform, arch: a.arch, size: Number(a.size), sha256: a.sha256 })),
    });
    const keys = await keyring.keysFor(t, Number(release.product_id));
    const signatures: ManifestSignature[] = [];
    const unsignedKeys: string[] = [];
    for (const [index, key] of keys.entries()) {
      const keyFingerprint = fingerprintOf(key.publicKey);
      if (!key.signer) {
        if (index === 0) throw new ApiError(503, `the product's signing key is unavailable: ${key.error}`);
        unsignedKeys.push(keyFingerprint);
        continue;
      }
      try {
        signatures.push({ keyFingerprint, signature: b64uEncode(await key.signer.sign(Buffer.from(manifest, 'utf8'))) });
      } catch (err) {
        if (index === 0) throw err;
        unsignedKeys.push(keyFingerprint);
      }
    }
    const signedState = stateOf(
      artifacts,
      keys.map((k) => k.keyId),
    );
    const done = await inTransaction(ctx, async (tx) => {
      const locked = await lockReleaseRow(ctx.database.dialect, tx, id);
      if (!locked) throw notFound(`no release ${id}`);
      if (locked.status !== 'DRAFT') throw conflict(`only a draft release can be published (this one is ${locked.status.toLowerCase()})`);
      const nowKeys = await keyIdsOf(tx, Number(locked.product_id));
      const current = stateOf(
        await artifactRowsOf(tx, [id]),
        keys.map((k) => k.keyId).filter((k) => nowKeys.includes(k)),
      );
      if (current !== signedState || nowKeys.length !== keys.length || locked.channel !== release.channel) return false;
      await updateReleaseRow(tx, id, {
        status: 'PUBLISHED',
        published_at: publishedAt,
        published_by: ctx.actor.name,
        manifest,
        manifest_signatures: JSON.stringify(signatures),
        row_version: Number(locked.row_version) + 1,
      });
      await recordAudit(tx, ctx, {
        action: 'release.published',
        subjectType: 'release',
        subjectId: id,
        summary: `Published release ${locked.version}${backdated ? ` dated ${iso(publishedAt)}` : ''}`,
        details: {
          version: locked.version,
          publishedAt: iso(publishedAt),
          ...(backdated ? { backdated: true } : {}),
          ...(unsignedKeys.length > 0 ? { unsignedKeys } : {}),
        },
        event: () => releaseData(tx, id),
      });
      return true;
    });
    if (done) return releaseOne(t, id);
  }
  throw new ApiError(503, 'the release kept changing while it was being signed: try again');
}

export async function yankRelease(ctx: Ctx, id: number, input: { reason?: string | undefined }) {
  if (input.reason !== undefined && (input.reason.length < 1 || input.reason.length > 500)) throw invalid('reason', '1 to 500 characters');
  return transition(ctx, id, 'PUBLISHED', 'YANKED', 'release.yanked', { yanked_at: ctx.now, yanked_reason: input.reason ?? null }, input.reason);
}

export const unyankRelease = (ctx: Ctx, id: number) => transition(ctx, id, 'YANKED', 'PUBLISHED', 'release.unyanked', { yanked_at: null, yanked_reason: null });

async function transition(
  ctx: Ctx,
  id: number,
  from: string,
  to: string,
  action: string,
  set: { yanked_at: number | null; yanked_reason: string | null },
  reason?: string,
) {
  return inTransaction(ctx, async (t) => {
    const row = await lockReleaseRow(ctx.database.dialect, t, id);
    if (!row) throw notFound(`no release ${id}`);
    if (row.status !== from) throw conflict(`the release is ${row.status.toLowerCase()}, not ${from.toLowerCase()}`);
    await updateReleaseRow(t, id, { status: to, ...set, row_version: Number(row.row_version) + 1 });
    await recordAudit(t, ctx, {
      action,
      subjectType: 'release',
      subjectId: id,
      summary: `${to === 'YANKED' ? 'Yanked' : 'Unyanked'} release ${row.version}`,
      details: { version: row.version, ...(reason !== undefined ? { reason } : {}) },
      event: () => releaseData(t, id),
    });
    return releaseOne(t, id);
  });
}
