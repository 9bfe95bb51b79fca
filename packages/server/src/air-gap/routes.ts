import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Access } from '../core/access.js';
import { NullableTimestamp, responses, Timestamp } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { LidParams } from '../licences/schemas.js';
import { activateAirGapped, deactivateAirGapped, type AirGapCaller } from './service.js';

// Texts may arrive in groups of five with spaces and line breaks; well-formed ones are under 1,000 characters.
const Text = (description: string) => Type.String({ minLength: 1, maxLength: 8192, description });
const ActivationBody = Type.Object(
  { request: Text('The `SVCA1.…` text the application showed, as pasted or typed (whitespace is ignored).') },
  { additionalProperties: false },
);
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
const Code = Text('The `SVCD1.…` code the application gave.');
const deactivationDescription =
  'DESIGN.md 14. Verifies the `SVCD1.…` code with the activating computer’s key (400 otherwise) and ends the activation; the seat is released only when the activation made it and no check has used it. A release before the activation’s end counts towards the product’s `selfReleaseLimit` (403 past it). The same code again answers the same.';

/**
 * Who activates and deactivates through one set of routes (DESIGN.md 14): the operator under
 * `/licenses` (operatorAirGap), or the customer in the portal under `/portal/licenses` (portal/routes.ts).
 */
export interface AirGapRealm {
  prefix: '/licenses' | '/portal/licenses';
  access: Access;
  tags: string[];
  summaries: { activate: string; deactivate: string };
  /** Whether a deactivation may be forced (released without counting, audited): the operator's alone. */
  force: boolean;
  /** The caller, once it may act on the licence the path names. */
  caller(request: FastifyRequest, lid: string): Promise<AirGapCaller>;
}

/** The Management API's realm: the request's member or token. */
export const operatorAirGap: AirGapRealm = {
  prefix: '/licenses',
  access: 'licenses:write',
  tags: ['Air-gapped activation'],
  summaries: { activate: 'Activate an air-gapped computer', deactivate: 'Deactivate an air-gapped computer' },
  force: true,
  caller: async ({ ctx }) => ({ database: ctx.database, tenant: ctx.tenant, actor: ctx.actor, now: ctx.now }),
};

/** DESIGN.md 14: air-gapped activation and deactivation of a licence, in one realm. */
export function airGapRoutes(keyring: Keyring, realm: AirGapRealm): FastifyPluginAsyncTypebox {
  const { tags } = realm;
  const DeactivationBody = realm.force
    ? Type.Object({ code: Code, force: Type.Optional(Type.Boolean()) }, { additionalProperties: false })
    : Type.Object({ code: Code }, { additionalProperties: false });
  return async (app) => {
    app.post(
      `${realm.prefix}/:lid/air-gap-activations`,
      {
        config: { access: realm.access },
        schema: {
          summary: realm.summaries.activate,
          description: activationDescription,
          tags,
          params: LidParams,
          body: ActivationBody,
          response: responses({ 200: Activation, 201: Activation }, [409]),
        },
      },
      async (request, reply) => {
        const caller = await realm.caller(request, request.params.lid);
        const { created, answer } = await activateAirGapped(caller, keyring, request.params.lid, request.body.request);
        return reply.code(created ? 201 : 200).send(answer);
      },
    );

    app.post(
      `${realm.prefix}/:lid/air-gap-deactivations`,
      {
        config: { access: realm.access },
        schema: {
          summary: realm.summaries.deactivate,
          description: realm.force ? `${deactivationDescription} \`force: true\` releases without counting (audited).` : deactivationDescription,
          tags,
          params: LidParams,
          body: DeactivationBody,
          response: responses({ 200: Deactivation }),
        },
      },
      async (request) => {
        const caller = await realm.caller(request, request.params.lid);
        return deactivateAirGapped(caller, request.params.lid, request.body.code, (request.body as { force?: boolean }).force === true);
      },
    );
  };
}
