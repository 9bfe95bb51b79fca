import { recordAudit, type Author } from '../audit/audit.js';
import { isUniqueViolation, type DialectName } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { conflict, invalid, notFound } from '../core/errors.js';
import {
  countLicences,
  customerData,
  deleteCustomerRow,
  findOrInsertRow,
  insertCustomerRow,
  updateCustomerRow,
  findCustomerByEmail,
  findCustomerByNameWithoutEmail,
  findCustomerRow,
  listCustomerRows,
  toCustomer,
  type CustomerRow,
} from './repo.js';
import type { CustomerInput } from './schemas.js';

const licenceCount = async (t: Tenant, id: number) => (await countLicences(t, [id])).get(id) ?? 0;

function columns(input: CustomerInput) {
  if (!input.name.trim()) throw invalid('name', 'must not be blank');
  const email = input.email ?? null;
  return { name: input.name, email, email_lower: email?.toLowerCase() ?? null, notes: input.notes ?? null };
}

async function withUniqueEmail<T>(email: string | null | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`email: another customer already has ${email}`);
    throw err;
  }
}

async function insertCustomer(t: Tenant, by: Author, input: CustomerInput): Promise<CustomerRow> {
  const row = await insertCustomerRow(t, { ...columns(input), created_at: by.now, created_by: by.actor.name });
  await auditCreated(t, by, row);
  return row;
}

const auditCreated = (t: Tenant, by: Author, row: CustomerRow) =>
  recordAudit(t, by, {
    action: 'customer.created',
    subjectType: 'customer',
    subjectId: row.id,
    event: () => customerData(t, row.id),
    summary: `Created customer ${row.name}`,
    details: { name: row.name, email: row.email },
  });

/** findOrInsertRow's customer; undefined in the one case it sees none: another transaction committed it in between. */
async function findOrInsertByEmail(t: Tenant, by: Author, who: { name: string; email: string }) {
  const { name, email, email_lower } = columns(who);
  const [row] = await findOrInsertRow(t, name, email!, email_lower!, by.now, by.actor.name);
  if (!row) return undefined;
  const { created, ...customer } = row;
  if (created === 1) await auditCreated(t, by, customer);
  return customer;
}

/**
 * The customer a licence is issued to (DESIGN.md 3): an existing email finds its customer (the
 * name is left as it is); no email finds the customer of exactly that name without an email;
 * otherwise a new customer is created. Call it inside the issuing transaction, holding the
 * customer's lock, so two issues at once do not create the same customer twice.
 */
export async function findOrCreateCustomer(
  t: Tenant,
  dialect: DialectName,
  actor: string,
  now: number,
  who: { name: string; email: string | null },
): Promise<CustomerRow> {
  const by = { actor: { name: actor }, now };
  if (who.email !== null && dialect === 'postgres') {
    const found = await findOrInsertByEmail(t, by, { name: who.name, email: who.email });
    if (found) return found;
  }
  const found = who.email === null ? await findCustomerByNameWithoutEmail(t, who.name) : await findCustomerByEmail(t, who.email);
  return found ?? insertCustomer(t, by, who);
}

export async function listCustomers(ctx: Ctx, q?: string) {
  const rows = await listCustomerRows(ctx.tenant, q);
  const counts = await countLicences(
    ctx.tenant,
    rows.map((row) => row.id),
  );
  return rows.map((row) => toCustomer(row, counts.get(row.id) ?? 0));
}

export async function getCustomer(ctx: Ctx, id: number) {
  const row = await findCustomerRow(ctx.tenant, id);
  if (!row) throw notFound(`no customer ${id}`);
  return toCustomer(row, await licenceCount(ctx.tenant, id));
}

export async function createCustomer(ctx: Ctx, input: CustomerInput) {
  return withUniqueEmail(input.email, () => inTransaction(ctx, async (t) => toCustomer(await insertCustomer(t, ctx, input), 0)));
}

export async function updateCustomer(ctx: Ctx, id: number, input: CustomerInput) {
  const values = columns(input);
  return withUniqueEmail(input.email, () =>
    inTransaction(ctx, async (t) => {
      const row = await updateCustomerRow(t, id, values);
      if (!row) throw notFound(`no customer ${id}`);
      await recordAudit(t, ctx, {
        action: 'customer.updated',
        subjectType: 'customer',
        subjectId: id,
        event: () => customerData(t, id),
        summary: `Updated customer ${row.name}`,
        details: { name: row.name, email: row.email },
      });
      return toCustomer(row, await licenceCount(t, id));
    }),
  );
}

export async function deleteCustomer(ctx: Ctx, id: number): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const row = await findCustomerRow(t, id);
    if (!row) throw notFound(`no customer ${id}`);
    if ((await licenceCount(t, id)) > 0) throw conflict('the customer holds licences: it cannot be deleted');
    // Before the row goes: its webhook event carries the customer.
    await recordAudit(t, ctx, {
      action: 'customer.deleted',
      subjectType: 'customer',
      subjectId: id,
      event: () => customerData(t, id),
      summary: `Deleted customer ${row.name}`,
      details: { name: row.name, email: row.email },
    });
    await deleteCustomerRow(t, id);
  });
}
