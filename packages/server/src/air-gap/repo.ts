import type { Insertable, Selectable, Updateable } from 'kysely';
import type { AirGapActivationsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';

export type ActivationRow = Selectable<AirGapActivationsTable>;

export const findActivation = (t: Tenant, id: number) => t.selectFrom('air_gap_activations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** The activation a request's nonce made on this licence, if any. */
export const activationByNonce = (t: Tenant, licenceId: number, nonce: string) =>
  t.selectFrom('air_gap_activations').selectAll().where('licence_id', '=', licenceId).where('nonce', '=', nonce).executeTakeFirst();

/** The device key of the licence's activation `id`, if it has one. */
export const activationKey = (t: Tenant, licenceId: number, id: number) =>
  t.selectFrom('air_gap_activations').select('dpk').where('licence_id', '=', licenceId).where('id', '=', id).executeTakeFirst();

/** Another live activation holding the same seat, if any. */
export const sharingActivation = (t: Tenant, bindingId: number, activationId: number, now: number) =>
  t
    .selectFrom('air_gap_activations')
    .select('id')
    .where('binding_id', '=', bindingId)
    .where('id', '<>', activationId)
    .where('ended_at', 'is', null)
    .where('until', '>', now)
    .executeTakeFirst();

export const insertActivation = (t: Tenant, values: Omit<Insertable<AirGapActivationsTable>, 'org_id'>) =>
  t.insertInto('air_gap_activations', values).returningAll().executeTakeFirstOrThrow();

export async function updateActivation(t: Tenant, id: number, set: Updateable<AirGapActivationsTable>): Promise<void> {
  await t.updateTable('air_gap_activations').set(set).where('id', '=', id).execute();
}

/** Ends the installation's (`dpk`) live activations of a seat. */
export async function endActivationsOf(t: Tenant, bindingId: number, dpk: string, endedBy: string, now: number): Promise<void> {
  await t
    .updateTable('air_gap_activations')
    .set({ ended_at: now, ended_by: endedBy })
    .where('binding_id', '=', bindingId)
    .where('dpk', '=', dpk)
    .where('ended_at', 'is', null)
    .execute();
}

/** Stores a signed response unless one is stored already; answers the stored one. */
export async function storeResponse(t: Tenant, id: number, text: string): Promise<string> {
  await t.updateTable('air_gap_activations').set({ response: text }).where('id', '=', id).where('response', 'is', null).execute();
  const stored = await t.selectFrom('air_gap_activations').select('response').where('id', '=', id).executeTakeFirstOrThrow();
  return stored.response!;
}
