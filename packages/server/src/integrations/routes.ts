import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Counter, type Registry } from 'prom-client';
import { Type } from 'typebox';
import type { Database } from '../db/database.js';
import { ApiError, forbidden } from '../core/errors.js';
import { Id, IdParams, NoContent, Paged, responses, Slug } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { ProductCache } from '../licences/opening.js';
import { CustomerNames } from '../licences/service.js';
import { findHookIntegration, receiveDelivery, retryEvent, type HookDeps, type HookIntegration } from './hook.js';
import type { Provider } from './signature.js';
import { ChangeBody, CreateBody, EventEntry, EventQuery, HookAnswer, Integration } from './schemas.js';
import { createIntegration, deleteIntegration, getIntegration, listEvents, listIntegrations, updateIntegration } from './service.js';

const tags = ['Integrations'];

/** DESIGN.md 22: a provider's delivery is at most 1 MiB. */
const HOOK_BODY_LIMIT = 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    /** The connection a hook's path names. */
    integration: HookIntegration;
  }
}

/** Each provider's hook as the OpenAPI document describes it. */
const HOOKS: Record<Provider, { summary: string; signature: string }> = {
  stripe: { summary: "Stripe's events for a connection", signature: '`Stripe-Signature`' },
  paddle: { summary: "Paddle's events for a connection", signature: '`Paddle-Signature` (several `h1` while a secret is rolled)' },
};

/**
 * `POST /hooks/{stripe|paddle}/{id}`: no credential header, the signature is one. The body is kept
 * raw for the signature, so the hook has its own parser; the refusals come in DESIGN.md 22's order:
 * 404 (the slug, then the connection: another provider's is none), 415, 413, then the signature,
 * the disabled connection and the event's shape (hook.ts).
 */
function hookRoutes(deps: HookDeps, provider: Provider): FastifyPluginAsyncTypebox {
  return async (hooks) => {
    hooks.decorateRequest('integration', null as unknown as HookIntegration);
    hooks.removeAllContentTypeParsers();
    hooks.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: HOOK_BODY_LIMIT }, (_request, body, done) => done(null, body));
    hooks.addHook('onRequest', async (request) => {
      // Before the body is read, so before the params' schema judges the id: a path that names no connection is a 404.
      request.integration = await findHookIntegration(deps.database, request.org, provider, (request.params as { id: string }).id);
    });
    hooks.addHook('preParsing', async (request) => {
      const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
      if (type !== 'application/json') throw new ApiError(415, 'a provider sends its events as application/json');
    });
    hooks.post(
      `/hooks/${provider}/:id`,
      {
        config: { access: 'public' },
        schema: {
          summary: HOOKS[provider].summary,
          description: `Signed with ${HOOKS[provider].signature} (no credential header). Each event is applied once by its id; a repeat answers its stored outcome with \`duplicate: true\`. 400 for a refused signature or a body that is not an event; 503 while the connection is disabled.`,
          tags,
          params: IdParams,
          response: responses({ 200: HookAnswer }, [413, 415, 503]),
        },
      },
      async (request) =>
        receiveDelivery(deps, request.org, request.integration, request.headers, Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)),
    );
  };
}

/** `licensor_integration_events_total{provider,outcome}` (DESIGN.md 22): the outcome as the hook answers it. */
export function integrationMetrics(registry: Registry): (provider: Provider, outcome: string) => void {
  const answers = new Counter({
    name: 'licensor_integration_events_total',
    help: "Payment providers' events by provider and the outcome the hook answered",
    labelNames: ['provider', 'outcome'],
    registers: [registry],
  });
  return (provider, outcome) => answers.inc({ provider, outcome });
}

export function integrationRoutes(
  database: Database,
  masterKey: Buffer,
  keyring: Keyring,
  publicUrl: string,
  counted: (provider: Provider, outcome: string) => void,
): FastifyPluginAsyncTypebox {
  const deps = { database, masterKey, keyring, publicUrl, counted, caches: { products: new ProductCache(), customers: new CustomerNames() } };
  return async (app) => {
    await app.register(hookRoutes(deps, 'stripe'));
    await app.register(hookRoutes(deps, 'paddle'));
    await app.register(connectionRoutes(deps, publicUrl));
  };
}

function connectionRoutes(deps: HookDeps, publicUrl: string): FastifyPluginAsyncTypebox {
  const { masterKey } = deps;
  return async (app) => {
    // DESIGN.md 22: a connection is the organisation's own administrators', never a platform account's.
    app.addHook('preHandler', async (request) => {
      if (request.ctx.actor.kind === 'platform') throw forbidden("a platform account may not see or change an organisation's integrations");
    });

    app.get(
      '/integrations',
      {
        config: { access: 'integrations:read' },
        schema: { summary: "The organisation's payment provider connections", tags, response: responses({ 200: Type.Array(Integration) }) },
      },
      async (request) => listIntegrations(request.ctx, publicUrl),
    );

    app.post(
      '/integrations',
      {
        config: { access: 'integrations:write' },
        schema: {
          summary: 'Connect a payment provider',
          description: "Also needs licenses:write: the connection issues in the organisation's name. The signing secret is write-only.",
          tags,
          body: CreateBody,
          response: responses({ 201: Integration }, [409]),
        },
      },
      async (request, reply) => reply.code(201).send(await createIntegration(request.ctx, masterKey, publicUrl, request.body)),
    );

    app.get(
      '/integrations/:id',
      {
        config: { access: 'integrations:read' },
        schema: { summary: 'One payment provider connection', tags, params: IdParams, response: responses({ 200: Integration }) },
      },
      async (request) => getIntegration(request.ctx, publicUrl, request.params.id),
    );

    app.put(
      '/integrations/:id',
      {
        config: { access: 'integrations:write' },
        schema: {
          summary: 'Change a payment provider connection',
          description: 'Changes only the fields the body carries (`mappings` replaces them all); `provider` is fixed. Also needs licenses:write.',
          tags,
          params: IdParams,
          body: ChangeBody,
          response: responses({ 200: Integration }, [409]),
        },
      },
      async (request) => updateIntegration(request.ctx, masterKey, publicUrl, request.params.id, request.body),
    );

    app.delete(
      '/integrations/:id',
      {
        config: { access: 'integrations:write' },
        schema: {
          summary: 'Delete a payment provider connection',
          description: 'Its ledger, links and Paddle customers go with it; its licences stay.',
          tags,
          params: IdParams,
          response: responses({ 204: NoContent }),
        },
      },
      async (request, reply) => {
        await deleteIntegration(request.ctx, request.params.id);
        return reply.code(204).send();
      },
    );

    app.get(
      '/integrations/:id/events',
      {
        config: { access: 'integrations:read' },
        schema: {
          summary: "A connection's events and their outcomes",
          description: 'Newest first, paged as activity.',
          tags,
          params: IdParams,
          querystring: EventQuery,
          response: responses({ 200: Paged(EventEntry) }),
        },
      },
      async (request) => listEvents(request.ctx, request.params.id, request.query),
    );

    app.post(
      '/integrations/:id/events/:eventId/retry',
      {
        config: { access: 'integrations:write' },
        schema: {
          summary: 'Apply a FAILED or WAITING event again',
          description: 'From what its entry kept; answers the entry with its new outcome. Any other stored outcome: 409. Also needs licenses:write.',
          tags,
          params: Type.Object({ slug: Slug, id: Id(), eventId: Type.String({ minLength: 1, maxLength: 255 }) }),
          response: responses({ 200: EventEntry }, [409]),
        },
      },
      async (request) => retryEvent(deps, request.ctx, request.params.id, request.params.eventId),
    );
  };
}
