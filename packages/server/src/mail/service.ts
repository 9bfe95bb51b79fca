import type { Ctx } from '../core/context.js';
import { ApiError, badRequest, notFound, refused } from '../core/errors.js';
import { inTransaction } from '../core/transaction.js';
import { mailConfig, mailConfigured } from './config.js';
import { emailRecord, insertQueued } from './queue.js';
import { admittedSince, DAY_MS, emailsOfLicence, licenceForMail, memberEmail, orgMailState } from './repo.js';
import { templateOf } from './settings.js';
import { render } from './template.js';
import { fromOf, sendOnce } from './transport.js';

const notConfigured = () => new ApiError(503, 'mail is not configured');
const disabled = () => refused('mail is turned off for this organisation by the platform operator', 'MAIL_DISABLED');
const limitReached = (retryAfterMs: number) =>
  new ApiError(
    429,
    'the daily mail limit of this organisation is reached',
    { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
    { reason: 'MAIL_LIMIT' },
  );

/** `POST /licenses/{lid}/send` (DESIGN.md 22): queues the licence's email to its customer, refusals in the order DESIGN gives. */
export async function sendLicence(ctx: Ctx, lid: string) {
  const config = mailConfig();
  if (!mailConfigured(config)) throw notConfigured();
  const row = await inTransaction(
    ctx,
    async (t) => {
      const org = await orgMailState(t.db, ctx.org.id);
      if (!org || Number(org.mail_enabled) !== 1) throw disabled();
      const licence = await licenceForMail(t, lid);
      if (!licence) throw notFound(`no licence ${lid}`);
      if (Number(licence.trial) === 1) throw badRequest('a trial has no customer');
      if (!licence.customer_email) throw badRequest("the licence's customer has no email address");
      if (Number(licence.revoked) === 1) throw badRequest('the licence is revoked');
      if (Number(licence.archived) === 1) throw badRequest('the licence is archived');
      const { count, oldest } = await admittedSince(t, ctx.now);
      if (count >= config.dailyLimit) throw limitReached((oldest ?? ctx.now) + DAY_MS - ctx.now);
      return insertQueued(t, {
        licenceId: Number(licence.id),
        lid: licence.lid,
        to: licence.customer_email,
        trigger: 'manual',
        actor: ctx.actor.name,
        now: ctx.now,
        held: false,
      });
    },
    { lockOrganisation: true },
  );
  return emailRecord(row);
}

/** `GET /licenses/{lid}/emails`, newest first. */
export async function licenceEmails(ctx: Ctx, lid: string) {
  const licence = await licenceForMail(ctx.tenant, lid);
  if (!licence) throw notFound(`no licence ${lid}`);
  return (await emailsOfLicence(ctx.tenant, Number(licence.id))).map(emailRecord);
}

/** `POST /settings/mail/test`: the template with sample values to the member's own email, one attempt, counted against the daily limit. */
export async function sendTestMail(ctx: Ctx, publicUrl: string) {
  const config = mailConfig();
  if (!mailConfigured(config)) throw notConfigured();
  const to = ctx.actor.kind === 'user' ? await memberEmail(ctx.database.db, ctx.actor.userId) : null;
  const org = await orgMailState(ctx.database.db, ctx.org.id);
  if (!org || Number(org.mail_enabled) !== 1) throw disabled();
  if (!to) throw badRequest('your account has no email address to send the test to');
  const { count, oldest } = await admittedSince(ctx.tenant, ctx.now);
  if (count >= config.dailyLimit) throw limitReached((oldest ?? ctx.now) + DAY_MS - ctx.now);
  const template = await templateOf(ctx.database.db, ctx.org.id, ctx.org.name);
  const content = render(template, {
    licensee: 'Sample Customer',
    product: 'Sample Product',
    expiry: '2030-01-01',
    portalLink: `${publicUrl}/o/${ctx.org.slug}/portal/sample-link`,
    organisation: ctx.org.name,
    lid: 'LIC-SAMPLE',
  });
  const outcome = await sendOnce(config, {
    from: fromOf(config, template.senderName),
    to,
    ...(template.replyTo ? { replyTo: template.replyTo } : {}),
    subject: `[Test] ${content.subject}`,
    text: content.text,
    html: content.html,
    headers: { 'Auto-Submitted': 'auto-generated' },
  });
  if (!outcome.sent) throw new ApiError(502, `the SMTP relay refused the test email: ${outcome.error}`);
  return { to };
}
