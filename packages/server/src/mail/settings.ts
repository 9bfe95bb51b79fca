import type { Db } from '../db/database.js';
import { invalid } from '../core/errors.js';
import { tenant } from '../db/tenant.js';
import { EMAIL, senderNameProblem } from '../config.js';
import { mailConfig, mailConfigured } from './config.js';
import { admittedSince, insertMailSettings, mailSettingsRow, orgMailState, updateMailSettings } from './repo.js';
import { checkPlaceholders, DEFAULT_HTML, DEFAULT_SUBJECT, DEFAULT_TEXT } from './template.js';

/** The template fields a `PUT /settings` `mail` may carry; null restores the default. */
export interface MailChange {
  senderName?: string | null;
  replyTo?: string | null;
  subject?: string | null;
  text?: string | null;
  html?: string | null;
}

export interface MailTemplate {
  senderName: string;
  replyTo: string | null;
  subject: string;
  text: string;
  html: string;
}

const COLUMNS = { senderName: 'sender_name', replyTo: 'reply_to', subject: 'subject', text: 'text_body', html: 'html_body' } as const;
export const MAIL_FIELDS = Object.keys(COLUMNS) as Array<keyof typeof COLUMNS>;

/** The template in force: the organisation's fields, each null one its default. */
export async function templateOf(db: Db, orgId: number, orgName: string): Promise<MailTemplate> {
  const row = await mailSettingsRow(tenant(db, orgId));
  return {
    senderName: row?.sender_name ?? orgName,
    replyTo: row?.reply_to ?? null,
    subject: row?.subject ?? DEFAULT_SUBJECT,
    text: row?.text_body ?? DEFAULT_TEXT,
    html: row?.html_body ?? DEFAULT_HTML,
  };
}

const length = (value: string) => [...value].length;

/** 400 naming the field of the first rule broken. */
export function checkMailChange(change: MailChange): void {
  const { senderName, replyTo, subject, text, html } = change;
  if (typeof senderName === 'string') {
    const problem = senderNameProblem(senderName);
    if (problem) throw invalid('mail.senderName', problem);
  }
  if (typeof replyTo === 'string' && (!EMAIL.test(replyTo) || replyTo.length > 254)) throw invalid('mail.replyTo', 'must be an email address, or empty');
  const bounded = { subject: [subject, 200], text: [text, 20_000], html: [html, 100_000] } as const;
  for (const [field, [value, max]] of Object.entries(bounded)) {
    if (typeof value !== 'string') continue;
    if (length(value) < 1 || length(value) > max) throw invalid(`mail.${field}`, `must be 1 to ${max.toLocaleString('en-GB')} characters`);
    checkPlaceholders(field, value);
  }
}

/** Writes the fields given (null: the default again); returns the names of those that changed. */
export async function saveMailChange(db: Db, orgId: number, change: MailChange, actor: string, now: number): Promise<string[]> {
  const t = tenant(db, orgId);
  const row = await mailSettingsRow(t);
  const next: Record<string, string | null> = {};
  const changed: string[] = [];
  for (const field of MAIL_FIELDS) {
    if (!(field in change)) continue;
    const column = COLUMNS[field];
    const value = change[field] ?? null;
    const before = (row?.[column] as string | null | undefined) ?? null;
    next[column] = value;
    if (value !== before) changed.push(`mail.${field}`);
  }
  if (changed.length === 0) return [];
  if (row) await updateMailSettings(t, { ...next, updated_at: now, updated_by: actor });
  else
    await insertMailSettings(t, {
      sender_name: null,
      reply_to: null,
      subject: null,
      text_body: null,
      html_body: null,
      ...next,
      updated_at: now,
      updated_by: actor,
    });
  return changed;
}

/** `GET /settings`'s `mail`: the template in force and the deployment's state for the organisation. */
export async function mailSettingsOf(db: Db, orgId: number, orgName: string, now: number) {
  const config = mailConfig();
  const org = await orgMailState(db, orgId);
  return {
    ...(await templateOf(db, orgId, orgName)),
    configured: mailConfigured(config),
    enabled: Number(org?.mail_enabled ?? 1) === 1,
    from: config.from,
    dailyLimit: config.dailyLimit,
    dailyUsed: (await admittedSince(tenant(db, orgId), now)).count,
  };
}
