import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import cookie from '@fastify/cookie';
import type { Logger } from 'pino';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { failureOf } from './http/failures.js';
import { sql } from 'kysely';
import { ApiError } from './core/errors.js';
import { ErrorBody } from './core/schemas.js';
import { installConsole } from './http/console.js';
import { installDownloadMetrics, installMetrics, installRedisGauge, usageMetrics, installTrialCounter } from './http/metrics.js';
import { DownloadCounts } from './downloads/counts.js';
import { downloadRoutes } from './downloads/routes.js';
import { FeedReleases, pathTokenKeys, type DownloadDeps } from './downloads/service.js';
import { installOpenApi } from './http/openapi.js';
import { installTenancy, type ApiRoute } from './http/tenancy.js';
import { OrganisationCache } from './orgs/repo.js';
import { CheckWrites } from './check/counters.js';
import { schemaErrorMessage, textProblem, validatorCompiler } from './http/validation.js';
import { auditRoutes } from './audit/routes.js';
import { checkRoutes } from './check/routes.js';
import { trialRoutes } from './trials/routes.js';
import { checkGates } from './check/gate.js';
import { leanCheckHandler } from './check/lean.js';
import { authRoutes } from './auth/routes.js';
import { memberCallers } from './auth/credentials.js';
import { authenticatePortal } from './portal/service.js';
import { customerRoutes } from './customers/routes.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { usageRoutes } from './usage/routes.js';
import { releaseRoutes } from './releases/routes.js';
import { ArtifactStores } from './releases/stores.js';
import { usagePruner } from './usage/prune.js';
import { Keyring } from './keys/keyring.js';
import { Hsm } from './keys/pkcs11.js';
import { airGapRoutes, operatorAirGap } from './air-gap/routes.js';
import { licenceRoutes } from './licences/routes.js';
import { listingRoutes } from './listings/routes.js';
import { productRoutes } from './products/routes.js';
import { settingsRoutes } from './settings/routes.js';
import { tokenRoutes } from './tokens/routes.js';
import { userRoutes } from './users/routes.js';
import { PLATFORM_PREFIX, type PlatformRoute } from './platform/access.js';
import { platformRoutes } from './platform/routes.js';
import { portalAirGap, portalRoutes } from './portal/routes.js';
import { Outbox, webhookMetrics } from './webhooks/outbox.js';
import { DeliveryThread } from './webhooks/thread.js';
import { ledgerPruner } from './integrations/prune.js';
import { integrationMetrics, integrationRoutes } from './integrations/routes.js';
import { webhookRoutes } from './webhooks/routes.js';
import { passkeyRoutes } from './passkeys/routes.js';
import { ssoConfigRoutes, ssoFlowRoutes, ssoMetrics } from './sso/routes.js';
import { memberPasskeys } from './auth/passkeys.js';
import { VERSION } from './version.js';
import { logDestination } from './log.js';
import { sharedRateLimiter } from './http/rate-limit.js';
import { useMailConfig } from './mail/config.js';
import { MailOutbox } from './mail/outbox.js';
import { mailMetrics } from './mail/metrics.js';
import { mailRoutes } from './mail/routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The webhook delivery loop on this thread (webhooks/outbox.ts); null when it runs in a thread of its own. */
    webhooks: Outbox | null;
    /** The check API's lean handler (check/lean.ts): true when it took the request, false to leave it to Fastify. */
    checkApiLean: (req: IncomingMessage, res: ServerResponse) => boolean;
    /** The mail outbox of this process (mail/outbox.ts): tests drain it. */
    mail: MailOutbox;
  }
}

export interface AppOptions {
  config: Config;
  database: Database;
  /** Seals and opens product private keys (keys/master-key.ts). */
  masterKey: Buffer;
  logger?: FastifyServerOptions['logger'];
  /**
   * Where the webhook delivery loop runs: on this thread (true, the default: tests move its time
   * and drain it), in a thread of its own (`'thread'`, as `serve` runs it, so deliveries take no
   * CPU from the requests' thread), or here without turning by itself (false: the OpenAPI document's builder).
   */
  deliverWebhooks?: boolean | 'thread';
}

const PORTAL_CODE_IN_URL = /\/portal\/[0-9a-f]{64}/g;
/** DESIGN.md 20: a download grant or feed token in the path is a credential: logged cut to its first 12 characters. */
const PATH_TOKEN_IN_URL = /(\/api\/public\/(?:downloads|feeds)\/)([^/?]{12})[^/?]+/;
/** DESIGN.md 21: a single sign-on's state, code and IdP answer are in these paths' query: logged without it. */
const SSO_QUERY = /(\/api\/sso\/(?:start|callback))\?.*$/;

const BODY_LIMIT = 1024 * 1024;

/** What every request's log line leaves out. */
const LOGGED = {
  redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
  serializers: {
    // A portal link's code is a credential: the page's URL is logged without it (DESIGN.md 12).
    req: (request: { method: string; url: string; hostname?: string; ip?: string }) => ({
      method: request.method,
      url: request.url.replace(PORTAL_CODE_IN_URL, '/portal/<code>').replace(SSO_QUERY, '$1').replace(PATH_TOKEN_IN_URL, '$1$2…'),
      host: request.hostname,
      remoteAddress: request.ip,
    }),
  },
};

/** Fastify's request ids (`req-<base 36 count>`), shared with the check API's lean handler so that ids stay unique. */
function requestIds(): () => string {
  let next = 0;
  return () => {
    next = (next + 1) & 0x7fffffff;
    return `req-${next.toString(36)}`;
  };
}

export async function buildApp({ config, database, masterKey, logger, deliverWebhooks = true }: AppOptions): Promise<FastifyInstance> {
  const genReqId = requestIds();
  useMailConfig(config.mail);
  const destination = logDestination(config);
  const app = Fastify({
    // A logger the caller chooses (the tests' trace logger) keeps what is never logged: credentials, codes and states.
    logger:
      logger === false
        ? false
        : { ...LOGGED, level: config.logLevel, ...(destination ? { stream: destination } : {}), ...(typeof logger === 'object' ? logger : {}) },
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    // DESIGN.md 20's path tokens are one segment of up to 512 characters (find-my-way's default is 100).
    routerOptions: { maxParamLength: 1024 },
    genReqId,
    return503OnClosing: true,
    schemaErrorFormatter: (errors, dataVar) => schemaErrorMessage(errors as never, dataVar),
    ajv: { customOptions: {} },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.addSchema(ErrorBody);

  // A JSON content type with an empty body counts as no body (clients send bodiless POSTs so).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const parseJsonBody = (text: string): unknown => {
    if (text === '') return undefined;
    // The default parser answers at once, before it returns.
    let parsed: { value: unknown } | undefined;
    parseJson(null as never, text, (err, value) => void (err || (parsed = { value })));
    if (!parsed) throw new ApiError(400, 'malformed JSON body');
    return parsed.value;
  };
  // Only JSON is accepted: everything else, text included, is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  app.setErrorHandler((err: Error, request, reply) => {
    const failure = failureOf(err, request, () => request.log);
    return reply.code(failure.status).headers(failure.headers).send(failure.body);
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ error: `no such endpoint: ${request.method} ${request.url.split('?')[0]}` }));

  await app.register(cookie);
  const { registry, observe } = installMetrics(app);
  await installOpenApi(app, VERSION, config);

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
  app.get('/metrics', hidden, async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));
  installConsole(app);

  // A path segment that is not storable text addresses nothing: 404 before any lookup.
  app.addHook('onRequest', async (request) => {
    for (const value of Object.values((request.params ?? {}) as Record<string, unknown>)) {
      if (typeof value === 'string' && textProblem(value) !== null)
        throw new ApiError(404, `no such endpoint: ${request.method} ${request.routeOptions.url ?? ''}`);
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
  const counted = webhookMetrics(registry, database);
  const ssoCounted = ssoMetrics(registry);
  const integrationsCounted = integrationMetrics(registry);
  const delivery =
    deliverWebhooks === 'thread'
      ? new DeliveryThread(database, masterKey, app.log, counted)
      : new Outbox(database, masterKey, config.webhookAllowNetworks, app.log, counted);
  app.decorate('webhooks', delivery instanceof Outbox ? delivery : null);
  if (deliverWebhooks) app.addHook('onReady', async () => delivery.start());
  app.addHook('onClose', () => delivery.stop());
  const mailOutbox = new MailOutbox(database, config, app.log);
  app.decorate('mail', mailOutbox);
  if (deliverWebhooks) app.addHook('onReady', async () => mailOutbox.start());
  app.addHook('onClose', () => mailOutbox.stop());
  mailMetrics(registry, database);
  for (const pruner of [usagePruner(database, app.log), ledgerPruner(database, config.publicUrl, app.log)]) {
    app.addHook('onReady', async () => pruner.start());
    app.addHook('onClose', async () => pruner.stop());
  }
  const keyring = new Keyring(masterKey, config.pkcs11 && new Hsm(config.pkcs11.module, config.pkcs11.tokens));
  const artifactStores = new ArtifactStores(config);
  const downloadCounts = new DownloadCounts(database, (err) => app.log.error({ err }, 'download counts could not be written'));
  app.addHook('onClose', () => downloadCounts.close());
  const downloads: DownloadDeps = {
    database,
    stores: artifactStores,
    counts: downloadCounts,
    limiter: rateLimits,
    organisations,
    rateAddress: config.checkRateAddress,
    publicUrl: config.publicUrl,
    grantSeconds: config.downloadGrantSeconds,
    keys: pathTokenKeys(masterKey),
    feedReleases: new FeedReleases(),
    ...installDownloadMetrics(
      registry,
      () => downloadCounts.total,
      () => artifactStores.current.up(),
    ),
  };
  const checkApi = checkGates({
    database,
    keyring,
    config,
    limiter: rateLimits,
    organisations,
    writes: checkWrites,
    usageCounters: usageMetrics(registry),
    countTrial: installTrialCounter(registry),
    downloads,
  });
  await app.register(
    async (api) => {
      // DESIGN.md 7: API answers are never cached and never sniffed.
      api.addHook('onSend', async (_request, reply) => {
        reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
      });
      installTenancy(api, database, app.apiRoutes, {
        ...memberCallers(database, config, organisations),
        customer: (request, org, now) => authenticatePortal(request, database, config, org, now),
      });
      // Whatever reads an organisation's data sees every check this process has answered.
      api.addHook('onRequest', async (request) => {
        const access = request.routeOptions.config.access;
        if (access !== 'check' && access !== 'path-token') await checkWrites.settle();
      });
      await api.register(authRoutes(database, config, VERSION));
      await api.register(passkeyRoutes(database, config, memberPasskeys(database, config, VERSION)));
      await api.register(userRoutes(config));
      await api.register(tokenRoutes);
      await api.register(settingsRoutes);
      await api.register(mailRoutes(config));
      await api.register(productRoutes(keyring, config.checkRateAddress));
      await api.register(customerRoutes);
      await api.register(licenceRoutes(keyring));
      await api.register(listingRoutes);
      await api.register(dashboardRoutes);
      await api.register(usageRoutes);
      await api.register(releaseRoutes(keyring, artifactStores, { maxBytes: config.artifactMaxBytes, quotaBytes: config.artifactQuotaBytes }));
      await api.register(auditRoutes);
      await api.register(checkRoutes(checkApi));
      await api.register(downloadRoutes(downloads));
      await api.register(trialRoutes);
      await api.register(portalRoutes(database, config, downloads));
      await api.register(webhookRoutes(database, config, masterKey));
      await api.register(integrationRoutes(database, masterKey, keyring, config.publicUrl, integrationsCounted));
      await api.register(ssoConfigRoutes(config, masterKey));
      await api.register(ssoFlowRoutes(database, config, masterKey, ssoCounted));
      await api.register(airGapRoutes(keyring, operatorAirGap));
      await api.register(airGapRoutes(keyring, portalAirGap(database)));
    },
    { prefix: '/o/:slug/api' },
  );
  // The control plane (DESIGN.md 8): outside every organisation, never reached by a token.
  await app.register(platformRoutes(database, config, VERSION, app.platformApiRoutes), { prefix: PLATFORM_PREFIX });

  app.decorate(
    'checkApiLean',
    leanCheckHandler({
      gates: checkApi,
      database,
      organisations,
      trustProxy: config.trustProxy,
      bodyLimit: BODY_LIMIT,
      parseJsonBody,
      genReqId,
      log: app.log as Logger,
      observe,
    }),
  );
  serveCheckApiFirst(app);
  return app;
}

/**
 * The check API's lean handler takes its requests before Fastify (check/lean.ts); every other
 * request, and every request once the app is closing (Fastify then answers 503), goes to Fastify.
 * Tests reach this dispatch through the server's `request` event (test/harness.ts).
 */
function serveCheckApiFirst(app: FastifyInstance): void {
  const [fastify] = app.server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.server.removeAllListeners('request');
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (closing || !app.checkApiLean(req, res)) fastify!(req, res);
  });
}
