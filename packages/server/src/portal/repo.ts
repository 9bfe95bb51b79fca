import type { Insertable } from 'kysely';
import type { PortalLinksTable, PortalSessionsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';

export const insertLink = (t: Tenant, values: Omit<Insertable<PortalLinksTable>, 'org_id'>) =>
  t.insertInto('portal_links', values).returning('id').executeTakeFirstOrThrow();

/** A customer's links, newest first. */
export const linksOf = (t: Tenant, customerId: number) =>
  t.selectFrom('portal_links').selectAll().where('customer_id', '=', customerId).orderBy('id', 'desc').execute();

export const findCustomerLink = (t: Tenant, customerId: number, linkId: number) =>
  t.selectFrom('portal_links').select(['id', 'revoked_at']).where('id', '=', linkId).where('customer_id', '=', customerId).executeTakeFirst();

export const linkByCode = (t: Tenant, codeHash: string) => t.selectFrom('portal_links').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();

export async function revokeLink(t: Tenant, linkId: number, now: number): Promise<void> {
  await t.updateTable('portal_links').set({ revoked_at: now }).where('id', '=', linkId).execute();
}

/** Marks an unused link used: false when another request used it first. */
export async function useLink(t: Tenant, linkId: number, now: number): Promise<boolean> {
  const used = await t.updateTable('portal_links').set({ used_at: now }).where('id', '=', linkId).where('used_at', 'is', null).executeTakeFirst();
  return Number(used.numUpdatedRows) === 1;
}

export async function insertPortalSession(t: Tenant, values: Omit<Insertable<PortalSessionsTable>, 'org_id'>): Promise<void> {
  await t.insertInto('portal_sessions', values).execute();
}

export const findPortalSession = (t: Tenant, id: string) =>
  t.selectFrom('portal_sessions').select(['id', 'customer_id', 'expires_at']).where('id', '=', id).executeTakeFirst();

export async function endPortalSessionRow(t: Tenant, id: string): Promise<void> {
  await t.deleteFrom('portal_sessions').where('id', '=', id).execute();
}

/** Ends the sessions a link opened. */
export async function endLinkSessions(t: Tenant, linkId: number): Promise<void> {
  await t.deleteFrom('portal_sessions').where('link_id', '=', linkId).execute();
}
