import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import type { EmailsTable } from '../db/schema.js';
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
export const licenceForMail = (t: Tenant, lid: string) =>
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
    ])
    .where('licences.lid', '=', lid)
    .executeTakeFirst();
