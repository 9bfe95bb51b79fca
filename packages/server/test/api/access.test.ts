import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/core/access.js';
import type { ApiRoute } from '../../src/http/tenancy.js';
import { startHarness, type Harness } from '../harness.js';

/*
 * The shared checks every route gets: no credential, a wrong credential, another
 * organisation's credential, and a credential lacking the scope or role the route needs.
 */
let h: Harness;
let routes: ApiRoute[];
let otherOrgToken: string;
let otherOrgCookie: string;
let viewerCookie: string;
let issuerCookie: string;
const tokensWithout = new Map<string, string>();

beforeAll(async () => {
  h = await startHarness();
  // Check routes take a product's check token, the portal its own cookie: never these credentials
  // (check-refusals.test.ts, portal.test.ts).
  routes = h.app.apiRoutes.filter((r) => r.access !== 'public' && r.access !== 'check' && r.access !== 'portal' && r.access !== 'path-token');
  const other = await h.otherOrg();
  otherOrgCookie = other.cookie;
  otherOrgToken = await h.createToken([...SCOPES], other.slug);
  viewerCookie = (await h.createMember('VIEWER')).cookie;
  issuerCookie = (await h.createMember('ISSUER')).cookie;
  for (const route of routes) {
    if (!route.access.includes(':') || tokensWithout.has(route.access)) continue;
    const [resource] = route.access.split(':');
    // Every scope but the ones that would grant this route.
    tokensWithout.set(route.access, await h.createToken(SCOPES.filter((s) => !s.startsWith(`${resource}:`))));
  }
});
afterAll(() => h?.close());

const path = (route: ApiRoute) =>
  route.url
    .replace('/o/:slug/api', '')
    .replace(/:id\b/, '1')
    .replace(/:[A-Za-z]+/g, 'x');

describe('every route refuses', () => {
  it('no credential and a wrong credential with 401', async () => {
    for (const route of routes) {
      const none = await h.anonymous(route.method as 'GET', path(route));
      expect(none.statusCode, `${route.method} ${route.url}`).toBe(401);
      expect(none.data.error).toBeTruthy();
      const wrong = await h.as({ token: `svc_abcdefghijkl_${'ab'.repeat(32)}` })(route.method as 'GET', path(route));
      expect(wrong.statusCode, `${route.method} ${route.url}`).toBe(401);
      const badCookie = await h.as({ cookie: 'f'.repeat(64) })(route.method as 'GET', path(route));
      expect(badCookie.statusCode, `${route.method} ${route.url}`).toBe(401);
    }
  });

  it("another organisation's token and session with 403", async () => {
    for (const route of routes) {
      const token = await h.as({ token: otherOrgToken })(route.method as 'GET', path(route));
      expect(token.statusCode, `${route.method} ${route.url}`).toBe(403);
      const cookie = await h.as({ cookie: otherOrgCookie })(route.method as 'GET', path(route));
      expect(cookie.statusCode, `${route.method} ${route.url}`).toBe(403);
    }
  });

  it('a token without the needed scope with 403 naming it; session-only routes refuse every token', async () => {
    for (const route of routes) {
      if (route.access === 'member') continue;
      const token = route.access.includes(':') ? tokensWithout.get(route.access)! : await h.createToken([...SCOPES]);
      const response = await h.as({ token })(route.method as 'GET', path(route));
      expect(response.statusCode, `${route.method} ${route.url}`).toBe(403);
      if (route.access.includes(':')) expect(response.data.error).toBe(`missing scope ${route.access}`);
    }
  });

  it('a role that does not grant the route with 403 (viewer writes, issuer administers)', async () => {
    for (const route of routes) {
      const viewerMay = route.access === 'member' || route.access === 'session' || route.access.endsWith(':read');
      if (!viewerMay) {
        const response = await h.as({ cookie: viewerCookie })(route.method as 'GET', path(route));
        expect(response.statusCode, `VIEWER ${route.method} ${route.url}`).toBe(403);
      }
      if (route.access === 'admin-session' || route.access === 'users:write') {
        const response = await h.as({ cookie: issuerCookie })(route.method as 'GET', path(route));
        expect(response.statusCode, `ISSUER ${route.method} ${route.url}`).toBe(403);
      }
    }
  });
});
