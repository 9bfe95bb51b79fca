import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Config } from '../config.js';
import { NoContent, NullableTimestamp, responses, Timestamp } from '../core/schemas.js';
import type { Database } from '../db/database.js';
import { addPasskey, listPasskeys, removePasskey, signInWithPasskey, startAdding, startSignIn, type PasskeyOwner } from './service.js';

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
const Options = Type.Object(
  {},
  { additionalProperties: true, description: 'WebAuthn options (JSON) for navigator.credentials; pass to @simplewebauthn/browser.' },
);
const Passkey = Type.Object({ id: Type.Integer(), name: Type.String(), createdAt: Timestamp, lastUsedAt: NullableTimestamp });
const RegisterOptionsBody = Type.Object({ currentPassword: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })) }, { additionalProperties: false });
const RegisterBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }), response: Credential }, { additionalProperties: false });
const LoginBody = Type.Object({ response: Credential }, { additionalProperties: false });

const tags = ['Passkeys'];

/** DESIGN.md 9: a realm's passkeys (add, list, delete) and its sign-in with one, under `…/auth/`. */
export function passkeyRoutes<Account>(database: Database, config: Config, owner: PasskeyOwner<Account>): FastifyPluginAsyncTypebox {
  const doc = owner.routes;
  const { docs } = doc;
  return async (app) => {
    app.post(
      '/auth/passkeys/options',
      { config: doc.manage, schema: { ...docs.startAdding, tags, body: RegisterOptionsBody, response: responses({ 200: Options }) } },
      async (request) => startAdding(database, config, owner, request, request.body.currentPassword),
    );

    app.post(
      '/auth/passkeys',
      { config: doc.manage, schema: { ...docs.add, tags, body: RegisterBody, response: responses({ 201: Passkey }) } },
      async (request, reply) =>
        reply
          .code(201)
          .send(await addPasskey(database, config, owner, request, request.body.name, request.body.response as unknown as RegistrationResponseJSON)),
    );

    app.get('/auth/passkeys', { config: doc.manage, schema: { ...docs.list, tags, response: responses({ 200: Type.Array(Passkey) }) } }, async (request) =>
      listPasskeys(database, owner, request),
    );

    app.delete(
      '/auth/passkeys/:id',
      { config: doc.manage, schema: { ...docs.delete, tags, params: doc.passkeyParams, response: responses({ 204: NoContent }) } },
      async (request, reply) => {
        await removePasskey(database, owner, request, (request.params as { id: number }).id);
        return reply.code(204).send();
      },
    );

    app.post(
      '/auth/passkey/options',
      { config: doc.signIn, schema: { ...docs.startSignIn, tags, security: [], response: responses({ 200: Options }, [429]) } },
      async (request) => startSignIn(database, config, app.rateLimits, owner, request),
    );

    app.post(
      '/auth/passkey/login',
      { config: doc.signIn, schema: { ...docs.signIn, tags, security: [], body: LoginBody, response: responses({ 200: doc.identity }, [429]) } },
      async (request, reply) => signInWithPasskey(database, config, owner, request, reply, request.body.response as unknown as AuthenticationResponseJSON),
    );
  };
}
