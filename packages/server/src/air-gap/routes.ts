import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Database } from '../db/database.js';
import { NullableTimestamp, responses, Timestamp } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { LidParams } from '../licences/schemas.js';
import { ownLicence } from '../portal/service.js';
import { activateAirGapped, deactivateAirGapped, type AirGapCaller } from './service.js';

const tags = ['Air-gapped activation'];
// Texts may arrive in groups of five with spaces and line breaks; well-formed ones are under 1,000 characters.
const Text = (description: string) => Type.String({ minLength: 1, maxLength: 8192, description });
const ActivationBody = Type.Object({ request: Text('The `SVCA1.…` text the application showed, as pasted or typed (whitespace is ignored).') }, { additionalProperties: false });
const Activation = Type.Object({
  machineId: Type.Integer(),
  activationId: Type.String(),
  until: Timestamp,
  response: Type.String({ description: 'The `SVCX1.…` text to carry back to the computer.' }),
});
const Deactivation = Type.Object({
  machineId: Type.Integer(),
  releasedAt: NullableTimestamp,
  released: Type.Boolean({ description: 'False when the seat stays: it is named in the licence, or a check has used it, or another activation holds it.' }),
});
const activationDescription =
  'DESIGN.md 14. 400 naming the problem (the request’s form, signature, licence, the product setting, a request older than 7 days); 403 `{error, reason}` with reason `SEATS_FULL`, `REVOKED`, `EXPIRED` or `NOT_YET_VALID`; 409 when the request’s nonce was already used on this licence. 201 for a new activation; the same request again, while its activation lasts, answers 200 with the same response.';
const deactivationDescription =
  'DESIGN.md 14. Verifies the `SVCD1.…` code with the activating computer’s key (400 otherwise) and ends the activation; the seat is released only when the activation made it and no check has used it. A release before the activation’s end counts towards the product’s `selfReleaseLimit` (403 past it). The same code again answers the same.';

/** DESIGN.md 14: air-gapped activation and deactivation, for the operator and for the customer in the portal. */
export function airGapRoutes(keyring: Keyring, database: Database): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/licenses/:lid/air-gap-activations',
      {
        config: { access: 'licenses:write' },
        schema: { summary: 'Activate an air-gapped computer', description: activationDescription, tags, params: LidParams, body: ActivationBody, response: responses({ 200: Activation, 201: Activation }, [409]) },
      },
      async (request, reply) => {
        const { ctx } = request;
        const caller: AirGapCaller = { database: ctx.database, tenant: ctx.tenant, actor: ctx.actor, now: ctx.now };
        const { created, answer } = await activateAirGapped(caller, keyring, request.params.lid, request.body.request);
        return reply.code(created ? 201 : 200).send(answer);
      },
    );

    app.post(
      '/licenses/:lid/air-gap-deactivations',
      {
        config: { access: 'licenses:write' },
        schema: {
          summary: 'Deactivate an air-gapped computer',
          description: `${deactivationDescription} \`force: true\` releases without counting (audited).`,
          tags,
          params: LidParams,
          body: Type.Object({ code: Text('The `SVCD1.…` code the application gave.'), force: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
          response: responses({ 200: Deactivation }),
        },
      },
      async (request) => {
        const { ctx } = request;
        const caller: AirGapCaller = { database: ctx.database, tenant: ctx.tenant, actor: ctx.actor, now: ctx.now };
        return deactivateAirGapped(caller, request.params.lid, request.body.code, request.body.force === true);
      },
    );

    app.post(
      '/portal/licenses/:lid/air-gap-activations',
      {
        config: { access: 'portal' },
        schema: { summary: 'Activate one of the customer’s air-gapped computers', description: activationDescription, tags: ['Customer portal'], params: LidParams, body: ActivationBody, response: responses({ 200: Activation, 201: Activation }, [409]) },
      },
      async (request, reply) => {
        const now = Date.now();
        await ownLicence(request.portal, request.params.lid, now);
        const caller: AirGapCaller = { database, tenant: request.portal.tenant, actor: { name: request.portal.actor }, now };
        const { created, answer } = await activateAirGapped(caller, keyring, request.params.lid, request.body.request);
        return reply.code(created ? 201 : 200).send(answer);
      },
    );

    app.post(
      '/portal/licenses/:lid/air-gap-deactivations',
      {
        config: { access: 'portal' },
        schema: {
          summary: 'Deactivate one of the customer’s air-gapped computers',
          description: deactivationDescription,
          tags: ['Customer portal'],
          params: LidParams,
          body: Type.Object({ code: Text('The `SVCD1.…` code the application gave.') }, { additionalProperties: false }),
          response: responses({ 200: Deactivation }),
        },
      },
      async (request) => {
        const now = Date.now();
        await ownLicence(request.portal, request.params.lid, now);
        return deactivateAirGapped({ database, tenant: request.portal.tenant, actor: { name: request.portal.actor }, now }, request.params.lid, request.body.code, false);
      },
    );
  };
}
