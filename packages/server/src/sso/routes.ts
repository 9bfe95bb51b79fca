import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Counter, type Registry } from 'prom-client';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { setSessionCookie } from '../auth/cookies.js';
import { ApiError, forbidden, notFound, tooManyRequests } from '../core/errors.js';
import { IdParams, NoContent, Nullable, NullableTimestamp, outputOnly, responses, Timestamp, withoutOutputOnly } from '../core/schemas.js';
import { deleteSsoConfig, getSsoConfig, unlinkMember, OUTPUT_ONLY, putSsoConfig, ROLE_VALUES, signInMethods, testSsoConfig } from './config.js';
import { checkReturnTo, finishSignIn, SSO_COOKIE, startSignIn } from './flow.js';

/** Starts (and links) a minute per address (DESIGN.md 21). */
const START_PER_MINUTE = 60;

const tags = ['Single sign-on'];
const Role = Type.Enum([...ROLE_VALUES]);

const RoleRule = Type.Object({ value: Type.String({ minLength: 1, maxLength: 256 }), role: Role }, { additionalProperties: false });
const LastAttempt = Nullable(
  Type.Object({
    at: Timestamp,
    outcome: Type.String({ description: '`SIGNED_IN` or the refusal code.' }),
    member: Nullable(Type.String()),
    emailDomain: Nullable(Type.String()),
    roleClaimValues: Type.Array(Type.String()),
    role: Nullable(Type.String()),
  }),
);

const SsoConfig = Type.Object({
  enabled: Type.Boolean(),
  displayName: Type.String(),
  issuer: Type.String(),
  clientId: Type.String(),
  clientSecretSet: Type.Boolean(),
  clientSecretUpdatedAt: Timestamp,
  scopes: Type.Array(Type.String()),
  allowedDomains: Type.Array(Type.String()),
  roleClaim: Nullable(Type.String()),
  roleRules: Type.Array(RoleRule),
  defaultRole: Nullable(Type.String()),
  jitProvisioning: Type.Boolean(),
  enforce: Type.Boolean(),
  breakGlass: Type.Array(Type.String()),
  redirectUri: Type.String({ description: 'Register this at the identity provider (set `LICENSOR_PUBLIC_URL` first).' }),
  verifiedAt: NullableTimestamp,
  lastAttempt: LastAttempt,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  updatedBy: Type.String(),
});

const PutBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    issuer: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'An absolute URL without query, fragment or user info; discovery is `{issuer}/.well-known/openid-configuration`.',
      }),
    ),
    clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    clientSecret: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Write-only: absent keeps the stored one.' })),
    scopes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
        minItems: 1,
        maxItems: 20,
        uniqueItems: true,
        description: 'With `openid`; default `["openid","email","profile"]`.',
      }),
    ),
    allowedDomains: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: 'Lower-case host names; an email domain must be exactly one of them.',
      }),
    ),
    roleClaim: Type.Optional(
      Nullable(Type.String({ minLength: 1, maxLength: 128, description: 'A claim name or dotted path (`realm_access.roles`); null: roles not mapped.' })),
    ),
    roleRules: Type.Optional(Type.Array(RoleRule, { maxItems: 50, description: 'The first rule whose value the claim holds gives the role.' })),
    defaultRole: Type.Optional(Type.Union([Role, Type.Null()], { description: 'The role when no rule matches; null refuses the sign-in.' })),
    jitProvisioning: Type.Optional(Type.Boolean()),
    enforce: Type.Optional(Type.Boolean()),
    breakGlass: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        maxItems: 10,
        uniqueItems: true,
        description: 'Usernames of active ORG_ADMINs with a password or passkey.',
      }),
    ),
    ...outputOnly(OUTPUT_ONLY),
  },
  { additionalProperties: false },
);

const Problem = Type.Object({ code: Type.String(), severity: Type.Union([Type.Literal('error'), Type.Literal('warning')]), message: Type.String() });
const TestResult = Type.Object({
  ok: Type.Boolean(),
  issuer: Nullable(Type.String()),
  authorizationEndpoint: Nullable(Type.String()),
  tokenEndpoint: Nullable(Type.String()),
  userinfoEndpoint: Nullable(Type.String()),
  jwksUri: Nullable(Type.String()),
  signingKeys: Nullable(Type.Integer()),
  idTokenAlgorithms: Nullable(Type.Array(Type.String())),
  pkceS256: Nullable(Type.Boolean({ description: 'null: not advertised.' })),
  scopesSupported: Nullable(Type.Array(Type.String())),
  problems: Type.Array(Problem),
});

const access = 'admin-session' as const;
const sessionNote = 'An ORG_ADMIN session (tokens, ISSUER and VIEWER get 403).';

/** DESIGN.md 21: an organisation's OIDC configuration. */
export function ssoConfigRoutes(config: Config, masterKey: Buffer): FastifyPluginAsyncTypebox {
  const base = config.ssoBase;
  const allowed = config.ssoAllowNetworks;
  return async (app) => {
    app.get(
      '/sso',
      {
        config: { access },
        schema: {
          summary: 'The single sign-on configuration',
          description: `${sessionNote} 404 when none. The client secret is never shown.`,
          tags,
          response: responses({ 200: SsoConfig }),
        },
      },
      async (request) => getSsoConfig(request.ctx, base),
    );

    app.put(
      '/sso',
      {
        config: { access },
        schema: {
          summary: 'Set up or change single sign-on',
          description: `${sessionNote} Creates the configuration (201) or changes the fields the body carries (200); output-only fields are ignored, so a GET-then-PUT changes nothing. Creating it or changing \`issuer\` runs \`test\`'s checks (400 with its \`reason\`). A platform account may only set \`enabled\` and \`enforce\` false.`,
          tags,
          body: PutBody,
          response: responses({ 200: SsoConfig, 201: SsoConfig }, [409]),
        },
      },
      async (request, reply) => {
        const { created, config: saved } = await putSsoConfig(request.ctx, masterKey, allowed, base, withoutOutputOnly(request.body, OUTPUT_ONLY));
        return reply.code(created ? 201 : 200).send(saved);
      },
    );

    app.delete(
      '/sso',
      {
        config: { access },
        schema: {
          summary: 'Remove single sign-on',
          description: `${sessionNote} Removes the configuration, every member's link and pending sign-in; single sign-on sessions end.`,
          tags,
          response: responses({ 204: NoContent }),
        },
      },
      async (request, reply) => {
        await deleteSsoConfig(request.ctx);
        return reply.code(204).send();
      },
    );

    app.delete(
      '/users/:id/sso-link',
      {
        config: { access: 'users:write' },
        schema: {
          summary: "Remove a member's single sign-on link",
          description: 'Needs `users:write`. 404 when the member is not linked; its single sign-on sessions end.',
          tags,
          params: IdParams,
          response: responses({ 204: NoContent }),
        },
      },
      async (request, reply) => {
        await unlinkMember(request.ctx, request.params.id);
        return reply.code(204).send();
      },
    );

    app.post(
      '/sso/test',
      {
        config: { access },
        schema: {
          summary: 'Test the connection to the identity provider',
          description: `${sessionNote} Runs discovery and fetches the JWKS, uncached. Error codes: DISCOVERY_FAILED, ISSUER_MISMATCH, INSECURE_URL, JWKS_FAILED, NO_SIGNING_KEYS, NO_S256; warning SCOPE_NOT_SUPPORTED.`,
          tags,
          response: responses({ 200: TestResult }),
        },
      },
      async (request) => testSsoConfig(request.ctx, allowed),
    );
  };
}

const ssoCookiePath = (slug: string) => `/o/${slug}/api/sso/`;

/** `licensor_sso_sign_ins_total{outcome}`: each callback past STATE_INVALID, by `lastAttempt`'s outcome. */
export function ssoMetrics(registry: Registry): (outcome: string) => void {
  const outcomes = new Counter({
    name: 'licensor_sso_sign_ins_total',
    help: 'Single sign-on callbacks by outcome (SIGNED_IN or the refusal code)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  return (outcome) => {
    if (outcome !== 'STATE_INVALID') outcomes.inc({ outcome });
  };
}

/** DESIGN.md 21: the sign-in's start and callback (no credential), and the sign-in page's methods. */
export function ssoFlowRoutes(database: Database, config: Config, masterKey: Buffer, counted: (outcome: string) => void): FastifyPluginAsyncTypebox {
  const base = config.ssoBase;
  const baseHost = new URL(base).host;
  const allowed = config.ssoAllowNetworks;
  const secure = base.startsWith('https:');
  return async (app) => {
    app.get(
      '/auth/methods',
      {
        config: { access: 'public' },
        schema: {
          summary: 'How people sign in here',
          description: 'No credential. `sso` is null when single sign-on is absent or disabled.',
          tags,
          response: responses({
            200: Type.Object({ sso: Nullable(Type.Object({ displayName: Type.String(), enforced: Type.Boolean(), startUrl: Type.String() })) }),
          }),
        },
      },
      async (request) => signInMethods(database, base, request.org),
    );

    app.get(
      '/sso/start',
      {
        config: { access: 'public' },
        schema: {
          summary: 'Start a single sign-on',
          description: `No credential; a browser navigates here. 302 to the identity provider with the \`${SSO_COOKIE}\` cookie, or to the sign-in page with \`ssoError\` (RATE_LIMITED, SSO_DISABLED, ORG_SUSPENDED, IDP_UNAVAILABLE). 400 for a bad \`returnTo\` or \`prompt\`. ${START_PER_MINUTE} a minute per address.`,
          tags,
          security: [],
          querystring: Type.Object(
            { returnTo: Type.Optional(Type.String({ maxLength: 1024 })), prompt: Type.Optional(Type.Enum(['login'])) },
            { additionalProperties: false },
          ),
          response: { 302: Type.Null({ description: 'To the identity provider, or to the sign-in page with `ssoError`.' }), ...responses({}) },
        },
      },
      async (request, reply) => {
        const { slug } = request.org;
        reply.header('cache-control', 'no-store');
        // The cookie must be set on the host the callback lands on.
        if (request.headers.host !== baseHost) return reply.redirect(`${base}${request.url}`, 302);
        const limit = await app.rateLimits.hit(`sso:${request.ip}`, START_PER_MINUTE);
        if (!limit.allowed)
          return reply
            .header('retry-after', String(Math.max(1, Math.ceil(limit.retryAfterSeconds))))
            .redirect(`${base}/o/${slug}/sign-in?ssoError=RATE_LIMITED`, 302);
        const returnTo = checkReturnTo(slug, request.query.returnTo);
        const answer = await startSignIn(database, masterKey, allowed, base, request.org, {
          returnTo,
          prompt: request.query.prompt,
          cookie: request.cookies[SSO_COOKIE],
        });
        if (answer.cookie) reply.setCookie(SSO_COOKIE, answer.cookie, { path: ssoCookiePath(slug), httpOnly: true, sameSite: 'lax', secure, maxAge: 600 });
        return reply.redirect(answer.location, 302);
      },
    );

    app.post(
      '/auth/sso/link',
      {
        config: { access: 'session' },
        schema: {
          summary: 'Link your account to the identity provider',
          description: `Your own session (tokens and platform sessions get 403). Answers the identity provider's address to send the browser to, with the \`${SSO_COOKIE}\` cookie; its callback links you to that identity (replacing an older link; ALREADY_LINKED when another member holds it) and signs you in. 404 when single sign-on is absent or disabled; 502 with \`reason\` IDP_UNAVAILABLE. Counted with the starts: ${START_PER_MINUTE} a minute per address.`,
          tags,
          body: Type.Optional(Type.Object({ returnTo: Type.Optional(Type.String({ maxLength: 1024 })) }, { additionalProperties: false })),
          response: responses({ 200: Type.Object({ authorizationUrl: Type.String() }) }, [429, 502]),
        },
      },
      async (request, reply) => {
        const { actor } = request.ctx;
        if (actor.kind !== 'user') throw forbidden('only a signed-in member links their own account');
        const { slug } = request.org;
        reply.header('cache-control', 'no-store');
        const limit = await app.rateLimits.hit(`sso:${request.ip}`, START_PER_MINUTE);
        if (!limit.allowed) throw tooManyRequests('too many single sign-ons were started from this address: try again in a minute', limit.retryAfterSeconds);
        const returnTo = checkReturnTo(slug, request.body?.returnTo);
        const answer = await startSignIn(database, masterKey, allowed, base, request.org, {
          returnTo,
          cookie: request.cookies[SSO_COOKIE],
          linkUserId: actor.userId,
        });
        if (answer.refused === 'IDP_UNAVAILABLE')
          throw new ApiError(502, 'the identity provider could not be reached: test the connection in Settings', {}, { reason: 'IDP_UNAVAILABLE' });
        if (answer.refused === 'ORG_SUSPENDED') throw forbidden('organisation suspended');
        if (answer.refused !== null) throw notFound('single sign-on is not turned on here');
        if (answer.cookie) reply.setCookie(SSO_COOKIE, answer.cookie, { path: ssoCookiePath(slug), httpOnly: true, sameSite: 'lax', secure, maxAge: 600 });
        return { authorizationUrl: answer.location };
      },
    );

    app.get(
      '/sso/callback',
      {
        config: { access: 'public' },
        schema: {
          summary: 'Where the identity provider sends the browser back',
          description:
            'No credential. 302 to `returnTo` with the session cookie, or to the sign-in page with `ssoError`; never a session on a refusal. Parameters the identity provider adds are ignored.',
          tags,
          security: [],
          querystring: Type.Object(
            {
              state: Type.Optional(Type.String({ maxLength: 512 })),
              code: Type.Optional(Type.String({ maxLength: 4096 })),
              error: Type.Optional(Type.String({ maxLength: 512 })),
              iss: Type.Optional(Type.String({ maxLength: 512 })),
            },
            { additionalProperties: true },
          ),
          response: { 302: Type.Null({ description: 'To `returnTo` signed in, or to the sign-in page with `ssoError`.' }), ...responses({}) },
        },
      },
      async (request, reply) => {
        reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
        const query = Object.fromEntries(Object.entries(request.query as Record<string, unknown>).filter(([, v]) => typeof v === 'string')) as Record<
          string,
          string
        >;
        const answer = await finishSignIn(database, masterKey, allowed, base, request.org, { query, cookie: request.cookies[SSO_COOKIE] });
        counted(answer.outcome);
        if (answer.session) setSessionCookie(reply, config, request.org, answer.session);
        return reply.redirect(answer.location, 302);
      },
    );
  };
}
