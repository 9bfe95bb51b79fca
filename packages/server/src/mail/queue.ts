import { recordAudit } from '../audit/audit.js';
import { dialectOf, lockRow, type Db } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import { iso } from '../core/schemas.js';
import { mailConfig, mailConfigured } from './config.js';
import { admittedSince, insertEmail, licenceForMail, orgMailState, type EmailRow } from './repo.js';

export type EmailTrigger = 'issued' | 'renewed' | 'manual';

/** `lastError` of an email the daily limit holds until the count allows (DESIGN.md 22). */
export const DAILY_LIMIT_HELD = 'daily mail limit';

/** An email record as the API answers it (DESIGN.md 22). */
export function emailRecord(row: EmailRow) {
  return {
    id: Number(row.id),
    to: row.to_address,
    trigger: row.trigger,
    status: row.status,
    attempts: Number(row.attempts),
    lastError: row.last_error,
    nextAttemptAt: iso(row.next_attempt_at === null ? null : Number(row.next_attempt_at)),
    createdAt: iso(Number(row.created_at))!,
    createdBy: row.created_by,
    sentAt: iso(row.sent_at === null ? null : Number(row.sent_at)),
    termIssuedAt: iso(row.term_issued_at === null ? null : Number(row.term_issued_at)),
    portalLinkId: row.portal_link_id === null ? null : Number(row.portal_link_id),
  };
}
export type EmailRecord = ReturnType<typeof emailRecord>;

/**
 * Inserts one email for `licenceId` to `to`, counted against the daily limit now or, past it, held
 * pending with `lastError` "daily mail limit" until the count allows. The caller holds the
 * organisation row's lock. Audited `licence.sent`.
 */
export async function insertQueued(
  t: Tenant,
  input: { licenceId: number; lid: string; to: string; trigger: EmailTrigger; actor: string; now: number; held: boolean },
): Promise<EmailRow> {
  const row = await insertEmail(t, {
    licence_id: input.licenceId,
    to_address: input.to,
    trigger: input.trigger,
    status: 'pending',
    attempts: 0,
    last_error: input.held ? DAILY_LIMIT_HELD : null,
    next_attempt_at: input.held ? null : input.now,
    lease: null,
    lease_until: null,
    admitted_at: input.held ? null : input.now,
    created_at: input.now,
    created_by: input.actor,
    sent_at: null,
    term_issued_at: null,
    portal_link_id: null,
  });
  await recordAudit(
    t,
    { actor: { name: input.actor }, now: input.now },
    {
      action: 'licence.sent',
      subjectType: 'licence',
      subjectId: input.lid,
      lid: input.lid,
      summary: `Licence ${input.lid} queued for email to ${input.to}`,
      details: { emailId: Number(row.id), to: input.to, trigger: input.trigger },
    },
  );
  return row;
}

/**
 * Queues the licence's email in the caller's transaction, as an integration's issue or renewal
 * does (DESIGN.md 22): nothing when mail is not configured, the control plane turned the
 * organisation's mail off, or the licence is a trial, revoked, archived or its customer has no
 * email; past the daily limit it is queued held. Takes the organisation row's lock. Returns the
 * email record, or null when nothing was queued.
 */
export async function queueLicenceEmail(
  trx: Db,
  input: { orgId: string | number; lid: string; trigger: 'issued' | 'renewed' | 'manual'; actor: string; now?: number },
): Promise<EmailRecord | null> {
  const config = mailConfig();
  if (!mailConfigured(config)) return null;
  const orgId = Number(input.orgId);
  const now = input.now ?? Date.now();
  await lockRow({ dialect: dialectOf(trx) }, trx, 'organisations', orgId);
  const org = await orgMailState(trx, orgId);
  if (!org || Number(org.mail_enabled) !== 1) return null;
  const t = tenant(trx, orgId);
  const licence = await licenceForMail(t, input.lid);
  if (!licence || Number(licence.trial) === 1 || Number(licence.revoked) === 1 || Number(licence.archived) === 1 || !licence.customer_email) return null;
  const { count } = await admittedSince(t, now);
  const row = await insertQueued(t, {
    licenceId: Number(licence.id),
    lid: licence.lid,
    to: licence.customer_email,
    trigger: input.trigger,
    actor: input.actor,
    now,
    held: count >= config.dailyLimit,
  });
  return emailRecord(row);
}
