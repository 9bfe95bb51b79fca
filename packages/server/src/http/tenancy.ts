import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Database } from '../db/database.js';
import { roleAllows, scopesAllow, type Access } from '../core/access.js';
import { makeCtx, StaleCache, type Actor, type Ctx, type Organisation, type PortalSession, type TokenRow } from '../core/context.js';
import { ApiError, forbidden, notFound, refused } from '../core/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The organisation the URL's slug selected. */
    org: Organisation;
    /** Set for every route whose access is not `public`, `check`, `portal` or `path-token`. */
    ctx: Ctx;
    /** Set for the customer portal's routes. */
    portal: PortalSession;
    /** On a `cachedCaller` route: admits the request again, reading what its caches no longer hold. */
    readmit: () => Promise<void>;
  }
  interface FastifyContextConfig {
    access?: Access;
    /** The route's transaction confirms the organisation and API token (see `confirmed`): they may come from caches. */
    cachedCaller?: boolean;
  }
  interface FastifyInstance {
    /** Every route under `/o/:slug/api` with the access it declares (for the OpenAPI and access checks). */
    apiRoutes: ApiRoute[];
  }
}

export interface ApiRoute {
  method: string;
  url: string;
  access: Access;
}

/**
 * Who calls an organisation's API, as the features that keep organisations and credentials know
 * them (app.ts wires them in): this plugin judges access, they read the rows.
 */
export interface Callers {
  /** The organisation a slug names; from this process's cache when `cached` (orgs/repo.ts). */
  organisation(slug: string, cached: boolean): Promise<Organisation | undefined>;
  /** A member, an API token or a platform session (auth/credentials.ts); the token from this process's cache when `cached`. */
  member(request: FastifyRequest, org: Organisation, now: number, cached: boolean): Promise<Actor>;
  /** The customer portal's own session (portal/service.ts). */
  customer(request: FastifyRequest, org: Organisation, now: number): Promise<PortalSession>;
  /** The cached row of an API token a request was admitted on, for its transaction to confirm. */
  cachedToken(tokenId: string): TokenRow | undefined;
  /** Forgets what the caches hold for the slug and the Authorization header, so both are read again. */
  forget(slug: string, authorization: string | undefined): void;
}

const NO_QUERY = Type.Object({}, { additionalProperties: false });

function authorize(actor: Actor, access: Exclude<Access, 'public' | 'check' | 'portal' | 'path-token'>): void {
  if (access === 'member' || actor.kind === 'system') return;
  if (access === 'session' || access === 'admin-session') {
    if (actor.kind === 'token') throw forbidden('this endpoint is closed to API tokens: sign in to the console');
    if (access === 'admin-session' && actor.role !== 'ORG_ADMIN') throw forbidden('this needs the ORG_ADMIN role');
    return;
  }
  if (actor.kind === 'token') {
    if (!scopesAllow(actor.scopes, access)) throw forbidden(`missing scope ${access}`);
  } else if (!roleAllows(actor.role, access)) {
    throw forbidden(`the ${actor.role} role may not do this (it needs ${access})`);
  }
}

/**
 * Installs, for every route under `/o/:slug/api`, the one place where the tenant is resolved
 * (unknown slug: 404 before anything else), the caller authenticated and its access judged.
 * Every route must declare its access; a route without one fails at start-up.
 */
export function installTenancy(app: FastifyInstance, database: Database, routes: ApiRoute[], callers: Callers): void {
  app.addHook('onRoute', (route) => {
    const access = route.config?.access;
    if (!access) throw new Error(`route ${route.method} ${route.url} declares no access`);
    // A route that takes no query parameters still refuses unknown ones, naming them.
    route.schema = { ...route.schema, querystring: route.schema?.querystring ?? NO_QUERY };
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, url: route.url, access });
  });
  app.decorateRequest('org', null as unknown as Organisation);
  app.decorateRequest('ctx', null as unknown as Ctx);
  app.decorateRequest('portal', null as unknown as PortalSession);
  app.decorateRequest('readmit', null as unknown as () => Promise<void>);

  /**
   * The organisation, the caller and its access. `cached`: the organisation and API token may come
   * from this process's caches (a route whose transaction confirms them, licences/opening.ts).
   */
  const admit = async (request: FastifyRequest, cached: boolean) => {
    const { slug } = request.params as { slug: string };
    const access = request.routeOptions.config.access!;
    // DESIGN.md 20: a path token is judged before the slug, by its route (downloads/routes.ts).
    if (access === 'path-token') return;
    const org = await callers.organisation(slug, access === 'check' || cached);
    if (!org) throw notFound(`no organisation "${slug}"`);
    request.org = org;
    // A check token is judged by the check routes' own onRequest hook, which runs right after this one.
    if (access === 'public' || access === 'check') return;
    const now = Date.now();
    // The customer portal has its own credential and nothing else (DESIGN.md 12).
    if (access === 'portal') {
      request.portal = await callers.customer(request, org, now);
      return;
    }
    const actor = await callers.member(request, org, now, cached);
    // The platform still reaches a suspended organisation (DESIGN.md 8); its own people do not.
    if (org.suspended && actor.kind !== 'platform') throw refused('organisation suspended', 'ORG_SUSPENDED');
    authorize(actor, access);
    request.ctx = makeCtx(database, org, actor, now);
    if (cached && actor.kind === 'token') {
      request.ctx.cached = { token: callers.cachedToken(actor.tokenId)!, forget: () => callers.forget(slug, request.headers.authorization) };
    }
  };

  app.addHook('onRequest', async (request: FastifyRequest) => {
    const header = request.headers.authorization;
    const cached = request.routeOptions.config.cachedCaller === true && header !== undefined;
    try {
      await admit(request, cached);
    } catch (err) {
      if (!cached || !(err instanceof ApiError)) throw err;
      // A refusal judged on cached rows is judged again on the rows as they are.
      callers.forget((request.params as { slug: string }).slug, header);
      await admit(request, true);
    }
    if (cached) request.readmit = () => admit(request, true);
  });
}

/**
 * Runs a route's work, and again whenever its transaction finds that something the request took
 * from a cache has changed (StaleCache): on the caller admitted again, the changed rows read afresh.
 */
export async function confirmed<T>(request: FastifyRequest, work: (ctx: Ctx) => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await work(request.ctx);
    } catch (err) {
      if (!(err instanceof StaleCache)) throw err;
      if (request.ctx.cached) await request.readmit();
    }
  }
}
