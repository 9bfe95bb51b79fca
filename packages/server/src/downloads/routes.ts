import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Slug } from '../core/schemas.js';
import { Licence } from '../listings/schemas.js';
import {
  admitPathRequest,
  electronFeed,
  latestFeed,
  resetDownloadLinks,
  serveFeedFile,
  serveGrant,
  sparkleFeed,
  tauriFeed,
  type DownloadDeps,
  type PathRequest,
} from './service.js';

const tags = ['Downloads and feeds'];

// Long enough that an over-long token reaches its 403 (tokens.ts refuses past 512) rather than a 400.
const Token = Type.String({ maxLength: 2048, description: 'The path token: a download grant `SVCG1.…` or a feed token `SVCF1.…` (docs/protocol.md).' });
const Filename = Type.String({ maxLength: 1024 });
const GrantParams = Type.Object({ slug: Slug, grant: Token, filename: Filename });
const FeedParams = Type.Object({ slug: Slug, token: Token });
const FileParams = Type.Object({ ...FeedParams.properties, version: Type.String({ maxLength: 128 }), filename: Filename });
const ElectronParams = Type.Object({
  ...FeedParams.properties,
  name: Type.String({
    maxLength: 128,
    description: '`{C}.yml`, `{C}-mac.yml`, `{C}-linux.yml`, `{C}-linux-{arm64|arm|ia32|riscv64}.yml`; C a channel or `latest` (stable).',
  }),
});
const TauriParams = Type.Object({
  ...FeedParams.properties,
  target: Type.String({ maxLength: 32, description: 'linux|windows|darwin' }),
  arch: Type.String({ maxLength: 32, description: 'x86_64|i686|aarch64|armv7|riscv64' }),
  currentVersion: Type.String({ maxLength: 128, description: 'SemVer.' }),
});
const Channel = Type.Optional(
  Type.String({ maxLength: 32, description: 'stable (default), rc, beta, alpha or dev: the feed offers this channel and those before it.' }),
);
// electron-updater and download clients may add a cache-busting query (`noCache=`): the file and YAML routes ignore what they do not read.
const AnyQuery = Type.Object({}, { additionalProperties: true });
const ChannelQuery = Type.Object({ channel: Channel }, { additionalProperties: false });
const TauriQuery = Type.Object(
  { bundle_type: Type.Optional(Type.String({ maxLength: 32, description: 'appimage|deb|rpm|app|msi|nsis' })), channel: Channel },
  { additionalProperties: false },
);
const LatestQuery = Type.Object(
  {
    platform: Type.Optional(Type.String({ maxLength: 32, description: 'Required: linux|darwin|windows|any.' })),
    arch: Type.Optional(Type.String({ maxLength: 32, description: 'Required: x86_64|aarch64|i686|armv7|riscv64|universal|any.' })),
    version: Type.Optional(Type.String({ maxLength: 128, description: 'The running version (SemVer): only releases above it are offered.' })),
    channel: Channel,
  },
  { additionalProperties: false },
);
const LidParams = Type.Object({ slug: Slug, lid: Type.String({ maxLength: 64 }) });

const PATH_TOKEN =
  'DESIGN.md 20, path tokens: no credential header. Refusals: 429 with Retry-After (the per-address check limit, which these requests count towards); 403 `{error}` for a token that does not verify, or a grant past its end, before any lookup; 404 for an unknown organisation or another organisation’s path; 403 for an inactive product.';
const FEED =
  'Then 403 `{error}` for a feed URL reset since (`reset-download-links`) and 403 `{error, reason}` `REVOKED`, `NOT_YET_VALID`, `EXPIRED` (a trial past its end), `NO_SEAT` (the seat the token was made for is not live). Only covered PUBLISHED releases are offered. `Cache-Control: no-store`.';
const File = Type.Unknown({ description: 'The file (206 for a Range, multipart/byteranges for several; 303 to the store on S3).' });

/** DESIGN.md 20's path-token routes (grant and feed GETs and HEADs) and the operator's reset of a licence's download links. */
export const downloadRoutes =
  (deps: DownloadDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const pathRequest = (request: FastifyRequest, token: string): PathRequest => ({
      slug: (request.params as { slug: string }).slug,
      token,
      method: request.method,
      range: request.headers.range,
    });
    // Delivery answers HEAD itself (its headers without a body): a file's HEAD is a route of its own, not
    // Fastify's HEAD of the GET (which answers Content-Length: 0), and left out of the document as HEADs are.
    // Before the token is read, and before the parameters' validation: a request refused anything else still counts.
    const admit = { onRequest: async (request: FastifyRequest) => admitPathRequest(deps, request.ip) };

    for (const method of ['GET', 'HEAD'] as const)
      app.route({
        method,
        url: '/public/downloads/:grant/:filename',
        exposeHeadRoute: false,
        config: { access: 'path-token' },
        ...admit,
        schema: {
          summary: 'Download an artifact with a grant',
          description: `${PATH_TOKEN} Then 404 for another filename or a release no longer PUBLISHED, 403 \`REVOKED\` for a licence revoked since. Delivery: Content-Length, the artifact's Content-Type, attachment disposition, Accept-Ranges, ETag; Range 206, 416; HEAD.`,
          tags,
          params: GrantParams,
          querystring: AnyQuery,
          response: responses({ 200: File }, [416, 429, 503]),
        },
        handler: async (request, reply) => serveGrant(deps, reply, pathRequest(request, request.params.grant), request.params.filename),
      });
    for (const method of ['GET', 'HEAD'] as const)
      app.route({
        method,
        url: '/public/feeds/:token/files/:version/:filename',
        exposeHeadRoute: false,
        config: { access: 'path-token' },
        ...admit,
        schema: {
          summary: 'Download an artifact a feed links',
          description: `${PATH_TOKEN} ${FEED} 404 for a release that is not PUBLISHED or a file it does not have; 403 \`NOT_ENTITLED\` or \`UPDATES_EXPIRED\` for one not covered. Delivered as a grant's download is.`,
          tags,
          params: FileParams,
          querystring: AnyQuery,
          response: responses({ 200: File }, [416, 429, 503]),
        },
        handler: async (request, reply) =>
          serveFeedFile(deps, reply, pathRequest(request, request.params.token), request.params.version, request.params.filename),
      });
    app.get(
      '/public/feeds/:token/electron/:name',
      {
        config: { access: 'path-token' },
        ...admit,
        schema: {
          summary: "electron-updater's latest*.yml",
          description: `${PATH_TOKEN} ${FEED} \`text/yaml\`: the highest covered release of channel C with matching files (not \`.blockmap\` or \`.sig\`), else 404; its lines exactly as docs/protocol.md writes them.`,
          tags,
          params: ElectronParams,
          querystring: AnyQuery,
          response: responses({ 200: Type.String({ description: 'text/yaml' }) }, [429]),
        },
      },
      async (request, reply) => reply.type('text/yaml').send(await electronFeed(deps, pathRequest(request, request.params.token), request.params.name)),
    );
    app.get(
      '/public/feeds/:token/tauri/:target/:arch/:currentVersion',
      {
        config: { access: 'path-token' },
        ...admit,
        schema: {
          summary: "Tauri v2's dynamic update endpoint",
          description: `${PATH_TOKEN} ${FEED} 400 for another target, arch, a current version that is not SemVer or another bundle_type; 200 \`{version, notes, pub_date, url, signature}\` for the highest covered release above it with a signed candidate, else 204.`,
          tags,
          params: TauriParams,
          querystring: TauriQuery,
          response: responses(
            {
              200: Type.Object({ version: Type.String(), notes: Type.String(), pub_date: Type.String(), url: Type.String(), signature: Type.String() }),
              204: Type.Null({ description: 'No update.' }),
            },
            [429],
          ),
        },
      },
      async (request, reply) => {
        const update = await tauriFeed(deps, pathRequest(request, request.params.token), {
          target: request.params.target,
          arch: request.params.arch,
          currentVersion: request.params.currentVersion,
          bundleType: request.query.bundle_type,
          channel: request.query.channel,
        });
        return update === null ? reply.code(204).send() : reply.type('application/json; charset=utf-8').send(JSON.stringify(update));
      },
    );
    app.get(
      '/public/feeds/:token/sparkle/appcast.xml',
      {
        config: { access: 'path-token' },
        ...admit,
        schema: {
          summary: "Sparkle 2's appcast",
          description: `${PATH_TOKEN} ${FEED} \`application/rss+xml\`: an item per release of the 20 highest covered ones with a darwin or \`any\` archive.`,
          tags,
          params: FeedParams,
          querystring: ChannelQuery,
          response: responses({ 200: Type.String({ description: 'application/rss+xml' }) }, [429]),
        },
      },
      async (request, reply) =>
        reply.type('application/rss+xml').send(await sparkleFeed(deps, pathRequest(request, request.params.token), request.query.channel)),
    );
    app.get(
      '/public/feeds/:token/latest.json',
      {
        config: { access: 'path-token' },
        ...admit,
        schema: {
          summary: 'The SDKs’ update feed',
          description: `${PATH_TOKEN} ${FEED} 400 without platform and arch or for a version that is not SemVer. \`update\`: the highest covered release above \`version\` with matching artifacts, or null; \`blocked\`: the highest above both that the licence may not download (\`UPDATES_EXPIRED\`, \`NOT_ENTITLED\`), or null.`,
          tags,
          params: FeedParams,
          querystring: LatestQuery,
          response: responses({ 200: Type.Object({ update: Type.Unknown(), blocked: Type.Unknown() }) }, [429]),
        },
      },
      async (request, reply) =>
        reply.type('application/json; charset=utf-8').send(await latestFeed(deps, pathRequest(request, request.params.token), request.query)),
    );

    app.post(
      '/licenses/:lid/reset-download-links',
      {
        config: { access: 'licenses:write' },
        schema: {
          summary: "Reset a licence's download links",
          description:
            'Raises the licence’s `feedGeneration`: every feed URL made before answers 403 at once (applications ask for new ones); download grants run out by themselves (at most an hour). Audited `licence.download_links_reset`.',
          tags: ['Licences'],
          params: LidParams,
          response: responses({ 200: Licence }),
        },
      },
      async (request) => resetDownloadLinks(request.ctx, request.params.lid),
    );
  };
