import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { recordAudit } from '../audit/audit.js';
import { NO_USERNAME, openSession, signInGate } from '../auth/login.js';
import { identity, Identity, setSessionCookie } from '../auth/routes.js';
import { verifyPassword } from '../core/passwords.js';
import type { Config } from '../config.js';
import { transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { badRequest, forbidden, notFound, tooManyRequests } from '../core/errors.js';
import { Id, iso, NoContent, NullableTimestamp, responses, Slug, Timestamp } from '../core/schemas.js';
import { openPlatformSession, platformIdentity, PlatformIdentity, platformSignInGate, recordPlatformAudit } from '../platform/accounts.js';
import { PLATFORM_COOKIE, SESSION_LIFETIME_MS } from '../auth/credentials.js';
import { authenticationOptions, passkeyRefused, registrationOptions, verifyAuthentication, verifyRegistration, type Realm } from './webauthn.js';

// DESIGN.md 9: requests for sign-in options are limited per address.
const OPTIONS_PER_MINUTE = 60;

const text = (max: number) => Type.String({ maxLength: max });
/** What `@simplewebauthn/browser` sends: the credential's fields, each bounded; more are ignored. */
const Credential = Type.Object({
  id: text(1024),
  rawId: text(1024),
  type: Type.Literal('public-key'),
  authenticatorAttachment: Type.Optional(text(32)),
  clientExtensionResults: Type.Object({}, { additionalProperties: true }),
  response: Type.Object({
    clientDataJSON: text(8192),
    attestationObject: Type.Optional(text(65_536)),
    authenticatorData: Type.Optional(text(8192)),
    signature: Type.Optional(text(2048)),
    userHandle: Type.Optional(text(1024)),
    publicKey: Type.Optional(text(8192)),
    publicKeyAlgorithm: Type.Optional(Type.Integer({ minimum: -65_536, maximum: 65_536 })),
    transports: Type.Optional(Type.Array(text(32), { maxItems: 10 })),
  }),
});
const Options = Type.Object({}, { additionalProperties: true, description: 'WebAuthn options (JSON) for navigator.credentials; pass to @simplewebauthn/browser.' });
const Passkey = Type.Object({ id: Type.Integer(), name: Type.String(), createdAt: Timestamp, lastUsedAt: NullableTimestamp });
const RegisterOptionsBody = Type.Object({ currentPassword: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })) }, { additionalProperties: false });
const RegisterBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }), response: Credential }, { additionalProperties: false });
const LoginBody = Type.Object({ response: Credential }, { additionalProperties: false });
const PasskeyParams = Type.Object({ slug: Slug, id: Id() });
const PlatformPasskeyParams = Type.Object({ id: Id() });

const toPasskey = (row: { id: number; name: string; created_at: number; last_used_at: number | null }) => ({
  id: row.id,
  name: row.name,
  createdAt: iso(row.created_at),
  lastUsedAt: iso(row.last_used_at),
});

const tags = ['Passkeys'];
const description = 'A signed-in person only: tokens, and platform sessions inside an organisation, get 403 (DESIGN.md 9).';

/** Who may manage passkeys here: a signed-in member, never a token or a platform session. */
function member(request: FastifyRequest) {
  const { actor } = request.ctx;
  if (actor.kind !== 'user') throw forbidden('only a signed-in member manages passkeys here');
  return actor;
}

/** DESIGN.md 9 for an organisation's members, under `/o/{slug}/api/auth/`. */
export function memberPasskeyRoutes(database: Database, config: Config, version: string): FastifyPluginAsyncTypebox {
  return async (app) => {
    const realm = (request: FastifyRequest): Realm => `org:${request.org.id}`;

    app.post(
      '/auth/passkeys/options',
      {
        config: { access: 'session' },
        schema: { summary: 'Start adding a passkey', description: `${description} With a password, the current one is required (400 when wrong).`, tags, body: RegisterOptionsBody, response: responses({ 200: Options }) },
      },
      async (request) => {
        const actor = member(request);
        const user = await request.ctx.tenant.selectFrom('users').selectAll().where('id', '=', actor.userId).executeTakeFirstOrThrow();
        if (user.password_hash !== null && !(await verifyPassword(request.body.currentPassword ?? '', user.password_hash))) {
          throw badRequest('currentPassword is wrong');
        }
        const existing = await request.ctx.tenant.selectFrom('passkeys').selectAll().where('user_id', '=', user.id).execute();
        return registrationOptions(database.db, config, realm(request), { id: user.id, username: user.username, displayName: user.display_name }, existing, request.ctx.now);
      },
    );

    app.post(
      '/auth/passkeys',
      { config: { access: 'session' }, schema: { summary: 'Add a passkey', description, tags, body: RegisterBody, response: responses({ 201: Passkey }) } },
      async (request, reply) => {
        const actor = member(request);
        const { ctx } = request;
        const credential = await verifyRegistration(database, config, realm(request), actor.userId, request.body.response as unknown as RegistrationResponseJSON, ctx.now);
        const row = await transaction(database, async (trx) => {
          const t = tenant(trx, ctx.org.id);
          const created = await t
            .insertInto('passkeys', { user_id: actor.userId, credential_id: credential.credentialId, public_key: credential.publicKey, counter: credential.counter, transports: credential.transports, name: request.body.name, created_at: ctx.now, last_used_at: null })
            .returningAll()
            .executeTakeFirstOrThrow();
          await recordAudit(t, ctx, { action: 'passkey.registered', subjectType: 'user', subjectId: actor.userId, summary: `${actor.name} added passkey “${created.name}”` });
          return created;
        });
        return reply.code(201).send(toPasskey(row));
      },
    );

    app.get(
      '/auth/passkeys',
      { config: { access: 'session' }, schema: { summary: 'Your passkeys', description, tags, response: responses({ 200: Type.Array(Passkey) }) } },
      async (request) => {
        const actor = member(request);
        return (await request.ctx.tenant.selectFrom('passkeys').selectAll().where('user_id', '=', actor.userId).orderBy('id').execute()).map(toPasskey);
      },
    );

    app.delete(
      '/auth/passkeys/:id',
      { config: { access: 'session' }, schema: { summary: 'Delete one of your passkeys', description, tags, params: PasskeyParams, response: responses({ 204: NoContent }) } },
      async (request, reply) => {
        const actor = member(request);
        const { ctx } = request;
        await transaction(database, async (trx) => {
          const t = tenant(trx, ctx.org.id);
          const row = await t.selectFrom('passkeys').select(['id', 'name']).where('id', '=', request.params.id).where('user_id', '=', actor.userId).executeTakeFirst();
          if (!row) throw notFound(`no passkey ${request.params.id}`);
          await t.deleteFrom('passkeys').where('id', '=', row.id).execute();
          await recordAudit(t, ctx, { action: 'passkey.deleted', subjectType: 'user', subjectId: actor.userId, summary: `${actor.name} deleted passkey “${row.name}”` });
        });
        return reply.code(204).send();
      },
    );

    app.post(
      '/auth/passkey/options',
      { config: { access: 'public' }, schema: { summary: 'Start a passkey sign-in', description: 'The challenge is single-use, lasts five minutes and belongs to this organisation. 60 a minute per address.', tags, security: [], response: responses({ 200: Options }, [429]) } },
      async (request) => {
        const now = Date.now();
        const decision = await app.rateLimits.hit(`passkey:member:${request.ip}`, OPTIONS_PER_MINUTE, now);
        if (!decision.allowed) throw tooManyRequests('too many passkey sign-in requests from this address', decision.retryAfterSeconds);
        if (request.org.suspended) throw forbidden('organisation suspended');
        return authenticationOptions(database.db, config, realm(request), now);
      },
    );

    app.post(
      '/auth/passkey/login',
      {
        config: { access: 'public' },
        schema: { summary: 'Sign in with a passkey', description: 'Sets the session cookie as a password sign-in does. Every failure is the same 401, counted in the sign-in limits.', tags, security: [], body: LoginBody, response: responses({ 200: Identity }, [429]) },
      },
      async (request, reply) => {
        const now = Date.now();
        const org = request.org;
        const fail = await signInGate(database, config, org, NO_USERNAME, request.ip, now);
        const t = tenant(database.db, org.id);
        try {
          const { passkey, counter } = await verifyAuthentication(
            database,
            config,
            realm(request),
            request.body.response as unknown as AuthenticationResponseJSON,
            (credentialId) => t.selectFrom('passkeys').selectAll().where('credential_id', '=', credentialId).executeTakeFirst(),
            now,
          );
          const user = await t.selectFrom('users').selectAll().where('id', '=', passkey.user_id).executeTakeFirst();
          if (!user || user.active !== 1) throw passkeyRefused();
          await t.updateTable('passkeys').set({ counter, last_used_at: now }).where('id', '=', passkey.id).execute();
          const { cookieValue } = await openSession(database, org, user, NO_USERNAME, request.ip, now);
          setSessionCookie(reply, config, org, cookieValue);
          return identity(org, { username: user.username, displayName: user.display_name, role: user.role }, version);
        } catch {
          return fail('passkey not accepted');
        }
      },
    );
  };
}

/** The same for platform accounts, under `/platform/api/auth/` (their passkeys are theirs alone). */
export function platformPasskeyRoutes(database: Database, config: Config, version: string): FastifyPluginAsyncTypebox {
  const realm: Realm = 'platform';
  const secure = config.publicUrl.startsWith('https:');
  return async (app) => {
    app.post(
      '/auth/passkeys/options',
      { config: { platform: 'read' }, schema: { summary: 'Start adding a passkey to this platform account', tags, body: RegisterOptionsBody, response: responses({ 200: Options }) } },
      async (request) => {
        const account = await database.db.selectFrom('platform_accounts').selectAll().where('id', '=', request.platformAccount.id).executeTakeFirstOrThrow();
        if (!(await verifyPassword(request.body.currentPassword ?? '', account.password_hash))) throw badRequest('currentPassword is wrong');
        const existing = await database.db.selectFrom('platform_passkeys').selectAll().where('account_id', '=', account.id).execute();
        return registrationOptions(database.db, config, realm, { id: account.id, username: account.username, displayName: account.display_name }, existing, Date.now());
      },
    );

    app.post(
      '/auth/passkeys',
      { config: { platform: 'read' }, schema: { summary: 'Add a passkey to this platform account', tags, body: RegisterBody, response: responses({ 201: Passkey }) } },
      async (request, reply) => {
        const account = request.platformAccount;
        const now = Date.now();
        const credential = await verifyRegistration(database, config, realm, account.id, request.body.response as unknown as RegistrationResponseJSON, now);
        const row = await transaction(database, async (trx) => {
          const created = await trx
            .insertInto('platform_passkeys')
            .values({ account_id: account.id, credential_id: credential.credentialId, public_key: credential.publicKey, counter: credential.counter, transports: credential.transports, name: request.body.name, created_at: now, last_used_at: null })
            .returningAll()
            .executeTakeFirstOrThrow();
          await recordPlatformAudit(trx, `platform/${account.username}`, now, { action: 'passkey.registered', organisation: null, details: { name: created.name } });
          return created;
        });
        return reply.code(201).send(toPasskey(row));
      },
    );

    app.get(
      '/auth/passkeys',
      { config: { platform: 'read' }, schema: { summary: "This platform account's passkeys", tags, response: responses({ 200: Type.Array(Passkey) }) } },
      async (request) => (await database.db.selectFrom('platform_passkeys').selectAll().where('account_id', '=', request.platformAccount.id).orderBy('id').execute()).map(toPasskey),
    );

    app.delete(
      '/auth/passkeys/:id',
      { config: { platform: 'read' }, schema: { summary: 'Delete one of this account’s passkeys', tags, params: PlatformPasskeyParams, response: responses({ 204: NoContent }) } },
      async (request, reply) => {
        const account = request.platformAccount;
        await transaction(database, async (trx) => {
          const row = await trx.selectFrom('platform_passkeys').select(['id', 'name']).where('id', '=', request.params.id).where('account_id', '=', account.id).executeTakeFirst();
          if (!row) throw notFound(`no passkey ${request.params.id}`);
          await trx.deleteFrom('platform_passkeys').where('id', '=', row.id).execute();
          await recordPlatformAudit(trx, `platform/${account.username}`, Date.now(), { action: 'passkey.deleted', organisation: null, details: { name: row.name } });
        });
        return reply.code(204).send();
      },
    );

    app.post(
      '/auth/passkey/options',
      { config: { platform: 'public' }, schema: { summary: 'Start a passkey sign-in to the control plane', tags, security: [], response: responses({ 200: Options }, [429]) } },
      async (request) => {
        const now = Date.now();
        const decision = await app.rateLimits.hit(`passkey:platform:${request.ip}`, OPTIONS_PER_MINUTE, now);
        if (!decision.allowed) throw tooManyRequests('too many passkey sign-in requests from this address', decision.retryAfterSeconds);
        return authenticationOptions(database.db, config, realm, now);
      },
    );

    app.post(
      '/auth/passkey/login',
      { config: { platform: 'public' }, schema: { summary: 'Sign in to the control plane with a passkey', tags, security: [], body: LoginBody, response: responses({ 200: PlatformIdentity }, [429]) } },
      async (request, reply) => {
        const now = Date.now();
        const fail = await platformSignInGate(database, config, NO_USERNAME, request.ip, now);
        try {
          const { passkey, counter } = await verifyAuthentication(
            database,
            config,
            realm,
            request.body.response as unknown as AuthenticationResponseJSON,
            (credentialId) => database.db.selectFrom('platform_passkeys').selectAll().where('credential_id', '=', credentialId).executeTakeFirst(),
            now,
          );
          const account = await database.db.selectFrom('platform_accounts').selectAll().where('id', '=', passkey.account_id).executeTakeFirst();
          if (!account || account.active !== 1) throw passkeyRefused();
          await database.db.updateTable('platform_passkeys').set({ counter, last_used_at: now }).where('id', '=', passkey.id).execute();
          const opened = await openPlatformSession(database, account, NO_USERNAME, request.ip, now);
          reply.setCookie(PLATFORM_COOKIE, opened.cookieValue, { path: '/', httpOnly: true, sameSite: 'strict', secure, maxAge: SESSION_LIFETIME_MS / 1000 });
          return platformIdentity(opened.account, version);
        } catch {
          return fail('passkey not accepted');
        }
      },
    );
  };
}
