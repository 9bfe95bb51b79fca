import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { PLATFORM_COOKIE, SESSION_LIFETIME_MS } from '../auth/credentials.js';
import { MAX_ID, NoContent, Nullable, PageQuery, Paged, responses, Timestamp } from '../core/schemas.js';
import { passkeyRoutes } from '../passkeys/routes.js';
import { Email, Member, Password, RoleSchema, Username } from '../users/schemas.js';
import { installPlatformAuth, type PlatformRoute } from './access.js';
import { platformIdentity as identity, PlatformIdentity, platformLogin } from './accounts.js';
import { platformPasskeys } from './passkeys.js';
import { addMember, changeOrganisation, createOrganisation, organisationRecord, organisationRecords, platformActivity, signOut } from './service.js';

const tags = ['Platform'];

const PlanLimit = Nullable(Type.Integer({ minimum: 0, maximum: MAX_ID, description: 'Licences that may count at once; null = no limit.' }));
const TrialLimit = Nullable(
  Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'DESIGN.md 18: ACTIVE trials it may hold at once (counts.trials); null = no limit.' }),
);
const OrganisationRecord = Type.Object({
  slug: Type.String(),
  name: Type.String(),
  planLimit: Type.Union([Type.Integer(), Type.Null()]),
  trialLimit: Type.Union([Type.Integer(), Type.Null()]),
  suspended: Type.Boolean(),
  mailEnabled: Type.Boolean({ description: 'DESIGN.md 22: false refuses licence emails (403 MAIL_DISABLED) and holds pending ones.' }),
  timezone: Type.String(),
  createdAt: Timestamp,
  counts: Type.Object({
    licences: Type.Integer(),
    countingLicences: Type.Integer({ description: 'Licences the plan limit counts now.' }),
    trials: Type.Integer({ description: 'DESIGN.md 18: non-archived ACTIVE trials, which the plan limit never counts.' }),
    products: Type.Integer(),
    members: Type.Integer(),
  }),
});
const SlugParams = Type.Object({ slug: Type.String({ maxLength: 64 }) });
const PlatformEntry = Type.Object({
  id: Type.Integer(),
  at: Timestamp,
  actor: Type.String(),
  action: Type.String({
    description: '`organisation.created`, `organisation.updated`, `organisation.suspended`, `organisation.resumed`, `member.created`, ...',
  }),
  organisation: Type.Union([Type.String(), Type.Null()]),
  details: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
});

export function platformRoutes(database: Database, config: Config, version: string, routes: PlatformRoute[]): FastifyPluginAsyncTypebox {
  const secure = config.publicUrl.startsWith('https:');

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
          body: Type.Object(
            { username: Type.String({ minLength: 1, maxLength: 200 }), password: Type.String({ minLength: 1, maxLength: 1024 }) },
            { additionalProperties: false },
          ),
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
        await signOut(database, request.platformAccount);
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
      {
        config: { platform: 'read' },
        schema: { summary: 'Every organisation with its counts', tags, response: responses({ 200: Type.Array(OrganisationRecord) }) },
      },
      async () => organisationRecords(database),
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
              trialLimit: Type.Optional(TrialLimit),
              timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            },
            { additionalProperties: false },
          ),
          response: responses({ 201: OrganisationRecord }, [409]),
        },
      },
      async (request, reply) => reply.code(201).send(await createOrganisation(database, request.platformAccount, request.body)),
    );

    app.get(
      '/organisations/:slug',
      {
        config: { platform: 'read' },
        schema: { summary: 'One organisation with its counts', tags, params: SlugParams, response: responses({ 200: OrganisationRecord }) },
      },
      async (request) => organisationRecord(database, request.params.slug),
    );

    app.put(
      '/organisations/:slug',
      {
        config: { platform: 'write' },
        schema: {
          summary: "Change an organisation's name, plan limit, trial limit, suspension or mail switch",
          description:
            'Lowering `planLimit` (or `trialLimit`) below the current count changes no licence (no trial); further issues (trial starts) are refused. A suspended organisation’s members and tokens get 403; checks go on.',
          tags,
          params: SlugParams,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
              planLimit: Type.Optional(PlanLimit),
              trialLimit: Type.Optional(TrialLimit),
              suspended: Type.Optional(Type.Boolean()),
              mailEnabled: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false, minProperties: 1 },
          ),
          response: responses({ 200: OrganisationRecord }),
        },
      },
      async (request) => changeOrganisation(database, request.platformAccount, request.params.slug, request.body),
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
            {
              username: Username,
              password: Password,
              role: RoleSchema,
              email: Type.Optional(Nullable(Email)),
              displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            },
            { additionalProperties: false },
          ),
          response: responses({ 201: Member }, [409]),
        },
      },
      async (request, reply) => reply.code(201).send(await addMember(database, request.platformAccount, request.params.slug, request.body)),
    );

    app.get(
      '/activity',
      {
        config: { platform: 'read' },
        schema: { summary: "The platform's audit trail, newest first", tags, querystring: PageQuery, response: responses({ 200: Paged(PlatformEntry) }) },
      },
      async (request) => platformActivity(database, request.query),
    );

    await app.register(passkeyRoutes(database, config, platformPasskeys(database, config, version)));
  };
}
