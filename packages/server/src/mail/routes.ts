import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import { Id, IdParams, Nullable, NullableTimestamp, responses, Timestamp } from '../core/schemas.js';
import { Customer } from '../customers/schemas.js';
import { Licence } from '../listings/schemas.js';
import { eraseCustomer, eraseLicencePersonalData } from './erase.js';
import { LidParams } from '../licences/schemas.js';
import { licenceEmails, sendLicence, sendTestMail } from './service.js';

export const EmailRecord = Type.Object(
  {
    id: Id(),
    to: Nullable(Type.String({ description: 'The address as queued; null once erased.' })),
    trigger: Type.Union([Type.Literal('manual'), Type.Literal('issued'), Type.Literal('renewed')]),
    status: Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed')]),
    attempts: Type.Integer({ minimum: 0 }),
    lastError: Nullable(Type.String()),
    nextAttemptAt: NullableTimestamp,
    createdAt: Timestamp,
    createdBy: Type.String(),
    sentAt: NullableTimestamp,
    termIssuedAt: NullableTimestamp,
    portalLinkId: Nullable(Id()),
  },
  { description: 'One licence email of the outbox.' },
);

export function mailRoutes(config: Config): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/licenses/:lid/send',
      {
        config: { access: 'licenses:write' },
        schema: {
          summary: 'Email the licence to its customer',
          description:
            'Queues one email (202) with the `.lic` attachment and a fresh portal link; the outbox sends it, retrying with backoff. 503 without mail configured; 403 MAIL_DISABLED; 400 a trial, a customer without email, a revoked or archived licence; 429 MAIL_LIMIT with Retry-After.',
          tags: ['Licences'],
          params: LidParams,
          response: responses({ 202: EmailRecord }, [429, 503]),
        },
      },
      async (request, reply) => reply.code(202).send(await sendLicence(request.ctx, request.params.lid)),
    );

    app.get(
      '/licenses/:lid/emails',
      {
        config: { access: 'licenses:read' },
        schema: {
          summary: "The licence's emails, newest first",
          description: 'Kept a year.',
          tags: ['Licences'],
          params: LidParams,
          response: responses({ 200: Type.Array(EmailRecord) }),
        },
      },
      async (request) => licenceEmails(request.ctx, request.params.lid),
    );

    app.post(
      '/settings/mail/test',
      {
        config: { access: 'admin-session' },
        schema: {
          summary: 'Send a test email to yourself',
          description: "The organisation's template with sample values, to the signed-in member's own email; one attempt: 200 or 502 with the SMTP reply.",
          tags: ['Settings'],
          response: responses({ 200: Type.Object({ to: Type.String() }) }, [429, 502, 503]),
        },
      },
      async (request) => sendTestMail(request.ctx, config.publicUrl),
    );

    app.post(
      '/licenses/:lid/erase-personal-data',
      {
        config: { access: 'admin-session' },
        schema: {
          summary: "Erase a licence's personal data",
          description:
            "A trial's licenseeEmail, the notes, machine labels and the email records' addresses become null, and those values `[erased]` in the licence's audit entries; pending emails fail \"erased\" first. Ids, counts, statuses, times, the signed terms and queued webhook bodies stay. Idempotent.",
          tags: ['Licences'],
          params: LidParams,
          response: responses({ 200: Licence }),
        },
      },
      async (request) => eraseLicencePersonalData(request.ctx, request.params.lid),
    );

    app.post(
      '/customers/:id/erase',
      {
        config: { access: 'admin-session' },
        schema: {
          summary: "Erase a customer's personal data",
          description:
            'The name becomes `Erased customer <id>`, email and notes null, and each of its licences is erased as by erase-personal-data (licensee and licenseeEmail too); raises customer.updated. Idempotent.',
          tags: ['Customers'],
          params: IdParams,
          response: responses({ 200: Customer }),
        },
      },
      async (request) => eraseCustomer(request.ctx, request.params.id),
    );
  };
}
