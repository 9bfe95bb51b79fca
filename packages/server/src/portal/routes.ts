import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { AirGapRealm } from '../air-gap/routes.js';
import type { Database } from '../db/database.js';
import type { DownloadDeps } from '../downloads/service.js';
import { Id, NoContent, NullableTimestamp, responses, Slug, Timestamp } from '../core/schemas.js';
import { LicFile, sendLic } from '../licences/routes.js';
import {
  createPortalLink,
  endPortalSession,
  listPortalLinks,
  openPortalSession,
  PORTAL_COOKIE,
  PORTAL_SESSION_MS,
  ownLicence,
  portalDownload,
  portalIdentity,
  portalLicence,
  portalLicences,
  portalRelease,
  portalArtifactGrant,
  portalLicenceReleases,
  portalResetDownloadLinks,
  revokePortalLink,
} from './service.js';

const tags = ['Customer portal'];
const CustomerParams = Type.Object({ slug: Slug, id: Id() });
const LinkParams = Type.Object({ slug: Slug, id: Id(), linkId: Id() });
const PortalLidParams = Type.Object({ slug: Slug, lid: Type.String({ maxLength: 64 }) });

const PortalLink = Type.Object({
  id: Type.Integer(),
  createdAt: Timestamp,
  createdBy: Type.String(),
  expiresAt: Timestamp,
  usedAt: NullableTimestamp,
  revokedAt: NullableTimestamp,
});
const PortalLicenceItem = Type.Object({
  lid: Type.String(),
  productName: Type.String(),
  licenceType: Type.String(),
  status: Type.String(),
  startsAt: NullableTimestamp,
  expiresAt: NullableTimestamp,
  graceEndsAt: NullableTimestamp,
  maxMachines: Type.Integer(),
  seatsUsed: Type.Integer(),
});
const PortalLicence = Type.Object({
  ...PortalLicenceItem.properties,
  airGapActivation: Type.Boolean({
    description:
      'Whether this licence can be activated on an air-gapped computer: its product allows it (DESIGN.md 14) and it is neither OFFLINE nor floating.',
  }),
  feedGeneration: Type.Integer({ minimum: 1, description: 'DESIGN.md 20: raised by `Reset download links`.' }),
  updatesUntil: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: "DESIGN.md 20: releases published until then are covered (the window's end, else the grace end); null = every release.",
  }),
  releasesLeft: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Self-service releases this licence has left in the current 30 days; null = no limit.',
  }),
  usage: Type.Array(
    Type.Object({
      key: Type.String(),
      label: Type.String(),
      period: Type.Enum(['NONE', 'DAY', 'MONTH', 'YEAR']),
      used: Type.Integer(),
      limit: Type.Union([Type.Integer(), Type.Null()]),
      overage: Type.Union([Type.Integer(), Type.Null()]),
      remaining: Type.Union([Type.Integer(), Type.Null()]),
      periodStart: NullableTimestamp,
      resetsAt: NullableTimestamp,
    }),
    { description: "DESIGN.md 19: each of the licence's meters this period (used, limit, when it resets); [] without meters." },
  ),
  machines: Type.Array(
    Type.Object({
      id: Type.Integer(),
      boundAt: Timestamp,
      releasedAt: NullableTimestamp,
      live: Type.Boolean(),
      atIssue: Type.Boolean(),
      airGapped: Type.Boolean(),
      until: NullableTimestamp,
    }),
  ),
});
const DOWNLOAD_REASONS = ['REVOKED', 'NOT_YET_VALID', 'EXPIRED', 'NOT_ENTITLED', 'UPDATES_EXPIRED'];
const PortalRelease = Type.Object({
  id: Type.Integer(),
  version: Type.String(),
  channel: Type.String(),
  publishedAt: Timestamp,
  notes: Type.String({ description: 'Markdown: render it with raw HTML off.' }),
  covered: Type.Boolean({ description: 'Whether this licence may download the release now.' }),
  reason: Type.Union([Type.Enum(DOWNLOAD_REASONS), Type.Null()], { description: 'Why not, when not covered.' }),
  artifacts: Type.Array(
    Type.Object({ id: Type.Integer(), filename: Type.String(), platform: Type.String(), arch: Type.String(), size: Type.Integer(), sha256: Type.String() }),
  ),
});
const PortalIdentity = Type.Object({ customer: Type.Object({ name: Type.String() }), organisation: Type.Object({ name: Type.String() }) });

/** The portal's realm of the air-gap routes (DESIGN.md 14): the customer, on their own licences only. */
export function portalAirGap(database: Database): AirGapRealm {
  return {
    prefix: '/portal/licenses',
    access: 'portal',
    tags: ['Customer portal'],
    summaries: { activate: 'Activate one of the customer’s air-gapped computers', deactivate: 'Deactivate one of the customer’s air-gapped computers' },
    force: false,
    caller: async (request, lid) => {
      const now = Date.now();
      await ownLicence(request.portal, lid, now);
      return { database, tenant: request.portal.tenant, actor: { name: request.portal.actor }, now };
    },
  };
}

/** DESIGN.md 12: the operator's portal links and the customer's portal API. */
export function portalRoutes(database: Database, config: Config, downloads: DownloadDeps): FastifyPluginAsyncTypebox {
  const secure = config.publicUrl.startsWith('https:');
  return async (app) => {
    app.post(
      '/customers/:id/portal-links',
      {
        config: { access: 'licenses:write' },
        schema: {
          summary: 'Create a portal link for a customer',
          description: 'Single-use, valid 24 hours; the URL is shown once (only the code’s SHA-256 is stored).',
          tags,
          params: CustomerParams,
          response: responses({ 201: Type.Object({ url: Type.String(), expiresAt: Timestamp }) }),
        },
      },
      async (request, reply) => reply.code(201).send(await createPortalLink(request.ctx, config.publicUrl, request.params.id)),
    );

    app.get(
      '/customers/:id/portal-links',
      {
        config: { access: 'licenses:read' },
        schema: { summary: "A customer's portal links (never the code)", tags, params: CustomerParams, response: responses({ 200: Type.Array(PortalLink) }) },
      },
      async (request) => listPortalLinks(request.ctx, request.params.id),
    );

    app.delete(
      '/customers/:id/portal-links/:linkId',
      {
        config: { access: 'licenses:write' },
        schema: { summary: 'Revoke a portal link and end the sessions it opened', tags, params: LinkParams, response: responses({ 204: NoContent }) },
      },
      async (request, reply) => {
        await revokePortalLink(request.ctx, request.params.id, request.params.linkId);
        return reply.code(204).send();
      },
    );

    app.post(
      '/portal/session',
      {
        config: { access: 'public' },
        schema: {
          summary: 'Open the portal with a link’s code (uses the link up)',
          description: `Sets the \`${PORTAL_COOKIE}\` cookie for 8 hours. An unknown, used, expired or revoked code: the same 401.`,
          tags,
          body: Type.Object({ code: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false }),
          response: responses({ 200: PortalIdentity }),
        },
      },
      async (request, reply) => {
        const opened = await openPortalSession(database, request.org, request.body.code, Date.now());
        reply.setCookie(PORTAL_COOKIE, opened.cookieValue, {
          path: `/o/${request.org.slug}/`,
          httpOnly: true,
          sameSite: 'strict',
          secure,
          maxAge: PORTAL_SESSION_MS / 1000,
        });
        return { customer: opened.customer, organisation: opened.organisation };
      },
    );

    app.get(
      '/portal/me',
      { config: { access: 'portal' }, schema: { summary: 'Whose portal this is', tags, response: responses({ 200: PortalIdentity }) } },
      async (request) => portalIdentity(request.portal, request.org),
    );

    app.post(
      '/portal/auth/logout',
      { config: { access: 'portal' }, schema: { summary: 'End the portal session', tags, response: responses({ 204: NoContent }) } },
      async (request, reply) => {
        await endPortalSession(request.portal);
        reply.clearCookie(PORTAL_COOKIE, { path: `/o/${request.org.slug}/` });
        return reply.code(204).send();
      },
    );

    app.get(
      '/portal/licenses',
      {
        config: { access: 'portal' },
        schema: { summary: "The customer's licences that are not archived", tags, response: responses({ 200: Type.Array(PortalLicenceItem) }) },
      },
      async (request) => portalLicences(request.portal, Date.now()),
    );

    app.get(
      '/portal/licenses/:lid',
      {
        config: { access: 'portal' },
        schema: { summary: 'One of the customer’s licences, with its machines', tags, params: PortalLidParams, response: responses({ 200: PortalLicence }) },
      },
      async (request) => portalLicence(request.portal, request.params.lid, Date.now()),
    );

    app.get(
      '/portal/licenses/:lid/download',
      { config: { access: 'portal' }, schema: { summary: 'The .lic file', tags, params: PortalLidParams, response: responses({ 200: LicFile }) } },
      async (request, reply) => sendLic(reply, request.params.lid, await portalDownload(request.portal, request.params.lid, Date.now())),
    );

    app.post(
      '/portal/licenses/:lid/release',
      {
        config: { access: 'portal' },
        schema: {
          summary: 'Free one of the customer’s machines',
          description: 'Within the product’s `selfReleaseLimit` in 30 days (403 past it); a machine named in the licence itself cannot be released.',
          tags,
          params: PortalLidParams,
          body: Type.Object({ machineId: Id() }, { additionalProperties: false }),
          response: responses({ 200: PortalLicence }),
        },
      },
      async (request) => portalRelease(database, request.portal, request.params.lid, request.body.machineId, Date.now()),
    );

    app.get(
      '/portal/licenses/:lid/releases',
      {
        config: { access: 'portal' },
        schema: {
          summary: "The releases of the licence's product",
          description: 'DESIGN.md 20: the 20 highest PUBLISHED, each `covered` or with the `reason` it is not. Another customer’s licence: 404.',
          tags,
          params: PortalLidParams,
          response: responses({ 200: Type.Array(PortalRelease) }),
        },
      },
      async (request) => portalLicenceReleases(request.portal, request.params.lid, Date.now()),
    );

    app.post(
      '/portal/licenses/:lid/downloads',
      {
        config: { access: 'portal' },
        schema: {
          summary: 'A download link for one of the licence’s files',
          description:
            'DESIGN.md 20: 403 `{error, reason}` `REVOKED`, `NOT_YET_VALID`, `EXPIRED` (a trial past its end); 404 for a file of another product or of a release that is not PUBLISHED; 403 `NOT_ENTITLED`, `UPDATES_EXPIRED`. The `url` needs no credential until `expiresAt`.',
          tags,
          params: PortalLidParams,
          body: Type.Object({ artifactId: Id() }, { additionalProperties: false }),
          response: responses({ 200: Type.Object({ url: Type.String(), expiresAt: Timestamp }) }),
        },
      },
      async (request) => portalArtifactGrant(downloads, request.org, request.portal, request.params.lid, request.body.artifactId, Date.now()),
    );

    app.post(
      '/portal/licenses/:lid/reset-download-links',
      {
        config: { access: 'portal' },
        schema: {
          summary: "Reset the licence's download links",
          description:
            'DESIGN.md 20: every feed URL made before answers 403 at once (the applications ask for new ones); audited `licence.download_links_reset`. Another customer’s licence: 404.',
          tags,
          params: PortalLidParams,
          response: responses({ 200: PortalLicence }),
        },
      },
      async (request) => portalResetDownloadLinks(database, request.org, request.portal, request.params.lid, Date.now()),
    );
  };
}
