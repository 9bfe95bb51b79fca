import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Id, IdParams, NoContent, Nullable, NullableTimestamp, responses, Slug, Timestamp } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { ARCHES, CHANNELS, PLATFORMS, STATUSES } from './rules.js';
import {
  createRelease,
  deleteArtifact,
  deleteRelease,
  findArtifact,
  getRelease,
  listReleases,
  publishRelease,
  type ReleaseLimits,
  unyankRelease,
  updateRelease,
  uploadArtifact,
  yankRelease,
} from './service.js';
import { deliver } from './delivery.js';
import type { ArtifactStores } from './stores.js';

const tags = ['Releases'];

export const Artifact = Type.Object({
  id: Type.Integer(),
  releaseId: Type.Integer(),
  filename: Type.String(),
  platform: Type.Enum([...PLATFORMS]),
  arch: Type.Enum([...ARCHES]),
  size: Type.Integer(),
  sha256: Type.String({ description: 'Lowercase hex, computed while the file streamed in.' }),
  sha512: Type.String({ description: 'Lowercase hex.' }),
  contentType: Type.String(),
  tauriSignature: Nullable(Type.String()),
  edSignature: Nullable(Type.String()),
  backend: Type.Enum(['disk', 's3']),
  createdAt: Timestamp,
  createdBy: Type.String(),
  downloads: Type.Integer(),
});

const ManifestSignature = Type.Object({
  keyFingerprint: Type.String({ description: 'SHA-256 of the SPKI DER, hex.' }),
  signature: Type.String({ description: 'B64U.' }),
});

export const Release = Type.Object({
  id: Type.Integer(),
  productId: Type.Integer(),
  version: Type.String(),
  channel: Type.Enum([...CHANNELS]),
  status: Type.Enum([...STATUSES]),
  notes: Type.String({ description: 'Markdown, rendered with raw HTML off.' }),
  requires: Type.Record(Type.String(), Type.Unknown()),
  bundleVersion: Nullable(Type.String()),
  createdAt: Timestamp,
  createdBy: Type.String(),
  publishedAt: NullableTimestamp,
  publishedBy: Nullable(Type.String()),
  yankedAt: NullableTimestamp,
  yankedReason: Nullable(Type.String()),
  downloads: Type.Integer(),
  artifacts: Type.Array(Artifact),
  manifest: Nullable(Type.String({ description: 'The SVCM1 text the signatures cover (docs/protocol.md); null in DRAFT.' })),
  manifestSignatures: Type.Array(ManifestSignature, { description: 'One per key of the product that could sign at publish, current first.' }),
  manifestSignature: Nullable(Type.String()),
  manifestKeyFingerprint: Nullable(Type.String()),
});

const RequiresBody = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), {
  description: 'Up to 16 of the product’s parameter keys with values of their type (a STRING_LIST: one string it must contain).',
});
const BundleVersion = Nullable(Type.String({ maxLength: 64, description: "Sparkle's `sparkle:version`: `^[0-9]+(\\.[0-9]+){0,3}$`." }));
const Notes = Type.String({ maxLength: 65_536 });
const CreateBody = Type.Object(
  {
    version: Type.String({ maxLength: 200, description: 'SemVer 2.0.0 MAJOR.MINOR.PATCH[-PRERELEASE], ≤ 64 characters, no `v`, no build metadata.' }),
    channel: Type.Optional(Type.String({ maxLength: 32, description: 'stable|rc|beta|alpha|dev; by default from the prerelease.' })),
    notes: Type.Optional(Notes),
    requires: Type.Optional(RequiresBody),
    bundleVersion: Type.Optional(BundleVersion),
  },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  {
    channel: Type.Optional(Type.String({ maxLength: 32, description: 'DRAFT only (else 409).' })),
    notes: Type.Optional(Notes),
    requires: Type.Optional(RequiresBody),
    bundleVersion: Type.Optional(BundleVersion),
  },
  { additionalProperties: false },
);
const ListQuery = Type.Object(
  { status: Type.Optional(Type.String({ maxLength: 32 })), channel: Type.Optional(Type.String({ maxLength: 32 })) },
  { additionalProperties: false },
);
const PublishBody = Nullable(
  Type.Object(
    { publishedAt: Type.Optional(Type.String({ maxLength: 64, description: 'An earlier ISO time (a backdate); never the future.' })) },
    { additionalProperties: false },
  ),
);
const YankBody = Nullable(Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false }));
const UploadQuery = Type.Object({
  filename: Type.Optional(Type.String({ maxLength: 255, description: '`^[A-Za-z0-9](?:[A-Za-z0-9._+ -]{0,253}[A-Za-z0-9._+-])?$`, without `..`.' })),
  platform: Type.Optional(Type.String({ maxLength: 32, description: PLATFORMS.join('|') })),
  arch: Type.Optional(Type.String({ maxLength: 32, description: ARCHES.join('|') })),
  tauriSignature: Type.Optional(Type.String({ maxLength: 4096, description: "The Tauri `.sig` file's content." })),
  edSignature: Type.Optional(Type.String({ maxLength: 128, description: "Sparkle's EdDSA signature, base64 of 64 bytes." })),
});
const ArtifactParams = Type.Object({ slug: Slug, id: Id(), artifactId: Id() });

/** DESIGN.md 20's management side: releases, their artifacts, publishing. */
export const releaseRoutes =
  (keyring: Keyring, stores: ArtifactStores, limits: ReleaseLimits): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/products/:id/releases',
      {
        config: { access: 'releases:write' },
        schema: { summary: 'Create a draft release', tags, params: IdParams, body: CreateBody, response: responses({ 201: Release }, [409]) },
      },
      async (request, reply) => reply.code(201).send(await createRelease(request.ctx, request.params.id, request.body)),
    );
    app.get(
      '/products/:id/releases',
      {
        config: { access: 'releases:read' },
        schema: {
          summary: "A product's releases, highest SemVer precedence first",
          tags,
          params: IdParams,
          querystring: ListQuery,
          response: responses({ 200: Type.Array(Release) }),
        },
      },
      async (request) => listReleases(request.ctx, request.params.id, request.query),
    );
    app.get(
      '/releases/:id',
      {
        config: { access: 'releases:read' },
        schema: { summary: 'One release with its artifacts', tags, params: IdParams, response: responses({ 200: Release }) },
      },
      async (request) => getRelease(request.ctx, request.params.id),
    );
    app.put(
      '/releases/:id',
      {
        config: { access: 'releases:write' },
        schema: {
          summary: 'Change notes, requires, bundleVersion (any status) or channel (DRAFT)',
          tags,
          params: IdParams,
          body: UpdateBody,
          response: responses({ 200: Release }, [409]),
        },
      },
      async (request) => updateRelease(request.ctx, request.params.id, request.body),
    );
    app.delete(
      '/releases/:id',
      {
        config: { access: 'releases:write' },
        schema: { summary: 'Delete a draft release and its files', tags, params: IdParams, response: responses({ 204: NoContent }, [409]) },
      },
      async (request, reply) => {
        await deleteRelease(request.ctx, stores, request.params.id);
        return reply.code(204).send();
      },
    );
    app.post(
      '/releases/:id/publish',
      {
        config: { access: 'releases:write' },
        schema: {
          summary: 'Publish a draft: sign its manifest',
          description: 'DRAFT → PUBLISHED; 409 "no artifact" without a file; `publishedAt` may be an earlier time (a backdate, audited).',
          tags,
          params: IdParams,
          body: PublishBody,
          response: responses({ 200: Release }, [409, 503]),
        },
      },
      async (request) => publishRelease(request.ctx, keyring, request.params.id, request.body ?? {}),
    );
    app.post(
      '/releases/:id/yank',
      {
        config: { access: 'releases:write' },
        schema: { summary: 'Withdraw a published release from licences', tags, params: IdParams, body: YankBody, response: responses({ 200: Release }, [409]) },
      },
      async (request) => yankRelease(request.ctx, request.params.id, request.body ?? {}),
    );
    app.post(
      '/releases/:id/unyank',
      {
        config: { access: 'releases:write' },
        schema: { summary: 'Offer a yanked release again', tags, params: IdParams, response: responses({ 200: Release }, [409]) },
      },
      async (request) => unyankRelease(request.ctx, request.params.id),
    );
    app.delete(
      '/releases/:id/artifacts/:artifactId',
      {
        config: { access: 'releases:write' },
        schema: { summary: 'Delete a file of a draft release', tags, params: ArtifactParams, response: responses({ 204: NoContent }, [409]) },
      },
      async (request, reply) => {
        await deleteArtifact(request.ctx, stores, request.params.id, request.params.artifactId);
        return reply.code(204).send();
      },
    );
    app.get(
      '/releases/:id/artifacts/:artifactId/download',
      {
        config: { access: 'releases:read' },
        schema: {
          summary: "Download a release's file (never counted)",
          description:
            'Answered as the licensed downloads are (DESIGN 20): Range and multi-range 206, 416, ETag and HEAD from disk; 303 to a presigned URL on S3.',
          tags,
          params: ArtifactParams,
          response: responses({ 200: Type.Unknown({ description: 'The file.' }) }, [416, 503]),
        },
      },
      async (request, reply) => {
        const artifact = await findArtifact(request.ctx, request.params.id, request.params.artifactId);
        await deliver(reply, stores.of(artifact.backend), artifact, { method: request.method, range: request.headers.range }, 300);
        return reply;
      },
    );

    // The upload: the raw body handed over as a stream, never parsed or buffered, so no body limit applies.
    const uploads: FastifyPluginAsyncTypebox = async (upload) => {
      upload.removeAllContentTypeParsers();
      upload.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
      upload.post(
        '/releases/:id/artifacts',
        {
          config: { access: 'releases:write' },
          schema: {
            summary: 'Upload a file to a draft release (the raw body)',
            description:
              'Any media type, Content-Length or chunked. Refused before the body is read: 404, 400 (query), 409 (not DRAFT, name taken, 100 already), 413 by Content-Length against the size bound and the quota; while streaming: 413 on crossing either, 400 when empty. A refused or broken upload leaves nothing.',
            tags,
            params: IdParams,
            querystring: UploadQuery,
            response: responses({ 201: Artifact }, [409, 413, 503]),
          },
        },
        async (request, reply) => {
          try {
            const artifact = await uploadArtifact(
              request.ctx,
              stores.current,
              limits,
              request.params.id,
              request.query,
              { contentLength: request.headers['content-length'], contentType: request.headers['content-type'] },
              request.body as NodeJS.ReadableStream,
            );
            return reply.code(201).send(artifact);
          } catch (err) {
            // A refusal before the body is read leaves bytes on the connection: it is not reused.
            if (!request.raw.readableEnded) reply.header('connection', 'close');
            throw err;
          }
        },
      );
    };
    await app.register(uploads);
  };
