import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import cookie from '@fastify/cookie';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import { isDatabaseUnavailable, type Database } from './db/database.js';
import { sql } from 'kysely';
import { ApiError } from './http/errors.js';
import { ErrorBody } from './http/schemas.js';
import { installConsole } from './http/console.js';
import { installMetrics, installRedisGauge } from './http/metrics.js';
import { installOpenApi } from './http/openapi.js';
import { installTenancy, type ApiRoute } from './http/tenancy.js';
import { OrganisationCache } from './orgs/repo.js';
import { CheckWrites } from './check/counters.js';
import { schemaErrorMessage, textProblem, validatorCompiler } from './http/validation.js';
import { auditRoutes } from './audit/routes.js';
import { checkRoutes } from './check/routes.js';
import { authRoutes } from './auth/routes.js';
import { customerRoutes } from './customers/routes.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { Keyring } from './keys/keyring.js';
import { Hsm } from './keys/pkcs11.js';
import { airGapRoutes } from './air-gap/routes.js';
import { licenceRoutes } from './licences/routes.js';
import { listingRoutes } from './licences/listing-routes.js';
import { productRoutes } from './products/routes.js';
import { settingsRoutes } from './settings/routes.js';
import { tokenRoutes } from './tokens/routes.js';
import { userRoutes } from './users/routes.js';
import { PLATFORM_PREFIX, platformRoutes, type PlatformRoute } from './platform/routes.js';
import { portalRoutes } from './portal/routes.js';
import { Outbox } from './webhooks/outbox.js';
import { webhookRoutes } from './webhooks/routes.js';
import { memberPasskeyRoutes } from './passkeys/routes.js';
import { VERSION } from './version.js';
import { sharedRateLimiter, type RateLimiter } from './check/rate-limit.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts for every rate limit (checks, passkey sign-in). */
    rateLimits: RateLimiter;
    /** This process's webhook delivery loop (webhooks/outbox.ts). */
    webhooks: Outbox;
  }
}

export interface AppOptions {
  config: Config;
  database: Database;
  /** Seals and opens product private keys (keys/master-key.ts). */
  masterKey: Buffer;
  logger?: FastifyServerOptions['logger'];
  /** False keeps the webhook delivery loop from turning by itself (the OpenAPI document's builder). */
  deliverWebhooks?: boolean;
}

function clientMessage(err: { code?: string; message: string; statusCode?: number }): string {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type: send application/json';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body is too large';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'request body does not match its Content-Length';
    default:
      return err.message;
  }
}

const PORTAL_CODE_IN_URL = /\/portal\/[0-9a-f]{64}/g;

const OUT_OF_RANGE = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

export async function buildApp({ config, database, masterKey, logger, deliverWebhooks = true }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
      serializers: {
        // A portal link's code is a credential: the page's URL is logged without it (DESIGN.md 12).
        req: (request: { method: string; url: string; hostname?: string; ip?: string }) => ({
          method: request.method,
          url: request.url.replace(PORTAL_CODE_IN_URL, '/portal/<code>'),
          host: request.hostname,
          remoteAddress: request.ip,
        }),
      },
    },
    trustProxy: config.trustProxy,
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    schemaErrorFormatter: (errors, dataVar) => schemaErrorMessage(errors as never, dataVar),
    ajv: { customOptions: {} },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.addSchema(ErrorBody);

  // A JSON content type with an empty body counts as no body (clients send bodiless POSTs so).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  // Only JSON is accepted: everything else, text included, is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    parseJson(request, body as string, (err, value) => (err ? done(new ApiError(400, 'malformed JSON body')) : done(null, value)));
  });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string; validation?: unknown; validationContext?: string }, request, reply) => {
    if (err instanceof ApiError) return reply.code(err.status).headers(err.headers).send({ error: err.message, ...err.extra });
    if (err.validation) {
      // A path id out of range names a record that cannot exist; a malformed one is still a 400.
      const keyword = (err.validation as Array<{ keyword: string }>)[0]?.keyword ?? '';
      if (err.validationContext === 'params' && OUT_OF_RANGE.has(keyword)) {
        return reply.code(404).send({ error: `no such record: ${request.url.split('?')[0]}` });
      }
      return reply.code(400).send({ error: err.message });
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: clientMessage(err) });
    }
    if (isDatabaseUnavailable(err)) {
      // DESIGN.md 17: the client tries again in a second, by when the pool may have reconnected.
      request.log.warn({ code: err.code, reason: err.message }, 'database unavailable');
      return reply.code(503).header('retry-after', '1').send({ error: 'database unavailable' });
    }
    request.log.error({ err }, 'unexpected fault');
    return reply.code(500).send({ error: `internal error (request ${request.id})` });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `no such endpoint: ${request.method} ${request.url.split('?')[0]}` }),
  );

  await app.register(cookie);
  const registry = installMetrics(app);
  await installOpenApi(app, VERSION, config.publicUrl);

  const hidden = { schema: { hide: true } };
  app.get('/healthz', hidden, async () => ({ status: 'ok' }));
  app.get('/readyz', hidden, async (_request, reply) => {
    try {
      await sql`select 1`.execute(database.db);
      return { status: 'ready' };
    } catch {
      return reply.code(503).header('retry-after', '1').send({ error: 'database unavailable' });
    }
  });
  app.get('/metrics', hidden, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
  installConsole(app);

  // A path segment that is not storable text addresses nothing: 404 before any lookup.
  app.addHook('onRequest', async (request) => {
    for (const value of Object.values((request.params ?? {}) as Record<string, unknown>)) {
      if (typeof value === 'string' && textProblem(value) !== null) throw new ApiError(404, `no such endpoint: ${request.method} ${request.routeOptions.url ?? ''}`);
    }
  });

  // One set of rate-limit counts for the app, shared with the other workers and instances (DESIGN.md 11).
  const rateLimits = sharedRateLimiter(config.redisUrl ? { url: config.redisUrl, prefix: config.redisPrefix } : null, config.workers, {
    down: (err) => app.log.warn({ reason: err.message }, 'Redis unreachable: rate limits are counted without it until it returns'),
    up: () => app.log.info('Redis reachable again: rate limits are counted in it'),
  });
  if (rateLimits.redisUp) installRedisGauge(registry, rateLimits.redisUp);
  app.decorate('rateLimits', rateLimits);
  app.addHook('onClose', () => rateLimits.close());
  app.decorate('apiRoutes', [] as ApiRoute[]);
  app.decorate('platformApiRoutes', [] as PlatformRoute[]);
  // One keyring per app: its cache of opened keys serves every feature that signs or verifies.
  const organisations = new OrganisationCache();
  const checkWrites = new CheckWrites(database, (err) => app.log.error({ err }, 'check stamps and counts could not be written'));
  app.addHook('onClose', () => checkWrites.close());
  const outbox = new Outbox(database, masterKey, config.webhookAllowNetworks, app.log, registry);
  app.decorate('webhooks', outbox);
  if (deliverWebhooks) app.addHook('onReady', async () => outbox.start());
  app.addHook('onClose', () => outbox.stop());
  const keyring = new Keyring(masterKey, config.pkcs11 && new Hsm(config.pkcs11.module, config.pkcs11.tokens));
  await app.register(
    async (api) => {
      // DESIGN.md 7: API answers are never cached and never sniffed.
      api.addHook('onSend', async (_request, reply) => {
        reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
      });
      installTenancy(api, database, config, app.apiRoutes, organisations);
      // Whatever reads an organisation's data sees every check this process has answered.
      api.addHook('onRequest', async (request) => {
        if (request.routeOptions.config.access !== 'check') await checkWrites.settle();
      });
      await api.register(authRoutes(database, config, VERSION));
      await api.register(memberPasskeyRoutes(database, config, VERSION));
      await api.register(userRoutes);
      await api.register(tokenRoutes);
      await api.register(settingsRoutes);
      await api.register(productRoutes(keyring, config.checkRateAddress));
      await api.register(customerRoutes);
      await api.register(licenceRoutes(keyring));
      await api.register(listingRoutes);
      await api.register(dashboardRoutes);
      await api.register(auditRoutes);
      await api.register(checkRoutes(keyring, database, config, organisations, checkWrites));
      await api.register(portalRoutes(database, config));
      await api.register(webhookRoutes(database, config, masterKey));
      await api.register(airGapRoutes(keyring, database));
    },
    { prefix: '/o/:slug/api' },
  );
  // The control plane (DESIGN.md 8): outside every organisation, never reached by a token.
  await app.register(platformRoutes(database, config, VERSION, app.platformApiRoutes), { prefix: PLATFORM_PREFIX });

  return app;
}
