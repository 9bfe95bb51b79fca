import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import { isUniqueViolation, transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { PLATFORM_COOKIE, platformSession, SESSION_COOKIE, SESSION_LIFETIME_MS, type PlatformAccount } from '../auth/credentials.js';
import { hashPassword } from '../core/passwords.js';
import { type Actor, type Organisation } from '../core/context.js';
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../core/errors.js';
import { iso, MAX_ID, NoContent, Nullable, PageQuery, Paged, responses, Timestamp } from '../core/schemas.js';
import { countingLicences, tallies } from '../listings/repos/tallies.js';
import { findOrganisationBySlug, insertOrganisation, listOrganisations, updateOrganisation } from '../orgs/repo.js';
import { isZoneName } from '../core/calendar.js';
import { Email, Member, Password, RoleSchema, Username } from '../users/schemas.js';
import { insertMember } from '../users/service.js';
import { platformIdentity as identity, PlatformIdentity, platformLogin, recordPlatformAudit } from './accounts.js';
import { platformPasskeyRoutes } from '../passkeys/routes.js';

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
const tags = ['Platform'];
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const PlanLimit = Nullable(Type.Integer({ minimum: 0, maximum: MAX_ID, description: 'Licences that may count at once; null = no limit.' }));
const OrganisationRecord = Type.Object({
  slug: Type.String(),
  name: Type.String(),
  planLimit: Type.Union([Type.Integer(), Type.Null()]),
  suspended: Type.Boolean(),
  timezone: Type.String(),
  createdAt: Timestamp,
  counts: Type.Object({
    licences: Type.Integer(),
    countingLicences: Type.Integer({ description: 'Licences the plan limit counts now.' }),
    products: Type.Integer(),
    members: Type.Integer(),
  }),
});
const SlugParams = Type.Object({ slug: Type.String({ maxLength: 64 }) });
const PlatformEntry = Type.Object({
  id: Type.Integer(),
  at: Timestamp,
  actor: Type.String(),
  action: Type.String({ description: '`organisation.created`, `organisation.updated`, `organisation.suspended`, `organisation.resumed`, `member.created`, ...' }),
  organisation: Type.Union([Type.String(), Type.Null()]),
  details: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
});

async function toRecord(database: Database, org: Organisation, now: number) {
  const t = tenant(database.db, org.id);
  const count = async (table: 'licences' | 'products' | 'users') =>
    Number((await t.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  return {
    slug: org.slug,
    name: org.name,
    planLimit: org.planLimit,
    suspended: org.suspended,
    timezone: org.timezone,
    createdAt: iso(org.createdAt),
    counts: { licences: await count('licences'), countingLicences: countingLicences(await tallies({ database, org, tenant: t, now })), products: await count('products'), members: await count('users') },
  };
}

/**
 * Judges every control-plane request: no token ever (DESIGN.md 8), an organisation's session
 * is not a platform one, writes need PLATFORM_ADMIN, and unsafe requests come from our origin.
 */
function installPlatformAuth(app: FastifyInstance, database: Database, config: Config, routes: PlatformRoute[]) {
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

export function platformRoutes(database: Database, config: Config, version: string, routes: PlatformRoute[]): FastifyPluginAsyncTypebox {
  const secure = config.publicUrl.startsWith('https:');
  const actorName = (request: FastifyRequest) => `platform/${request.platformAccount.username}`;
  const orgOr404 = async (slug: string) => {
    const org = await findOrganisationBySlug(database.db, slug);
    if (!org) throw notFound(`no organisation "${slug}"`);
    return org;
  };

  return async (app) => {
    app.addHook('onSend', async (_request, reply) => {
      reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    });
    installPlatformAuth(app, database, config, routes);

    app.post(
      '/auth/login',
      {
        config: { platform: 'public' },
        schema: {
          summary: 'Sign in to the control plane',
          description: `Sets the \`${PLATFORM_COOKIE}\` cookie (Path=/, also sent to organisations' paths). A missing account, a wrong password and an inactive account all give the same 401.`,
          tags,
          security: [],
          body: Type.Object({ username: Type.String({ minLength: 1, maxLength: 200 }), password: Type.String({ minLength: 1, maxLength: 1024 }) }, { additionalProperties: false }),
          response: responses({ 200: PlatformIdentity }, [429]),
        },
      },
      async (request, reply) => {
        const { cookieValue, account } = await platformLogin(database, config, request.body, request.ip);
        reply.setCookie(PLATFORM_COOKIE, cookieValue, { path: '/', httpOnly: true, sameSite: 'strict', secure, maxAge: SESSION_LIFETIME_MS / 1000 });
        return identity(account, version);
      },
    );

    app.post(
      '/auth/logout',
      { config: { platform: 'read' }, schema: { summary: 'Sign out of the control plane', tags, response: responses({ 204: NoContent }) } },
      async (request, reply) => {
        await database.db.deleteFrom('platform_sessions').where('id', '=', request.platformAccount.sessionId).execute();
        reply.clearCookie(PLATFORM_COOKIE, { path: '/' });
        return reply.code(204).send();
      },
    );

    app.get(
      '/auth/me',
      { config: { platform: 'read' }, schema: { summary: 'Who this platform session is', tags, response: responses({ 200: PlatformIdentity }) } },
      async (request) => identity(request.platformAccount, version),
    );

    app.get(
      '/organisations',
      { config: { platform: 'read' }, schema: { summary: 'Every organisation with its counts', tags, response: responses({ 200: Type.Array(OrganisationRecord) }) } },
      async () => {
        const now = Date.now();
        return Promise.all((await listOrganisations(database.db)).map((org) => toRecord(database, org, now)));
      },
    );

    app.post(
      '/organisations',
      {
        config: { platform: 'write' },
        schema: {
          summary: 'Create an organisation',
          description: 'Give it a first administrator with `POST /platform/api/organisations/{slug}/members`.',
          tags,
          body: Type.Object(
            {
              slug: Type.String({ maxLength: 63, pattern: '^[a-z0-9][a-z0-9-]{1,62}$' }),
              name: Type.String({ minLength: 1, maxLength: 200 }),
              planLimit: Type.Optional(PlanLimit),
              timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            },
            { additionalProperties: false },
          ),
          response: responses({ 201: OrganisationRecord }, [409]),
        },
      },
      async (request, reply) => {
        const { slug, planLimit = null, timezone = 'UTC' } = request.body;
        const name = request.body.name.trim();
        if (!name) throw badRequest('name: must not be blank');
        if (!isZoneName(timezone)) throw badRequest(`timezone: "${timezone}" is not an IANA zone name`);
        const now = Date.now();
        const org = await transaction(database, async (trx) => {
          const created = await insertOrganisation(trx, { slug, name, planLimit, timezone }, now);
          if (!created) throw conflict(`an organisation with slug "${slug}" already exists`);
          await recordPlatformAudit(trx, actorName(request), now, { action: 'organisation.created', organisation: slug, details: { name, planLimit, timezone } });
          return created;
        });
        return reply.code(201).send(await toRecord(database, org, now));
      },
    );

    app.get(
      '/organisations/:slug',
      { config: { platform: 'read' }, schema: { summary: 'One organisation with its counts', tags, params: SlugParams, response: responses({ 200: OrganisationRecord }) } },
      async (request) => toRecord(database, await orgOr404(request.params.slug), Date.now()),
    );

    app.put(
      '/organisations/:slug',
      {
        config: { platform: 'write' },
        schema: {
          summary: "Change an organisation's name, plan limit or suspension",
          description: 'Lowering `planLimit` below the current count changes no licence; further issues are refused. A suspended organisation’s members and tokens get 403; checks go on.',
          tags,
          params: SlugParams,
          body: Type.Object(
            { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), planLimit: Type.Optional(PlanLimit), suspended: Type.Optional(Type.Boolean()) },
            { additionalProperties: false, minProperties: 1 },
          ),
          response: responses({ 200: OrganisationRecord }),
        },
      },
      async (request) => {
        const org = await orgOr404(request.params.slug);
        const name = request.body.name?.trim();
        if (name === '') throw badRequest('name: must not be blank');
        const change = { name, planLimit: request.body.planLimit, suspended: request.body.suspended };
        const now = Date.now();
        await transaction(database, async (trx) => {
          await updateOrganisation(trx, org.id, change);
          const actor = actorName(request);
          const changed = { ...(name !== undefined && name !== org.name ? { name: { from: org.name, to: name } } : {}), ...(change.planLimit !== undefined && change.planLimit !== org.planLimit ? { planLimit: { from: org.planLimit, to: change.planLimit } } : {}) };
          if (Object.keys(changed).length) await recordPlatformAudit(trx, actor, now, { action: 'organisation.updated', organisation: org.slug, details: changed });
          if (change.suspended !== undefined && change.suspended !== org.suspended) {
            await recordPlatformAudit(trx, actor, now, { action: change.suspended ? 'organisation.suspended' : 'organisation.resumed', organisation: org.slug });
          }
        });
        return toRecord(database, await orgOr404(org.slug), now);
      },
    );

    app.post(
      '/organisations/:slug/members',
      {
        config: { platform: 'write' },
        schema: {
          summary: 'Add a member to an organisation (its first administrator)',
          tags,
          params: SlugParams,
          body: Type.Object(
            { username: Username, password: Password, role: RoleSchema, email: Type.Optional(Nullable(Email)), displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
            { additionalProperties: false },
          ),
          response: responses({ 201: Member }, [409]),
        },
      },
      async (request, reply) => {
        const org = await orgOr404(request.params.slug);
        const passwordHash = await hashPassword(request.body.password);
        const now = Date.now();
        const account = request.platformAccount;
        const actor: Actor = { kind: 'platform', name: actorName(request), accountId: account.id, displayName: account.displayName, platformRole: account.role, role: 'ORG_ADMIN', sessionId: account.sessionId };
        try {
          const member = await transaction(database, async (trx) => {
            const created = await insertMember(tenant(trx, org.id), { actor, now }, request.body, passwordHash);
            await recordPlatformAudit(trx, actor.name, now, { action: 'member.created', organisation: org.slug, details: { username: created.username, role: created.role } });
            return created;
          });
          return reply.code(201).send(member);
        } catch (err) {
          if (isUniqueViolation(err)) throw conflict(`username "${request.body.username}" is already taken in "${org.slug}"`);
          throw err;
        }
      },
    );

    app.get(
      '/activity',
      { config: { platform: 'read' }, schema: { summary: "The platform's audit trail, newest first", tags, querystring: PageQuery, response: responses({ 200: Paged(PlatformEntry) }) } },
      async (request) => {
        const { limit = 50, offset = 0 } = request.query;
        const [rows, total] = await Promise.all([
          database.db.selectFrom('platform_audit').selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
          database.db.selectFrom('platform_audit').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
        ]);
        return {
          items: rows.map((r) => ({ id: r.id, at: iso(r.at), actor: r.actor, action: r.action, organisation: r.organisation, details: r.details === null ? null : JSON.parse(r.details) })),
          total: Number(total.n),
          limit,
          offset,
        };
      },
    );

    await app.register(platformPasskeyRoutes(database, config, version));
  };
}
