import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Nullable, NullableTimestamp, responses } from '../core/schemas.js';
import { settingsOf, updateSettings } from './service.js';

const tags = ['Settings'];

const MailSettings = Type.Object({
  senderName: Type.String({ description: 'The name before " via …" in From; default the organisation name.' }),
  replyTo: Nullable(Type.String()),
  subject: Type.String(),
  text: Type.String(),
  html: Type.String(),
  configured: Type.Boolean({ description: 'Whether the deployment has an SMTP relay (LICENSOR_SMTP_URL and LICENSOR_MAIL_FROM).' }),
  enabled: Type.Boolean({ description: "The control plane's mailEnabled for this organisation." }),
  from: Nullable(Type.String()),
  dailyLimit: Type.Integer(),
  dailyUsed: Type.Integer({ description: 'Emails admitted in the last 86,400 s.' }),
});

const Settings = Type.Object({
  timezone: Type.String({ description: 'IANA zone name every chart of the organisation buckets by.' }),
  updatedAt: NullableTimestamp,
  updatedBy: Nullable(Type.String()),
  mail: MailSettings,
});

const MailBody = Type.Object(
  {
    senderName: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
    replyTo: Type.Optional(Nullable(Type.String({ maxLength: 254 }))),
    subject: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    text: Type.Optional(Nullable(Type.String({ maxLength: 20_000 }))),
    html: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
  },
  {
    additionalProperties: false,
    description:
      'The template fields given replace those saved; null restores the default. Placeholders: {{licensee}}, {{product}}, {{expiry}}, {{portalLink}}, {{organisation}}, {{lid}}.',
  },
);

export const settingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/settings',
    {
      config: { access: 'member' },
      schema: { summary: "The organisation's settings", tags, response: responses({ 200: Settings }) },
    },
    async (request) => settingsOf(request.ctx),
  );

  app.put(
    '/settings',
    {
      config: { access: 'admin-session' },
      schema: {
        summary: "Change the organisation's settings (timezone, email template or both)",
        tags,
        body: Type.Object(
          { timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })), mail: Type.Optional(MailBody) },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: responses({ 200: Settings }),
      },
    },
    async (request) => updateSettings(request.ctx, request.body),
  );
};
