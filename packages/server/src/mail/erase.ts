import { recordAudit } from '../audit/audit.js';
import type { Ctx } from '../core/context.js';
import { notFound } from '../core/errors.js';
import { inTransaction } from '../core/transaction.js';
import { lockRow } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import { countLicences, customerData, findCustomerRow, toCustomer } from '../customers/repo.js';
import { getLicence } from '../licences/reads.js';
import { searchText } from '../listings/repos/search.js';
import {
  auditEntriesOf,
  eraseCustomerRow,
  eraseEmailAddresses,
  eraseMachineLabels,
  failPendingEmailsOf,
  licenceIdOf,
  licenceRowById,
  licencesOfCustomer,
  setAuditText,
  setLicencePersonalData,
  eraseOrderContacts,
} from './repo.js';

export const ERASED = '[erased]';

/** Replaces each value, as text and as it stands inside JSON text, with `[erased]`. */
function redact(text: string, values: string[], json: boolean): string {
  let out = text;
  for (const value of values) {
    if (value === '') continue;
    out = out.split(json ? JSON.stringify(value).slice(1, -1) : value).join(ERASED);
  }
  return out;
}

/** The one edit of the append-only trail (DESIGN.md 22): the values in the summaries and details of the entries given. */
async function redactAudit(t: Tenant, where: { lids: string[]; customerId?: number }, values: string[]): Promise<void> {
  const wanted = [...new Set(values.filter((v) => v !== ''))];
  if (wanted.length === 0) return;
  for (const entry of await auditEntriesOf(t, where)) {
    const summary = redact(entry.summary, wanted, false);
    const details = entry.details === null ? null : redact(entry.details, wanted, true);
    if (summary !== entry.summary || details !== entry.details) await setAuditText(t, entry.id, summary, details);
  }
}

/**
 * A licence's personal data (DESIGN.md 22): its pending emails failed "erased" first, then a
 * trial's licenseeEmail (every licenseeEmail, and the licensee renamed, for a customer's erasure),
 * its notes, machine labels and its emails' addresses, and those values in its audit entries.
 * Returns the values erased and the field names.
 */
async function eraseLicenceData(t: Tenant, licenceId: number, owner?: { name: string }) {
  const licence = await licenceRowById(t, licenceId);
  await failPendingEmailsOf(t, licenceId, 'erased');
  const values: string[] = [];
  const fields = new Set<string>();
  const labels = await eraseMachineLabels(t, licenceId);
  values.push(...labels);
  if (labels.length > 0) fields.add('machines.label');
  const addresses = await eraseEmailAddresses(t, licenceId);
  values.push(...addresses);
  if (addresses.length > 0) fields.add('emails.to');
  if (licence.notes !== null) {
    values.push(licence.notes);
    fields.add('notes');
  }
  const eraseEmail = (owner !== undefined || Number(licence.trial) === 1) && licence.licensee_email !== null;
  if (eraseEmail) {
    values.push(licence.licensee_email!);
    fields.add('licenseeEmail');
  }
  const licensee = owner ? owner.name : licence.licensee;
  if (owner && licence.licensee !== owner.name) {
    values.push(licence.licensee);
    fields.add('licensee');
  }
  const email = eraseEmail ? null : licence.licensee_email;
  await setLicencePersonalData(t, licenceId, {
    notes: null,
    licensee,
    licensee_email: email,
    search_text: searchText({ licensee, email, lid: licence.lid, notes: null }),
  });
  return { lid: licence.lid, values, fields: [...fields] };
}

/** `POST /licenses/{lid}/erase-personal-data`: idempotent; 200 the licence. */
export async function eraseLicencePersonalData(ctx: Ctx, lid: string) {
  await inTransaction(ctx, async (t) => {
    const row = await licenceIdOf(t, lid);
    if (!row) throw notFound(`no licence ${lid}`);
    await lockRow(ctx.database, t.db, 'licences', Number(row.id));
    const erased = await eraseLicenceData(t, Number(row.id));
    await redactAudit(t, { lids: [lid] }, erased.values);
    await recordAudit(t, ctx, {
      action: 'licence.personal_data_erased',
      subjectType: 'licence',
      subjectId: lid,
      lid,
      summary: `Erased the personal data of licence ${lid}`,
      details: { lid, fields: erased.fields },
    });
  });
  return getLicence(ctx, lid);
}

/** `POST /customers/{id}/erase`: the customer's name, email and notes, and each of its licences' personal data; raises customer.updated. */
export async function eraseCustomer(ctx: Ctx, id: number) {
  return inTransaction(ctx, async (t) => {
    const customer = await findCustomerRow(t, id);
    if (!customer) throw notFound(`no customer ${id}`);
    const name = `Erased customer ${id}`;
    const values = [customer.name, customer.email, customer.notes].filter((v): v is string => v !== null && v !== name);
    const fields = new Set<string>();
    if (customer.name !== name) fields.add('name');
    if (customer.email !== null) fields.add('email');
    if (customer.notes !== null) fields.add('notes');
    const licences = await licencesOfCustomer(t, id);
    for (const licence of licences) {
      const erased = await eraseLicenceData(t, Number(licence.id), { name });
      values.push(...erased.values);
      for (const field of erased.fields) fields.add(`licences.${field}`);
    }
    if (customer.email !== null) await eraseOrderContacts(t, customer.email);
    await eraseCustomerRow(t, id, name);
    await redactAudit(
      t,
      { lids: licences.map((l) => l.lid), customerId: id },
      values.filter((v) => v !== name),
    );
    await recordAudit(t, ctx, {
      action: 'customer.erased',
      subjectType: 'customer',
      subjectId: id,
      summary: `Erased the personal data of customer ${id}`,
      details: { customerId: id, lids: licences.map((l) => l.lid), fields: [...fields] },
    });
    // Subscribers hear of the erased record as of any change to a customer (DESIGN.md 15).
    await recordAudit(t, ctx, {
      action: 'customer.updated',
      subjectType: 'customer',
      subjectId: id,
      event: () => customerData(t, id),
      summary: `Updated customer ${name}`,
      details: { name, email: null },
    });
    const row = (await findCustomerRow(t, id))!;
    return toCustomer(row, (await countLicences(t, [id])).get(id) ?? 0);
  });
}
