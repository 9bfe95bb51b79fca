import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { digestsEqual, sha256Hex } from '../auth/secrets.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { ApiError, forbidden, notFound, tooManyRequests, unauthorized } from '../http/errors.js';
import { responses, Slug, Timestamp } from '../http/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import type { OrganisationCache } from '../orgs/repo.js';
import type { CheckWrites } from './counters.js';
import { CheckProductCache, StaleProduct, type CheckProduct } from './product-cache.js';
import type { RateLimiter } from './rate-limit.js';
import { borrowLease, fetchLicence, releaseOwnSeat } from './own-seat.js';
import { checkLicence, type CheckScope } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on the check and fetch routes once the check token has verified. */
    checkScope: CheckScope;
  }
}

const tags = ['Licence check'];
const CHECK_TOKEN = /^Bearer svcc_([a-z0-9]{12,32})_([0-9a-f]{64})$/;

const CheckParams = Type.Object({ slug: Slug, checkId: Type.String({ maxLength: 64 }) });
const licenceText = (description: string) => Type.String({ minLength: 1, maxLength: 100_000, description });
const Fingerprint = Type.String({ maxLength: 512, description: "The machine's fingerprint, `SVC1.<hashed parts>.<checksum>`." });
// Fields beyond these are ignored, so clients may send more without breaking older services.
const CheckBody = Type.Object({
  license: licenceText('The complete signed licence string.'),
  fingerprint: Fingerprint,
  nonce: Type.String({ maxLength: 128, pattern: '^[A-Za-z0-9_-]{16,128}$', description: 'Fresh per request: 16 to 128 URL-safe characters.' }),
  machineLabel: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^\\P{C}+$',
      description: 'Optional: a name for this machine that its user agreed to share (1 to 64 printable characters); shown to the operator beside the seat.',
    }),
  ),
});
const FetchBody = Type.Object({
  license: licenceText('A licence string of this licence: the current term or a superseded one.'),
  fingerprint: Fingerprint,
});

const CheckAnswer = Type.Object({
  status: Type.Optional(
    Type.Enum(['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'], {
      description: 'Signed. Omitted for UNKNOWN_LICENCE; for SUPERSEDED, the presented term’s own calendar status.',
    }),
  ),
  valid: Type.Boolean({ description: 'Not signed: true exactly when the signed status is ACTIVE or GRACE and boundAt is present (except SUPERSEDED, always false).' }),
  lid: Type.String(),
  boundAt: Type.Optional(Type.String({ format: 'date-time', description: "Signed. When this machine's seat was bound; omitted when it holds none." })),
  checkedAt: Type.String({ format: 'date-time', description: 'Signed; equals serverTime.' }),
  serverTime: Timestamp,
  nonce: Type.String({ description: 'The nonce sent (signed).' }),
  leaseEndsAt: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Signed (SVCR2). A floating licence: when this machine\'s lease ends unless renewed; omitted when it holds none or the status is not ACTIVE or GRACE.',
    }),
  ),
  receipt: Type.String({
    description:
      'Base64url signature, with the key that signed the presented licence, over `SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest` (␟ = 0x1F; absent fields empty) for a presented term of `v` 3 or 4, or over `SVCR2␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest␟leaseEndsAt` for `v` 5 (a floating licence).',
  }),
  expiresAt: Type.Optional(Timestamp),
  graceEndsAt: Type.Optional(Timestamp),
  revokedAt: Type.Optional(Timestamp),
  revokedReason: Type.Optional(Type.String()),
  renewed: Type.Optional(Type.Boolean({ description: 'The presented term was renewed: fetch the current one.' })),
  checkEverySeconds: Type.Optional(Type.Integer()),
  checkMaxSeconds: Type.Optional(Type.Integer()),
  retryAfterSeconds: Type.Optional(Type.Integer({ description: 'SEATS_FULL on a floating licence: whole seconds until the earliest lease ends.' })),
  reason: Type.Optional(
    Type.Enum(['UNKNOWN_LICENCE', 'REVOKED', 'SUPERSEDED', 'NOT_YET_VALID', 'EXPIRED', 'FINGERPRINT_MISMATCH', 'SEATS_FULL'], {
      description: 'Why valid is false: the first that applies, in this order.',
    }),
  ),
});
const ReleaseBody = Type.Object({ license: CheckBody.properties.license, fingerprint: Fingerprint, nonce: CheckBody.properties.nonce });
const ReleaseAnswer = Type.Object({
  lid: Type.String(),
  released: Type.Boolean(),
  releasedAt: Type.Optional(Timestamp),
  nonce: Type.String({ description: 'The nonce sent.' }),
  reason: Type.Optional(
    Type.Enum(['NO_SEAT', 'AT_ISSUE', 'UNKNOWN_LICENCE', 'BORROWED'], {
      description:
        'Why nothing was released: this machine holds no seat (an exact fingerprint match is needed), its seat is in the signature, the licence is unknown, or (floating) its lease is borrowed until a later time, which only an operator ends sooner. These never count towards the limit.',
    }),
  ),
});
const BorrowBody = Type.Object({
  ...ReleaseBody.properties,
  until: Type.String({ maxLength: 64, description: 'ISO 8601 time: keep the lease until then (at most maxBorrowSeconds ahead).' }),
});
const FetchAnswer = Type.Object({ license: Type.String({ description: 'The current signed licence string.' }) });

const isJson = (contentType: string | undefined) => contentType?.split(';')[0]!.trim().toLowerCase() === 'application/json';

interface Gate {
  database: Database;
  config: Pick<Config, 'checkRateAddress' | 'checkRateProduct'>;
  products: CheckProductCache;
  limiter: RateLimiter;
  organisations: OrganisationCache;
  writes: CheckWrites;
}

type Route = 'check' | 'fetch' | 'release' | 'borrow';

/**
 * The refusals of DESIGN.md 5 that come before the body, in their order. They run in
 * onRequest, before the body is parsed, so a wrong token with a non-JSON body is still a 401.
 * The product comes from the cache; `judged` runs the route's work, and when that work finds the
 * product changed, judges the request again on the product read afresh and runs it once more.
 */
function gate({ database, config, products, limiter, organisations, writes }: Gate, route: Route) {
  /** The product, on the organisation as it is now: a cached one whose slug leads elsewhere is read again (404 if gone). */
  const productOf = async (request: FastifyRequest, checkId: string, fresh: boolean) => {
    const { slug } = request.org;
    let t = tenant(database.db, request.org.id);
    let product = await products.find(t, checkId, slug, fresh);
    if (!product) {
      organisations.forget(slug);
      const org = await organisations.find(database.db, slug);
      if (!org) throw notFound(`no organisation "${slug}"`);
      if (org.id !== request.org.id) {
        request.org = org;
        t = tenant(database.db, org.id);
        product = await products.find(t, checkId, slug, true);
      }
    }
    return { t, product };
  };

  /** What refuses this request on this product, without the rate limit: 401, then 403, then 404 for fetch. */
  const refusalOf = (product: CheckProduct | undefined, secret: string): ApiError | null => {
    if (!product?.tokenHash || !digestsEqual(product.tokenHash, sha256Hex(secret))) return unauthorized('unknown or replaced check token');
    if (!product.active) return forbidden('the product is inactive');
    if (route === 'fetch' && !product.fetchEnabled) return notFound('licence fetch is not enabled for this product');
    return null;
  };

  /**
   * The product's refusals in their order (the per-product limit counted on the first pass only),
   * each given on the product as it is: one found on a cached product is judged again on a fresh
   * read. Sets the request's check scope.
   */
  const admit = async (request: FastifyRequest, secret: string, now: number, firstPass: boolean) => {
    const { checkId } = request.params as { checkId: string };
    let fresh = !firstPass;
    let { t, product } = await productOf(request, checkId, fresh);
    let refusal = refusalOf(product, secret);
    if (refusal && !fresh) {
      ({ t, product } = await productOf(request, checkId, (fresh = true)));
      refusal = refusalOf(product, secret);
    }
    if (refusal?.status === 401) throw refusal;
    if (firstPass) {
      // Counted only once the token verified, so nobody without it can exhaust the product's limit.
      const perProduct = await limiter.hit(`product:${product!.id}`, config.checkRateProduct, now);
      if (!perProduct.allowed) throw tooManyRequests('too many checks for this product', perProduct.retryAfterSeconds);
    }
    if (refusal) throw refusal;
    request.checkScope = { database, org: request.org, tenant: t, product: product!, confirmed: fresh, now, writes };
  };

  const onRequest = async (request: FastifyRequest) => {
    const now = Date.now();
    const perAddress = await limiter.hit(`address:${request.ip}`, config.checkRateAddress, now);
    if (!perAddress.allowed) throw tooManyRequests('too many checks from this address', perAddress.retryAfterSeconds);
    const { checkId } = request.params as { checkId: string };
    const match = CHECK_TOKEN.exec(request.headers.authorization ?? '');
    if (!match || match[1] !== checkId) throw unauthorized(`send this product's check token: Authorization: Bearer svcc_${checkId}_<secret>`);
    await admit(request, match[2]!, now, true);
    if (!isJson(request.headers['content-type'])) throw new ApiError(415, 'unsupported content type: send application/json');
  };

  const judged = async <T>(request: FastifyRequest, work: (scope: CheckScope) => Promise<T>): Promise<T> => {
    try {
      return await work(request.checkScope);
    } catch (err) {
      if (!(err instanceof StaleProduct)) throw err;
      await admit(request, CHECK_TOKEN.exec(request.headers.authorization!)![2]!, request.checkScope.now, false);
      return work(request.checkScope);
    }
  };
  return { onRequest, judged };
}

/** The licence check API (SPEC 4.4, DESIGN.md 5): called by installed applications. */
export function checkRoutes(keyring: Keyring, database: Database, config: Config, organisations: OrganisationCache, writes: CheckWrites): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.decorateRequest('checkScope', null as unknown as CheckScope);
    const deps = { database, config, products: new CheckProductCache(keyring), limiter: app.rateLimits, organisations, writes };
    const checks = gate(deps, 'check');
    const fetches = gate(deps, 'fetch');
    const releases = gate(deps, 'release');
    const borrows = gate(deps, 'borrow');
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
      async (request) => {
        const answer = await checks.judged(request, (scope) => checkLicence(scope, request.body));
        writes.count(request.checkScope.org.id, request.checkScope.now);
        return answer;
      },
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
      async (request) => fetches.judged(request, (scope) => fetchLicence(scope, request.body)),
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
      async (request) => releases.judged(request, (scope) => releaseOwnSeat(scope, request.body)),
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
      async (request) => borrows.judged(request, (scope) => borrowLease(scope, request.body)),
    );
  };
}
