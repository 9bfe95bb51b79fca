import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { withActivations } from '../air-gap/service.js';
import { listAudit } from '../audit/audit.js';
import { ActivityQuery, AuditEntry } from '../audit/routes.js';
import type { Tenant } from '../db/tenant.js';
import { badRequest, notFound } from '../http/errors.js';
import { Id, Paged, responses } from '../http/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { confirmed } from '../http/tenancy.js';
import { idempotentRequest, Replay } from './idempotency.js';
import { ProductCache } from './opening.js';
import { claimsOf, findLicenceRow, findLicenceView, licenceViews, toBinding, toLicence, toLicenceListItem, toVersionListItem, type LicenceView } from './repo.js';
import {
  IssueBody,
  LeasePeak,
  Licence,
  LicenceListItem,
  LicenceVersion,
  LicenceVersionListItem,
  LidParams,
  MachineBinding,
  NotesBody,
  ReleaseBody,
  RenewBody,
  RevokeBody,
  VerifyBody,
  VerifyResult,
  VersionParams,
} from './schemas.js';
import {
  archiveLicence,
  CustomerNames,
  issueLicence,
  reinstateLicence,
  releaseBinding,
  renewLicence,
  restoreLicence,
  revokeLicence,
  updateNotes,
  type LicenceAnswer,
} from './service.js';
import { verifyLicenceString } from './verify.js';
import { leasePeaks, PEAK_DAYS } from './lease-peaks.js';

const tags = ['Licences'];
const MAX_LIST = 25_000;
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

async function versionRow(tenant: Tenant, { lid, versionNo }: { lid: string; versionNo: number }) {
  const licence = await findLicenceRow(tenant, lid);
  const row = await tenant
    .selectFrom('licence_versions')
    .selectAll()
    .where('licence_id', '=', licence.id)
    .where('version_no', '=', versionNo)
    .executeTakeFirst();
  if (!row) throw notFound(`licence ${lid} has no superseded term ${versionNo}`);
  return row;
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
            { productId: Type.Optional(Id()), customerId: Type.Optional(Id()) },
            { additionalProperties: false },
          ),
          response: responses({ 200: Type.Array(LicenceListItem) }),
        },
      },
      async (request) => {
        const { ctx, query } = request;
        let rows = licenceViews(ctx.tenant, ctx.now);
        if (query.productId !== undefined) rows = rows.where('licences.product_id', '=', query.productId);
        if (query.customerId !== undefined) rows = rows.where('licences.customer_id', '=', query.customerId);
        const found = (await rows.orderBy('licences.issued_at', 'desc').orderBy('licences.lid', 'desc').limit(MAX_LIST + 1).execute()) as LicenceView[];
        if (found.length > MAX_LIST) throw badRequest(`more than ${MAX_LIST} licences match: use GET /licenses/page`);
        return found.map((view) => toLicenceListItem(view, ctx.now));
      },
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
      async (request) => toLicence(await findLicenceView(request.ctx.tenant, request.params.lid, request.ctx.now), request.ctx.now),
    );

    app.get(
      '/licenses/:lid/download',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'The .lic file: the licence string and nothing else', tags, params: LidParams, response: responses({ 200: LicFile }) },
      },
      async (request, reply) => {
        const row = await findLicenceRow(request.ctx.tenant, request.params.lid);
        return sendLic(reply, row.lid, row.licence_string);
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
        schema: { summary: 'Machine bindings, live and released, oldest first', tags, params: LidParams, response: responses({ 200: Type.Array(MachineBinding) }) },
      },
      async (request) => {
        const licence = await findLicenceRow(request.ctx.tenant, request.params.lid);
        const rows = await request.ctx.tenant.selectFrom('machine_bindings').selectAll().where('licence_id', '=', licence.id).orderBy('id').execute();
        return withActivations(request.ctx.tenant, rows.map((row) => toBinding(row, request.ctx.now)));
      },
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
      async (request) => {
        const licence = await findLicenceRow(request.ctx.tenant, request.params.lid);
        return leasePeaks(request.ctx.tenant, licence.id, request.ctx.now);
      },
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
      async (request) => {
        const licence = await findLicenceRow(request.ctx.tenant, request.params.lid);
        return listAudit(request.ctx.tenant, { ...request.query, lid: licence.lid });
      },
    );

    app.get(
      '/licenses/:lid/versions',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'Superseded terms, newest first (the current one excluded)', tags, params: LidParams, response: responses({ 200: Type.Array(LicenceVersionListItem) }) },
      },
      async (request) => {
        const licence = await findLicenceRow(request.ctx.tenant, request.params.lid);
        // SPEC 4.1: newest first.
        const rows = await request.ctx.tenant
          .selectFrom('licence_versions')
          .selectAll()
          .where('licence_id', '=', licence.id)
          .orderBy('version_no', 'desc')
          .execute();
        return rows.map(toVersionListItem);
      },
    );

    app.get(
      '/licenses/:lid/versions/:versionNo',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'One superseded term with its claims and string', tags, params: VersionParams, response: responses({ 200: LicenceVersion }) },
      },
      async (request) => {
        const row = await versionRow(request.ctx.tenant, request.params);
        return { ...toVersionListItem(row), claims: claimsOf(row.licence_string), licenseString: row.licence_string };
      },
    );

    app.get(
      '/licenses/:lid/versions/:versionNo/download',
      {
        config: { access: 'licenses:read' },
        schema: { summary: 'A superseded term as a .lic file', tags, params: VersionParams, response: responses({ 200: LicFile }) },
      },
      async (request, reply) => sendLic(reply, request.params.lid, (await versionRow(request.ctx.tenant, request.params)).licence_string),
    );
  };
}
