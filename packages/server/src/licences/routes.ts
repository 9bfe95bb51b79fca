import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ActivityQuery, AuditEntry } from '../audit/routes.js';
import { Id, Paged, responses } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { confirmed } from '../http/tenancy.js';
import { idempotentRequest, Replay } from './idempotency.js';
import { ProductCache } from './opening.js';
import {
  getLicence,
  licenceActivity,
  licenceFile,
  licenceLeasePeaks,
  licenceMachines,
  licenceVersion,
  licenceVersions,
  listLicences,
  MAX_LIST,
  versionString,
} from './reads.js';
import {
  ConvertBody,
  ExtendTrialBody,
  IssueBody,
  LicenceVersion,
  LicenceVersionListItem,
  LidParams,
  NotesBody,
  ReleaseBody,
  RenewBody,
  RevokeBody,
  VerifyBody,
  VerifyResult,
  VersionParams,
} from './schemas.js';
import { Licence, LicenceListItem } from '../listings/schemas.js';
import { LeasePeak, MachineBinding } from '../seats/schemas.js';
import {
  archiveLicence,
  CustomerNames,
  issueLicence,
  reinstateLicence,
  releaseBinding,
  convertTrial,
  extendTrial,
  renewLicence,
  restoreLicence,
  revokeLicence,
  updateNotes,
  type LicenceAnswer,
} from './service.js';
import { verifyLicenceString } from './verify.js';
import { PEAK_DAYS } from '../seats/lease-peaks.js';

const tags = ['Licences'];
const LIC_TYPE = 'application/octet-stream';
export const LicFile = { content: { [LIC_TYPE]: { schema: Type.String({ description: 'The licence string alone, no trailing newline.' }) } } };
const IdempotencyHeader = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ maxLength: 255, description: 'Repeats within 24 hours return the first answer and change nothing.' })),
});

export function sendLic(reply: FastifyReply, lid: string, text: string) {
  return reply.type(LIC_TYPE).header('content-disposition', `attachment; filename="${lid}.lic"`).send(text);
}

function sendAnswer(reply: FastifyReply, status: number, result: LicenceAnswer | Replay) {
  return result instanceof Replay ? reply.code(result.status).send(result.body) : reply.code(status).send(result);
}

export function licenceRoutes(keyring: Keyring): FastifyPluginAsyncTypebox {
  return async (app) => {
    const caches = { products: new ProductCache(), customers: new CustomerNames() };
    app.get(
      '/licenses',
      {
        config: { access: 'licenses:read' },
        schema: {
          summary: 'All licences, or one product’s or customer’s',
          description: `List form, archived licences included. Refused above ${MAX_LIST} rows: use the page listing.`,
          tags,
          querystring: Type.Object(
            {
              productId: Type.Optional(Id()),
              customerId: Type.Optional(Id()),
              trial: Type.Optional(Type.Boolean({ description: 'true: trials only (DESIGN.md 18); false: without trials.' })),
            },
            { additionalProperties: false },
          ),
          response: responses({ 200: Type.Array(LicenceListItem) }),
        },
      },
      async (request) => listLicences(request.ctx, request.query),
    );

    app.post(
      '/licenses',
      {
        config: { access: 'licenses:write', cachedCaller: true },
        schema: {
          summary: 'Issue a licence',
          description: 'Returns the full licence, signed string included. Refused with 403 at the plan’s active-licence limit.',
          tags,
          headers: IdempotencyHeader,
          body: IssueBody,
          response: responses({ 201: Licence }, [409]),
        },
      },
      async (request, reply) => {
        const idem = idempotentRequest(request.headers['idempotency-key'], 'issue', request.body);
        return sendAnswer(reply, 201, await confirmed(request, (ctx) => issueLicence(ctx, keyring, caches, request.body, idem)));
      },
    );

    app.post(
      '/licenses/verify',
      {
        config: { access: 'licenses:read' },
        schema: {
          summary: 'Verify a licence string as an application would',
          description: 'Signature and calendar only; binds nothing. The ledger is context and never changes the verdict.',
          tags,
          body: VerifyBody,
          response: responses({ 200: VerifyResult }),
        },
      },
      async (request) => verifyLicenceString(request.ctx, keyring, request.body.license),
    );

    app.get(
      '/licenses/:lid',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'One licence with its claims and signed string', tags, params: LidParams, response: responses({ 200: Licence }) },
      },
      async (request) => getLicence(request.ctx, request.params.lid),
    );

    app.get(
      '/licenses/:lid/download',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'The .lic file: the licence string and nothing else', tags, params: LidParams, response: responses({ 200: LicFile }) },
      },
      async (request, reply) => {
        const file = await licenceFile(request.ctx, request.params.lid);
        return sendLic(reply, file.lid, file.text);
      },
    );

    app.post(
      '/licenses/:lid/renew',
      {
        config: { access: 'licenses:write', cachedCaller: true },
        schema: {
          summary: 'Renew: same lid, a new signed term',
          description: 'The old string is kept as a superseded term. Without a body the product’s defaults apply.',
          tags,
          params: LidParams,
          headers: IdempotencyHeader,
          body: RenewBody,
          response: responses({ 200: Licence }, [409]),
        },
      },
      async (request, reply) => {
        const idem = idempotentRequest(request.headers['idempotency-key'], `renew ${request.params.lid}`, request.body);
        return sendAnswer(reply, 200, await confirmed(request, (ctx) => renewLicence(ctx, keyring, caches, request.params.lid, request.body, idem)));
      },
    );

    app.post(
      '/licenses/:lid/extend-trial',
      {
        config: { access: 'licenses:write', cachedCaller: true },
        schema: {
          summary: 'Extend a trial',
          description:
            'DESIGN.md 18: `{days}` (1 to 365, added to the later of now and the current end) or `{expiresAt}`; at most 365 days after the trial started. A new term, as a renewal makes one: the old term checks SUPERSEDED. 400 on a licence that is not a trial.',
          tags,
          params: LidParams,
          headers: IdempotencyHeader,
          body: ExtendTrialBody,
          response: responses({ 200: Licence }, [409]),
        },
      },
      async (request, reply) => {
        const idem = idempotentRequest(request.headers['idempotency-key'], `extend-trial ${request.params.lid}`, request.body);
        return sendAnswer(reply, 200, await confirmed(request, (ctx) => extendTrial(ctx, keyring, caches, request.params.lid, request.body, idem)));
      },
    );

    app.post(
      '/licenses/:lid/convert',
      {
        config: { access: 'licenses:write', cachedCaller: true },
        schema: {
          summary: 'Convert a trial to a paid licence',
          description:
            "DESIGN.md 18: `POST /licenses`' body without `productId`, plus `keepMachine`; issued exactly as `POST /licenses` under the trial's product → 201 with the paid licence (`convertedFromTrial`). The trial gets `trialConvertedTo` and `trialConvertedAt` and runs to its end; converting it again is a 409. 400 on a licence that is not a trial.",
          tags,
          params: LidParams,
          headers: IdempotencyHeader,
          body: ConvertBody,
          response: responses({ 201: Licence }, [409]),
        },
      },
      async (request, reply) => {
        const idem = idempotentRequest(request.headers['idempotency-key'], `convert ${request.params.lid}`, request.body);
        return sendAnswer(reply, 201, await confirmed(request, (ctx) => convertTrial(ctx, keyring, caches, request.params.lid, request.body, idem)));
      },
    );

    const action = (
      path: string,
      summary: string,
      run: (request: FastifyRequest<{ Params: { lid: string }; Body: Record<string, unknown> }>) => Promise<LicenceAnswer>,
      body = Type.Object({}, { additionalProperties: false }),
    ) =>
      app.post(
        `/licenses/:lid/${path}`,
        {
          config: { access: 'licenses:write' },
          schema: { summary, tags, params: LidParams, body, response: responses({ 200: Licence }) },
        },
        run as never,
      );

    action('revoke', 'Revoke a licence', (r) => revokeLicence(r.ctx, r.params.lid, (r.body.reason as string | null | undefined) ?? null), RevokeBody);
    action('reinstate', 'Undo a revocation', (r) => reinstateLicence(r.ctx, r.params.lid));
    action('archive', 'File a REVOKED or EXPIRED licence away', (r) => archiveLicence(r.ctx, r.params.lid));
    action('restore', 'Bring an archived licence back on the books', (r) => restoreLicence(r.ctx, r.params.lid));
    action(
      'release-binding',
      'Release machine bindings so the customer may move to new hardware',
      (r) => releaseBinding(r.ctx, r.params.lid, r.body as { machineId?: number }),
      ReleaseBody,
    );

    app.put(
      '/licenses/:lid/notes',
      {
        config: { access: 'licenses:write' },
        schema: { summary: "Replace a licence's notes", tags, params: LidParams, body: NotesBody, response: responses({ 200: Licence }) },
      },
      async (request) => updateNotes(request.ctx, request.params.lid, request.body.notes),
    );

    app.get(
      '/licenses/:lid/machines',
      {
        config: { access: 'licenses:read' },
        schema: {
          summary: 'Machine bindings, live and released, oldest first',
          tags,
          params: LidParams,
          response: responses({ 200: Type.Array(MachineBinding) }),
        },
      },
      async (request) => licenceMachines(request.ctx, request.params.lid),
    );

    app.get(
      '/licenses/:lid/lease-peaks',
      {
        config: { access: 'licenses:read' },
        schema: {
          summary: 'Daily peak of live leases',
          description: `A FLOATING licence's highest number of live leases on each of the last ${PEAK_DAYS} UTC days, oldest first (0 for a day without any); all 0 for a node-locked licence.`,
          tags,
          params: LidParams,
          response: responses({ 200: Type.Array(LeasePeak) }),
        },
      },
      async (request) => licenceLeasePeaks(request.ctx, request.params.lid),
    );

    app.get(
      '/licenses/:lid/activity',
      {
        config: { access: 'licenses:read' },
        schema: {
          summary: 'The licence’s audit trail, newest first',
          tags,
          params: LidParams,
          querystring: ActivityQuery,
          response: responses({ 200: Paged(AuditEntry) }),
        },
      },
      async (request) => licenceActivity(request.ctx, request.params.lid, request.query),
    );

    app.get(
      '/licenses/:lid/versions',
      {
        config: { access: 'licenses:read' },
        schema: {
          summary: 'Superseded terms, newest first (the current one excluded)',
          tags,
          params: LidParams,
          response: responses({ 200: Type.Array(LicenceVersionListItem) }),
        },
      },
      async (request) => licenceVersions(request.ctx, request.params.lid),
    );

    app.get(
      '/licenses/:lid/versions/:versionNo',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'One superseded term with its claims and string', tags, params: VersionParams, response: responses({ 200: LicenceVersion }) },
      },
      async (request) => licenceVersion(request.ctx, request.params.lid, request.params.versionNo),
    );

    app.get(
      '/licenses/:lid/versions/:versionNo/download',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'A superseded term as a .lic file', tags, params: VersionParams, response: responses({ 200: LicFile }) },
      },
      async (request, reply) => sendLic(reply, request.params.lid, await versionString(request.ctx, request.params.lid, request.params.versionNo)),
    );
  };
}
