import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { recordAudit } from '../audit/audit.js';
import { updateOrganisationTimezone } from '../orgs/repo.js';
import { type Organisation } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { isZoneName } from '../core/calendar.js';
import { badRequest } from '../core/errors.js';
import { Nullable, NullableTimestamp, iso, responses } from '../core/schemas.js';

const tags = ['Settings'];

const Settings = Type.Object({
  timezone: Type.String({ description: 'IANA zone name every chart of the organisation buckets by.' }),
  updatedAt: NullableTimestamp,
  updatedBy: Nullable(Type.String()),
});

const toSettings = (org: Organisation) => ({
  timezone: org.timezone,
  updatedAt: iso(org.settingsUpdatedAt),
  updatedBy: org.settingsUpdatedBy,
});

export const settingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/settings',
    {
      config: { access: 'member' },
      schema: { summary: "The organisation's settings", tags, response: responses({ 200: Settings }) },
    },
    async (request) => toSettings(request.ctx.org),
  );

  app.put(
    '/settings',
    {
      config: { access: 'admin-session' },
      schema: {
        summary: "Change the organisation's settings",
        tags,
        body: Type.Object({ timezone: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
        response: responses({ 200: Settings }),
      },
    },
    async (request) => {
      const { ctx } = request;
      const { timezone } = request.body;
      if (!isZoneName(timezone)) throw badRequest(`timezone: "${timezone}" is not an IANA zone name`);
      await inTransaction(ctx, async (t) => {
        await updateOrganisationTimezone(t.db, ctx.org.id, timezone, ctx.actor.name, ctx.now);
        await recordAudit(t, ctx, {
          action: 'settings.updated',
          subjectType: 'organisation',
          subjectId: ctx.org.id,
          summary: `Timezone set to ${timezone}`,
          details: { timezone: { from: ctx.org.timezone, to: timezone } },
        });
      });
      return toSettings({ ...ctx.org, timezone, settingsUpdatedAt: ctx.now, settingsUpdatedBy: ctx.actor.name });
    },
  );
};
