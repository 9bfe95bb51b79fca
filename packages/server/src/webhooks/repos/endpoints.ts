import type { Insertable, Selectable, Updateable } from 'kysely';
import type { WebhookEndpointsTable } from '../../db/schema.js';
import type { Tenant } from '../../db/tenant.js';

export type EndpointRow = Selectable<WebhookEndpointsTable>;

export const findEndpointRow = (t: Tenant, id: number) => t.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();

export const endpointRows = (t: Tenant) => t.selectFrom('webhook_endpoints').selectAll().orderBy('id').execute();

/** True while the organisation has an endpoint, enabled or not. */
export const hasEndpoint = async (t: Tenant) => (await t.selectFrom('webhook_endpoints').select('id').limit(1).executeTakeFirst()) !== undefined;

export const insertEndpoint = (t: Tenant, values: Omit<Insertable<WebhookEndpointsTable>, 'org_id'>) =>
  t.insertInto('webhook_endpoints', values).returning('id').executeTakeFirstOrThrow();

export async function updateEndpointRow(t: Tenant, id: number, set: Updateable<WebhookEndpointsTable>): Promise<void> {
  await t.updateTable('webhook_endpoints').set(set).where('id', '=', id).execute();
}

export async function deleteEndpointRow(t: Tenant, id: number): Promise<void> {
  await t.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
}

/** The expiring window starts again at `now`: the organisation's first endpoint after none. */
export async function restartSince(t: Tenant, now: number): Promise<void> {
  const state = await t.selectFrom('webhook_state').select('id').executeTakeFirst();
  if (state) await t.updateTable('webhook_state').set({ since: now }).execute();
  else await t.insertInto('webhook_state', { last_sequence: 0, since: now }).execute();
}
