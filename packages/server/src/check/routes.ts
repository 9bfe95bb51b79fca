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
import { CheckProductCache } from './product-cache.js';
import type { RateLimiter } from './rate-limit.js';
import { checkLicence, fetchLicence, releaseOwnSeat, type CheckScope } from './service.js';

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
  receipt: Type.String({
    description: 'Base64url signature, with the key that signed the presented licence, over `SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest` (␟ = 0x1F; absent fields empty).',
  }),
  expiresAt: Type.Optional(Timestamp),
  graceEndsAt: Type.Optional(Timestamp),
  revokedAt: Type.Optional(Timestamp),
  revokedReason: Type.Optional(Type.String()),
  renewed: Type.Optional(Type.Boolean({ description: 'The presented term was renewed: fetch the current one.' })),
  checkEverySeconds: Type.Optional(Type.Integer()),
  checkMaxSeconds: Type.Optional(Type.Integer()),
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
    Type.Enum(['NO_SEAT', 'AT_ISSUE', 'UNKNOWN_LICENCE'], {
      description: 'Why nothing was released: this machine holds no seat (an exact fingerprint match is needed), its seat is in the signature, or the licence is unknown. These never count towards the limit.',
    }),
  ),
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

/**
 * The refusals of DESIGN.md 5 that come before the body, in their order. They run in
 * onRequest, before the body is parsed, so a wrong token with a non-JSON body is still a 401.
 */
function gate({ database, config, products, limiter, organisations, writes }: Gate, route: 'check' | 'fetch' | 'release') {
  /** The product, on the organisation as it is now: a cached one whose slug leads elsewhere is read again (404 if gone). */
  const productOf = async (request: FastifyRequest, checkId: string) => {
    const { slug } = request.org;
    let t = tenant(database.db, request.org.id);
    let product = await products.find(t, checkId, slug);
    if (!product) {
      organisations.forget(slug);
      const org = await organisations.find(database.db, slug);
      if (!org) throw notFound(`no organisation "${slug}"`);
      if (org.id !== request.org.id) {
        request.org = org;
        t = tenant(database.db, org.id);
        product = await products.find(t, checkId, slug);
      }
    }
    return { t, product };
  };
  return async (request: FastifyRequest) => {
    const now = Date.now();
    const perAddress = await limiter.hit(`address:${request.ip}`, config.checkRateAddress, now);
    if (!perAddress.allowed) throw tooManyRequests('too many checks from this address', perAddress.retryAfterSeconds);
    const { checkId } = request.params as { checkId: string };
    const match = CHECK_TOKEN.exec(request.headers.authorization ?? '');
    if (!match || match[1] !== checkId) throw unauthorized(`send this product's check token: Authorization: Bearer svcc_${checkId}_<secret>`);
    const { t, product } = await productOf(request, checkId);
    if (!product?.tokenHash || !digestsEqual(product.tokenHash, sha256Hex(match[2]!))) throw unauthorized('unknown or replaced check token');
    // Counted only once the token verified, so nobody without it can exhaust the product's limit.
    const perProduct = await limiter.hit(`product:${product.id}`, config.checkRateProduct, now);
    if (!perProduct.allowed) throw tooManyRequests('too many checks for this product', perProduct.retryAfterSeconds);
    if (!product.active) throw forbidden('the product is inactive');
    if (route === 'fetch' && !product.fetchEnabled) throw notFound('licence fetch is not enabled for this product');
    if (!isJson(request.headers['content-type'])) throw new ApiError(415, 'unsupported content type: send application/json');
    request.checkScope = { database, org: request.org, tenant: t, product, now, writes };
  };
}

/** The licence check API (SPEC 4.4, DESIGN.md 5): called by installed applications. */
export function checkRoutes(keyring: Keyring, database: Database, config: Config, organisations: OrganisationCache, writes: CheckWrites): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.decorateRequest('checkScope', null as unknown as CheckScope);
    const deps = { database, config, products: new CheckProductCache(keyring), limiter: app.rateLimits, organisations, writes };
    const security = 'Authorization: Bearer `svcc_<checkId>_<secret>` (the product’s check token) and Content-Type: application/json.';

    app.post(
      '/public/license/:checkId/check',
      {
        config: { access: 'check' },
        onRequest: gate(deps, 'check'),
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
        const answer = await checkLicence(request.checkScope, request.body);
        writes.count(request.checkScope.org.id, request.checkScope.now);
        return answer;
      },
    );

    app.post(
      '/public/license/:checkId/fetch',
      {
        config: { access: 'check' },
        onRequest: gate(deps, 'fetch'),
        schema: {
          summary: 'Fetch the current licence string',
          description: `${security} For a machine bound to the licence (fetch never binds: check first); 404 unless the product enables licence fetch.`,
          tags,
          params: CheckParams,
          body: FetchBody,
          response: responses({ 200: FetchAnswer }, [415, 429]),
        },
      },
      async (request) => fetchLicence(request.checkScope, request.body),
    );

    app.post(
      '/public/license/:checkId/release',
      {
        config: { access: 'check' },
        onRequest: gate(deps, 'release'),
        schema: {
          summary: 'Release this machine’s own seat',
          description: `${security} DESIGN.md 12: frees the live seat whose recorded fingerprint equals this one exactly, so the licence can be used on another machine. Refusals come in the order of a check; past the product's \`selfReleaseLimit\` in 30 days, 403 "self-service release limit reached".`,
          tags,
          params: CheckParams,
          body: ReleaseBody,
          response: responses({ 200: ReleaseAnswer }, [415, 429]),
        },
      },
      async (request) => releaseOwnSeat(request.checkScope, request.body),
    );
  };
}
