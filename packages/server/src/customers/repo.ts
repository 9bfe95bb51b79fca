import { sql, type Insertable, type Selectable, type SqlBool, type Updateable } from 'kysely';
import { substringPattern } from '../db/database.js';
import type { CustomersTable } from '../db/schema.js';
import { preparedQuery, type Tenant } from '../db/tenant.js';
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

export const findCustomerRow = (t: Tenant, id: number) => t.selectFrom('customers').selectAll().where('id', '=', id).executeTakeFirst();

export const findCustomerByEmail = (t: Tenant, email: string) =>
  t.selectFrom('customers').selectAll().where('email_lower', '=', email.toLowerCase()).executeTakeFirst();

/** The oldest customer of exactly this name that has no email. */
export const findCustomerByNameWithoutEmail = (t: Tenant, name: string) =>
  t.selectFrom('customers').selectAll().where('name', '=', name).where('email_lower', 'is', null).orderBy('id').executeTakeFirst();

/** How many licences each customer holds: the count shown, and what refuses a delete. */
export const countLicences = (t: Tenant, ids: readonly number[]) => countLicencesBy(t, 'customer_id', ids);

export const insertCustomerRow = (t: Tenant, values: Omit<Insertable<CustomersTable>, 'org_id'>) =>
  t.insertInto('customers', values).returningAll().executeTakeFirstOrThrow();

/** The customer with its new columns; undefined when there is none. */
export const updateCustomerRow = (t: Tenant, id: number, set: Updateable<CustomersTable>) =>
  t.updateTable('customers').set(set).where('id', '=', id).returningAll().executeTakeFirst();

export async function deleteCustomerRow(t: Tenant, id: number): Promise<void> {
  await t.deleteFrom('customers').where('id', '=', id).execute();
}

/**
 * The customer with this email, created if there is none, in one round trip (PostgreSQL): an
 * insert that yields to the email's unique index, beside a read of the row already there. Built
 * once (preparedQuery): every issue to a customer named by email makes it.
 */
export const findOrInsertRow = preparedQuery((t, name: string, email: string, emailLower: string, now: number, actor: string) =>
  t.db
    .with('created', () =>
      t
        .insertInto('customers', { name, email, email_lower: emailLower, notes: null, created_at: now, created_by: actor })
        .onConflict((oc) => oc.columns(['org_id', 'email_lower']).doNothing())
        .returningAll(),
    )
    .selectFrom('created')
    .selectAll()
    .select(sql<number>`1`.as('created'))
    .unionAll(t.selectFrom('customers').selectAll().select(sql<number>`0`.as('created')).where('email_lower', '=', emailLower)),
);

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
