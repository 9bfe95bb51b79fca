import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { responses } from '../core/schemas.js';
import type { Asked, CheckGate, CheckRoute } from './gate.js';
import { BorrowBody, CheckAnswer, CheckBody, CheckParams, FetchAnswer, FetchBody, ReleaseAnswer, ReleaseBody } from './schemas.js';
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
export function checkRoutes(gates: Record<CheckRoute, CheckGate>): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.decorateRequest('checkScope', null as unknown as CheckScope);
    const checks = fastifyGate(gates.check);
    const fetches = fastifyGate(gates.fetch);
    const releases = fastifyGate(gates.release);
    const borrows = fastifyGate(gates.borrow);
    const security = 'Authorization: Bearer `svcc_<checkId>_<secret>` (the product’s check token) and Content-Type: application/json.';

    app.post(
      '/public/license/:checkId/check',
      {
        config: { access: 'check' },
        onRequest: checks.onRequest,
        schema: {
          summary: 'Check a licence',
          description: `${security} Every verdict about a correctly signed licence is a 200 whose receipt carries it; refusals come in the order 404 (organisation), 429 (address), 401, 429 (product), 403 (inactive product), 415, 400.`,
          tags,
          params: CheckParams,
          body: CheckBody,
          response: responses({ 200: CheckAnswer }, [415, 429, 503]),
        },
      },
      async (request) => checks.serve(request) as Promise<Static<typeof CheckAnswer>>,
    );

    app.post(
      '/public/license/:checkId/fetch',
      {
        config: { access: 'check' },
        onRequest: fetches.onRequest,
        schema: {
          summary: 'Fetch the current licence string',
          description: `${security} For a machine bound to the licence (fetch never binds: check first); 404 unless the product enables licence fetch.`,
          tags,
          params: CheckParams,
          body: FetchBody,
          response: responses({ 200: FetchAnswer }, [415, 429]),
        },
      },
      async (request) => fetches.serve(request) as Promise<Static<typeof FetchAnswer>>,
    );

    app.post(
      '/public/license/:checkId/release',
      {
        config: { access: 'check' },
        onRequest: releases.onRequest,
        schema: {
          summary: 'Release this machine’s own seat',
          description: `${security} DESIGN.md 12: frees the live seat whose recorded fingerprint equals this one exactly, so the licence can be used on another machine. Refusals come in the order of a check; past the product's \`selfReleaseLimit\` in 30 days, 403 "self-service release limit reached". On a floating licence it ends this machine's lease at once and never counts towards the limit, except a borrowed lease (\`BORROWED\`).`,
          tags,
          params: CheckParams,
          body: ReleaseBody,
          response: responses({ 200: ReleaseAnswer }, [415, 429]),
        },
      },
      async (request) => releases.serve(request) as Promise<Static<typeof ReleaseAnswer>>,
    );

    app.post(
      '/public/license/:checkId/borrow',
      {
        config: { access: 'check' },
        onRequest: borrows.onRequest,
        schema: {
          summary: 'Borrow this machine’s lease',
          description: `${security} DESIGN.md 13: a machine holding a live lease of a floating licence keeps it until \`until\` (at most the licence's \`brw\` seconds ahead: 400 beyond; 403 "borrowing is off" when 0), to work offline. 403 "no live lease on this machine: check first" without one; 403 "all borrowable seats are borrowed" past the product's \`maxBorrowedSeats\`. Answers like a check, with \`leaseEndsAt\` the borrowed end.`,
          tags,
          params: CheckParams,
          body: BorrowBody,
          response: responses({ 200: CheckAnswer }, [415, 429]),
        },
      },
      async (request) => borrows.serve(request) as Promise<Static<typeof CheckAnswer>>,
    );
  };
}
