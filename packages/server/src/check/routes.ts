import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../core/schemas.js';
import type { Asked, CheckGate, GateName } from './gate.js';
import { CHECK_ROUTES, CheckParams, DownloadBody, FeedTokenAnswer, FeedTokenBody, GrantAnswer, TrialAnswer, TrialBody, type CheckRoute } from './schemas.js';
import type { TrialAnswer as Answered } from './trial.js';
import type { CheckScope } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on the check API's routes once the gate admitted the request. */
    checkScope: CheckScope;
  }
}

const tags = ['Licence check'];

const asked = (request: FastifyRequest): Asked => ({
  org: request.org,
  checkId: (request.params as { checkId: string }).checkId,
  ip: request.ip,
  authorization: request.headers.authorization,
  contentType: request.headers['content-type'],
});

/**
 * A gate as Fastify's hooks run it: its refusals in onRequest, before the body is parsed, so a
 * wrong token with a non-JSON body is still a 401.
 */
function fastifyGate(gate: CheckGate) {
  return {
    onRequest: async (request: FastifyRequest) => {
      request.checkScope = await gate.admit(asked(request));
    },
    serve: (request: FastifyRequest) => gate.serve(asked(request), request.checkScope, request.body as never),
  };
}

/** The licence check API (SPEC 4.4, DESIGN.md 5): called by installed applications. */
export function checkRoutes(gates: Record<GateName, CheckGate>): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.decorateRequest('checkScope', null as unknown as CheckScope);
    const security = 'Authorization: Bearer `svcc_<checkId>_<secret>` (the product’s check token) and Content-Type: application/json.';
    for (const [route, { body, answer, summary, description, errors }] of Object.entries(CHECK_ROUTES) as Array<
      [CheckRoute, (typeof CHECK_ROUTES)[CheckRoute]]
    >) {
      const gate = fastifyGate(gates[route]);
      app.post(
        `/public/license/:checkId/${route}`,
        {
          config: { access: 'check' },
          onRequest: gate.onRequest,
          schema: { summary, description: `${security} ${description}`, tags, params: CheckParams, body, response: responses({ 200: answer }, [...errors]) },
        },
        async (request) => gate.serve(request),
      );
    }
    const trial = fastifyGate(gates.trial);
    app.post(
      '/public/license/:checkId/trial',
      {
        config: { access: 'check' },
        onRequest: trial.onRequest,
        schema: {
          summary: 'Start a trial on this machine',
          description: `${security} DESIGN.md 18: the check's refusals in its order (counting towards its rate limits), then 400 for a bad body or a fingerprint with fewer present components than the product's \`fingerprintNeed\`; then the first that applies: 200 with this machine's own trial (whatever became of it), 403 \`TRIALS_OFF\`, 403 \`TRIAL_USED\` with \`matched\`, 429 \`TRIAL_LIMIT\` with Retry-After, or 201 with a new trial. 200 and 201 answer the trial's current term as \`license\` with what a check of it with this fingerprint and nonce answers.`,
          tags,
          params: CheckParams,
          body: TrialBody,
          response: responses({ 200: TrialAnswer, 201: TrialAnswer }, [415, 429, 503]),
        },
      },
      async (request, reply) => {
        const { status, body } = (await trial.serve(request)) as Answered;
        return reply.code(status).send(body);
      },
    );
    const who =
      "DESIGN.md 20: the check's refusals in its order to its 400s (without the nonce rule: a field beyond these, `nonce` included, is a 400; OFFLINE licences accepted; ONLINE and HYBRID send `fingerprint`), then 403 `{error, reason}` with `UNKNOWN_LICENCE`, `REVOKED`, `NOT_YET_VALID`, `EXPIRED` (a trial past its end) or `NO_SEAT` (this machine holds no live seat: check first).";
    const download = fastifyGate(gates.download);
    app.post(
      '/public/license/:checkId/download',
      {
        config: { access: 'check' },
        onRequest: download.onRequest,
        schema: {
          summary: 'A download link for one artifact',
          description: `${security} ${who} Then 404 for an artifact of another product or of a release that is not PUBLISHED, 403 \`NOT_ENTITLED\` (the release's \`requires\` is not met by the current term), 403 \`UPDATES_EXPIRED\` (published after \`updatesUntil\`). The \`url\` works without a credential until \`expiresAt\` (LICENSOR_DOWNLOAD_GRANT_SECONDS).`,
          tags,
          params: CheckParams,
          body: DownloadBody,
          response: responses({ 200: GrantAnswer }, [415, 429]),
        },
      },
      async (request) => download.serve(request),
    );
    const feedToken = fastifyGate(gates['feed-token']);
    app.post(
      '/public/license/:checkId/feed-token',
      {
        config: { access: 'check' },
        onRequest: feedToken.onRequest,
        schema: {
          summary: "The licence's feed URLs for this machine",
          description: `${security} ${who} The same token until a reset (\`reset-download-links\`) or a new seat; the URLs are secrets, for electron-updater, Tauri, Sparkle and the SDKs.`,
          tags,
          params: CheckParams,
          body: FeedTokenBody,
          response: responses({ 200: FeedTokenAnswer }, [415, 429]),
        },
      },
      async (request) => feedToken.serve(request),
    );
  };
}
