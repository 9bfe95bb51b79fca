import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Timestamp } from '../core/schemas.js';
import { LidParams } from '../licences/schemas.js';
import { Licence } from '../listings/schemas.js';
import { resetTrialLedger, trialInstallations } from './service.js';

const tags = ['Licences'];

/** A trial's vendor actions that are the ledger's (DESIGN.md 18); extend and convert are the lifecycle's (licences/routes.ts). */
export const trialRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/licenses/:lid/reset-trial-ledger',
    {
      config: { access: 'licenses:write' },
      schema: {
        summary: "Reset a trial's ledger entry",
        description:
          'DESIGN.md 18: the entry never matches again, so this machine and machines like it may start a new trial. ORG_ADMIN sessions and tokens with licenses:write (ISSUER and VIEWER: 403). 400 on a licence that is not a trial, or one already reset.',
        tags,
        params: LidParams,
        body: Type.Optional(Type.Object({}, { additionalProperties: false })),
        response: responses({ 200: Licence }),
      },
    },
    async (request) => resetTrialLedger(request.ctx, request.params.lid),
  );

  app.get(
    '/licenses/:lid/trial-installations',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: "A trial's installations",
        description: 'The device keys the trial was answered to (the first 100), oldest first. 400 on a licence that is not a trial.',
        tags,
        params: LidParams,
        response: responses({ 200: Type.Array(Type.Object({ devicePublicKey: Type.String(), firstSeenAt: Timestamp })) }),
      },
    },
    async (request) => trialInstallations(request.ctx, request.params.lid),
  );
};
