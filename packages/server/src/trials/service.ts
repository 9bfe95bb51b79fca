import { recordAudit } from '../audit/audit.js';
import type { Ctx } from '../core/context.js';
import { badRequest, forbidden } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { inTransaction } from '../core/transaction.js';
import { findLicenceRow, lockLicenceRow } from '../licences/repo.js';
import { findLicenceView, toLicence } from '../listings/repos/views.js';
import { installationsOf, resetEntry } from './repo.js';

/**
 * `POST /licenses/{lid}/reset-trial-ledger` (DESIGN.md 18): the trial's ledger entry never matches
 * again, so that machine and machines like it may start a new trial. ORG_ADMIN sessions and tokens
 * with licenses:write only.
 */
export async function resetTrialLedger(ctx: Ctx, lid: string) {
  const { actor } = ctx;
  if ((actor.kind === 'user' || actor.kind === 'platform') && actor.role !== 'ORG_ADMIN') {
    throw forbidden('only an organisation administrator may reset a trial ledger');
  }
  return inTransaction(ctx, async (t) => {
    const row = await lockLicenceRow(ctx.database.dialect, t, lid);
    if (row.trial !== 1) throw badRequest('only a trial has a ledger entry');
    if (row.trial_ledger_reset_at !== null) throw badRequest("the trial's ledger entry is already reset");
    await resetEntry(t, row.id, ctx.now);
    const body = toLicence(await findLicenceView(t, lid, ctx.now), ctx.now);
    await recordAudit(t, ctx, {
      action: 'licence.trial_ledger_reset',
      subjectType: 'licence',
      subjectId: lid,
      lid,
      summary: 'Reset the trial ledger: machines like this one may start a new trial',
    });
    return body;
  });
}

/** `GET /licenses/{lid}/trial-installations`: the device keys the trial was answered to, oldest first. */
export async function trialInstallations(ctx: Ctx, lid: string) {
  const row = await findLicenceRow(ctx.tenant, lid);
  if (row.trial !== 1) throw badRequest('only a trial has installations');
  return (await installationsOf(ctx.tenant, row.id)).map((i) => ({ devicePublicKey: i.device_public_key, firstSeenAt: iso(Number(i.first_seen_at)) }));
}
