import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db, DialectName } from '../db/database.js';
import type { EmailsTable, LicencesTable, MailSettingsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';

export type EmailRow = Selectable<EmailsTable>;

export const DAY_MS = 86_400_000;

/** Emails counted against the daily limit in the 86,400 s before `now`, and the oldest of them (when the count next drops). */
export async function admittedSince(t: Tenant, now: number): Promise<{ count: number; oldest: number | null }> {
  const row = await t
    .selectFrom('emails')
    .select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.min('admitted_at').as('oldest')])
    .where('admitted_at', '>', now - DAY_MS)
    .executeTakeFirstOrThrow();
  return { count: Number(row.n), oldest: row.oldest === null ? null : Number(row.oldest) };
}

export const insertEmail = (t: Tenant, values: Omit<Insertable<EmailsTable>, 'org_id'>) =>
  t.insertInto('emails', values).returningAll().executeTakeFirstOrThrow() as Promise<EmailRow>;

export const emailsOfLicence = (t: Tenant, licenceId: number) =>
  t.selectFrom('emails').selectAll().where('licence_id', '=', licenceId).orderBy('id', 'desc').execute() as Promise<EmailRow[]>;

export const emailById = (t: Tenant, id: number) => t.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirst() as Promise<EmailRow | undefined>;

/** The organisation's mail switch and name (the default sender name). */
export const orgMailState = (db: Db, orgId: number) =>
  db.selectFrom('organisations').select(['id', 'slug', 'name', 'mail_enabled', 'suspended', 'timezone']).where('id', '=', orgId).executeTakeFirst();

/** What an email is made from: the licence, its customer and product. */
const mailLicence = (t: Tenant) =>
  t
    .selectFrom('licences')
    .leftJoin('customers', 'customers.id', 'licences.customer_id')
    .innerJoin('products', 'products.id', 'licences.product_id')
    .select([
      'licences.id',
      'licences.lid',
      'licences.trial',
      'licences.revoked',
      'licences.archived',
      'licences.customer_id',
      'licences.licensee',
      'licences.issued_at',
      'licences.expires_at',
      'licences.licence_string',
      'customers.email as customer_email',
      'products.name as product_name',
      'products.product_key',
    ]);

export const licenceForMail = (t: Tenant, lid: string) => mailLicence(t).where('licences.lid', '=', lid).executeTakeFirst();

export const licenceForMailById = (t: Tenant, id: number) => mailLicence(t).where('licences.id', '=', id).executeTakeFirstOrThrow();

// The outbox (outbox.ts).

export async function deleteEmailsBefore(db: Db, createdBefore: number) {
  await db.deleteFrom('emails').where('created_at', '<', createdBefore).execute();
}

/** Organisations with emails the daily limit held. */
export async function orgsHoldingEmails(db: Db): Promise<number[]> {
  const rows = await db.selectFrom('emails').select('org_id').distinct().where('status', '=', 'pending').where('admitted_at', 'is', null).execute();
  return rows.map((r) => Number(r.org_id));
}

/** The oldest `limit` held emails. */
export async function heldEmailIds(t: Tenant, limit: number): Promise<number[]> {
  const rows = await t.selectFrom('emails').select('id').where('status', '=', 'pending').where('admitted_at', 'is', null).orderBy('id').limit(limit).execute();
  return rows.map((r) => Number(r.id));
}

/** Admits held emails (those still held for `heldReason`), due at once. */
export async function admitEmails(t: Tenant, ids: number[], now: number, heldReason: string) {
  await t
    .updateTable('emails')
    .set({ admitted_at: now, next_attempt_at: now, last_error: null })
    .where('id', 'in', ids)
    .where('last_error', '=', heldReason)
    .execute();
}

/** The next due email no lease holds, of an organisation whose mail is on; on PostgreSQL locked, skipping those another instance locked. */
export async function dueEmailId(db: Db, now: number, dialect: DialectName): Promise<number | undefined> {
  let due = db
    .selectFrom('emails')
    .innerJoin('organisations', 'organisations.id', 'emails.org_id')
    .select('emails.id')
    .where('emails.status', '=', 'pending')
    .where('emails.next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('emails.lease_until', 'is', null), eb('emails.lease_until', '<', now)]))
    .where('organisations.mail_enabled', '=', 1)
    .orderBy('emails.next_attempt_at')
    .orderBy('emails.id')
    .limit(1);
  if (dialect === 'postgres') due = due.forUpdate(['emails']).skipLocked();
  const found = await due.executeTakeFirst();
  return found === undefined ? undefined : Number(found.id);
}

/** Takes the lease while no other holds one; the email as leased, or undefined. */
export const takeLease = (db: Db, id: number, lease: string, now: number, until: number) =>
  db
    .updateTable('emails')
    .set({ lease, lease_until: until })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .returningAll()
    .executeTakeFirst() as Promise<EmailRow | undefined>;

export async function extendLease(db: Db, id: number, lease: string, until: number) {
  await db.updateTable('emails').set({ lease_until: until }).where('id', '=', id).where('lease', '=', lease).execute();
}

/** An attempt's outcome, written only while its lease still holds. */
export async function recordAttempt(t: Tenant, id: number, lease: string, change: Updateable<EmailsTable>) {
  await t.updateTable('emails').set(change).where('id', '=', id).where('lease', '=', lease).where('status', '=', 'pending').execute();
}

/** Emails pending across organisations, held ones included (the outbox gauge). */
export async function pendingEmailCount(db: Db): Promise<number> {
  const row = await db
    .selectFrom('emails')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export const memberEmail = async (db: Db, userId: number) =>
  (await db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst())?.email ?? null;

export const mailSettingsRow = (t: Tenant) => t.selectFrom('mail_settings').selectAll().executeTakeFirst();

export const updateMailSettings = (t: Tenant, set: Updateable<MailSettingsTable>) => t.updateTable('mail_settings').set(set).execute();

export const insertMailSettings = (t: Tenant, values: Omit<Insertable<MailSettingsTable>, 'org_id'>) => t.insertInto('mail_settings', values).execute();

// Erasure of personal data (erase.ts), in the order it writes.

export const licenceIdOf = (t: Tenant, lid: string) => t.selectFrom('licences').select(['id']).where('lid', '=', lid).executeTakeFirst();

export const licenceRowById = (t: Tenant, id: number) => t.selectFrom('licences').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

export const licencesOfCustomer = (t: Tenant, customerId: number) =>
  t.selectFrom('licences').select(['id', 'lid']).where('customer_id', '=', customerId).orderBy('id').execute();

/** A licence's pending emails fail with `reason`, so the outbox never sends them. */
export async function failPendingEmailsOf(t: Tenant, licenceId: number, reason: string) {
  await t
    .updateTable('emails')
    .set({ status: 'failed', last_error: reason, next_attempt_at: null, lease: null, lease_until: null })
    .where('licence_id', '=', licenceId)
    .where('status', '=', 'pending')
    .execute();
}

/** Clears the licence's machine labels; answers those it held. */
export async function eraseMachineLabels(t: Tenant, licenceId: number): Promise<string[]> {
  const rows = await t.selectFrom('machine_bindings').select('label').where('licence_id', '=', licenceId).where('label', 'is not', null).execute();
  await t.updateTable('machine_bindings').set({ label: null }).where('licence_id', '=', licenceId).execute();
  return rows.map((r) => r.label!);
}

/** Clears the addresses of the licence's emails; answers those they held. */
export async function eraseEmailAddresses(t: Tenant, licenceId: number): Promise<string[]> {
  const rows = await t.selectFrom('emails').select('to_address').where('licence_id', '=', licenceId).where('to_address', 'is not', null).execute();
  await t.updateTable('emails').set({ to_address: null }).where('licence_id', '=', licenceId).execute();
  return rows.map((r) => r.to_address!);
}

export async function setLicencePersonalData(
  t: Tenant,
  id: number,
  set: Pick<Updateable<LicencesTable>, 'notes' | 'licensee' | 'licensee_email' | 'search_text'>,
) {
  await t.updateTable('licences').set(set).where('id', '=', id).execute();
}

export async function eraseCustomerRow(t: Tenant, id: number, name: string) {
  await t.updateTable('customers').set({ name, email: null, email_lower: null, notes: null }).where('id', '=', id).execute();
}

/** The audit entries of these licences and of this customer. */
export function auditEntriesOf(t: Tenant, where: { lids: string[]; customerId?: number }) {
  return t
    .selectFrom('audit_entries')
    .select(['id', 'summary', 'details'])
    .where((eb) =>
      eb.or([
        ...(where.lids.length > 0 ? [eb('lid', 'in', where.lids)] : []),
        ...(where.customerId !== undefined ? [eb.and([eb('subject_type', '=', 'customer'), eb('subject_id', '=', String(where.customerId))])] : []),
        ...(where.lids.length > 0 ? [eb.and([eb('subject_type', '=', 'licence'), eb('subject_id', 'in', where.lids)])] : []),
      ]),
    )
    .execute();
}

/** The one edit of the append-only trail (DESIGN.md 22). */
export async function setAuditText(t: Tenant, id: number, summary: string, details: string | null) {
  await t.updateTable('audit_entries').set({ summary, details }).where('id', '=', id).execute();
}

/**
 * DESIGN.md 22 "Personal data": a customer's email, and the name beside it, out of the orders
 * FAILED or WAITING payment events keep for a retry, and out of the Paddle customers seen.
 */
export async function eraseOrderContacts(t: Tenant, email: string): Promise<void> {
  const kept = await t.selectFrom('integration_events').select(['id', 'retry_order']).where('retry_order', 'is not', null).execute();
  for (const row of kept) {
    const order = JSON.parse(row.retry_order!) as { email: string | null; name: string | null };
    if (order.email?.toLowerCase() !== email.toLowerCase()) continue;
    await t
      .updateTable('integration_events')
      .set({ retry_order: JSON.stringify({ ...order, email: null, name: null }) })
      .where('id', '=', row.id)
      .execute();
  }
  await t
    .updateTable('paddle_customers')
    .set({ email: null, name: null })
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .execute();
}
