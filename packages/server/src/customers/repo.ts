import { sql, type Selectable, type SqlBool } from 'kysely';
import { substringPattern } from '../db/database.js';
import type { CustomersTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { countLicencesBy } from '../listings/repos/views.js';
import { iso } from '../core/schemas.js';

export type CustomerRow = Selectable<CustomersTable>;

export const listCustomerRows = (t: Tenant, q?: string) => {
  let query = t.selectFrom('customers').selectAll();
  if (q) {
    const pattern = substringPattern(q);
    query = query.where(sql<SqlBool>`(lower(name) like ${pattern} escape '\\' or email_lower like ${pattern} escape '\\')`);
  }
  return query.orderBy('name').orderBy('id').execute();
};

export const findCustomerRow = (t: Tenant, id: number) =>
  t.selectFrom('customers').selectAll().where('id', '=', id).executeTakeFirst();

export const findCustomerByEmail = (t: Tenant, email: string) =>
  t.selectFrom('customers').selectAll().where('email_lower', '=', email.toLowerCase()).executeTakeFirst();

/** The oldest customer of exactly this name that has no email. */
export const findCustomerByNameWithoutEmail = (t: Tenant, name: string) =>
  t.selectFrom('customers').selectAll().where('name', '=', name).where('email_lower', 'is', null).orderBy('id').executeTakeFirst();

/** How many licences each customer holds: the count shown, and what refuses a delete. */
export const countLicences = (t: Tenant, ids: readonly number[]) => countLicencesBy(t, 'customer_id', ids);

/** A customer event's data (DESIGN.md 15), read in the change's transaction, as the API returns the customer. */
export async function customerData(t: Tenant, id: number) {
  const row = (await findCustomerRow(t, id))!;
  return { customer: toCustomer(row, (await countLicences(t, [id])).get(id) ?? 0) };
}

export function toCustomer(row: CustomerRow, licenseCount: number) {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    notes: row.notes,
    licenseCount,
    createdAt: iso(row.created_at),
    createdBy: row.created_by,
  };
}
