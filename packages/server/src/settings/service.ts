import { recordAudit } from '../audit/audit.js';
import { isZoneName } from '../core/calendar.js';
import type { Ctx, Organisation } from '../core/context.js';
import { badRequest } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { inTransaction } from '../core/transaction.js';
import { updateOrganisationTimezone } from '../orgs/repo.js';

const toSettings = (org: Organisation) => ({
  timezone: org.timezone,
  updatedAt: iso(org.settingsUpdatedAt),
  updatedBy: org.settingsUpdatedBy,
});

export const settingsOf = (ctx: Ctx) => toSettings(ctx.org);

/** A new timezone for every chart of the organisation, audited. */
export async function updateSettings(ctx: Ctx, change: { timezone: string }) {
  const { timezone } = change;
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
}
