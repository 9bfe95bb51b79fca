import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { PLATFORM_COOKIE, platformSession, SESSION_COOKIE, type PlatformAccount } from '../auth/credentials.js';
import { forbidden, unauthorized } from '../core/errors.js';

/** What a control-plane route demands: nothing (sign-in), any platform account, or PLATFORM_ADMIN. */
export type PlatformAccess = 'public' | 'read' | 'write';

declare module 'fastify' {
  interface FastifyContextConfig {
    platform?: PlatformAccess;
  }
  interface FastifyRequest {
    platformAccount: PlatformAccount;
  }
  interface FastifyInstance {
    /** Every control-plane route with its access (for the OpenAPI completeness test). */
    platformApiRoutes: PlatformRoute[];
  }
}

export const PLATFORM_PREFIX = '/platform/api';

export interface PlatformRoute {
  method: string;
  url: string;
  access: PlatformAccess;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Judges every control-plane request: no token ever (DESIGN.md 8), an organisation's session
 * is not a platform one, writes need PLATFORM_ADMIN, and unsafe requests come from our origin.
 */
export function installPlatformAuth(app: FastifyInstance, database: Database, config: Config, routes: PlatformRoute[]) {
  app.addHook('onRoute', (route) => {
    if (!route.config?.platform) throw new Error(`route ${route.method} ${route.url} declares no platform access`);
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, url: route.url, access: route.config.platform });
    route.schema = { ...route.schema, querystring: route.schema?.querystring ?? Type.Object({}, { additionalProperties: false }) };
  });
  app.decorateRequest('platformAccount', null as unknown as PlatformAccount);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    if (request.headers.authorization !== undefined) throw forbidden('tokens cannot reach the control plane');
    const access = request.routeOptions.config.platform!;
    if (access === 'public') return;
    const cookie = request.cookies[PLATFORM_COOKIE];
    if (!cookie) {
      if (request.cookies[SESSION_COOKIE]) throw forbidden("an organisation's session cannot reach the control plane");
      throw unauthorized('authentication required: sign in to the control plane');
    }
    const account = await platformSession(database, cookie, Date.now());
    const origin = request.headers.origin;
    if (!SAFE_METHODS.has(request.method) && origin !== undefined && !config.ownOrigins.includes(origin)) {
      throw forbidden(`requests from origin ${origin} are not accepted`);
    }
    if (access === 'write' && account.role !== 'PLATFORM_ADMIN') throw forbidden('PLATFORM_SUPPORT may read but not change');
    request.platformAccount = account;
  });
}
