import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db } from '../db/database.js';
import type { SsoConfigsTable, SsoStatesTable, UsersTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';

export type SsoConfigRow = Selectable<SsoConfigsTable>;

export const findConfigRow = (t: Tenant) => t.selectFrom('sso_configs').selectAll().executeTakeFirst();

export const insertConfigRow = (t: Tenant, values: Omit<Insertable<SsoConfigsTable>, 'org_id'>) => t.insertInto('sso_configs', values).execute();

export async function updateConfigRow(t: Tenant, set: Updateable<SsoConfigsTable>): Promise<void> {
  await t.updateTable('sso_configs').set(set).execute();
}

export async function deleteConfigRow(t: Tenant): Promise<void> {
  await t.deleteFrom('sso_configs').execute();
  await t.deleteFrom('sso_states').execute();
}

/** Members by username, with whether each holds a passkey (break-glass must be able to sign in without SSO). */
export const membersWithCredentials = (t: Tenant) =>
  t
    .selectFrom('users')
    .select((eb) => [
      'users.id',
      'users.username',
      'users.role',
      'users.active',
      'users.password_hash',
      eb.exists(eb.selectFrom('passkeys').select('passkeys.id').whereRef('passkeys.user_id', '=', 'users.id')).as('has_passkey'),
    ])
    .execute();

/** Removes every member's link (an issuer or client change: Entra ID's `sub` is per client); how many there were. */
export async function removeLinks(t: Tenant): Promise<number> {
  const result = await t.updateTable('users').set({ sso_sub: null, sso_linked_at: null }).where('sso_sub', 'is not', null).executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** SSO sessions end when the configuration goes (DESIGN.md 21). */
export async function endSsoSessions(t: Tenant, userId?: number): Promise<void> {
  let query = t.deleteFrom('sessions').where('method', '=', 'sso');
  if (userId !== undefined) query = query.where('user_id', '=', userId);
  await query.execute();
}

// The sign-in flow's state: single use, found only in its organisation.

export async function insertState(t: Tenant, values: Omit<Insertable<SsoStatesTable>, 'org_id'>, now: number): Promise<void> {
  await t.db.deleteFrom('sso_states').where('expires_at', '<=', now).execute();
  await t.insertInto('sso_states', values).execute();
}

/** Spends a state: the row deleted, so exactly one callback of any number goes on. */
export async function spendState(t: Tenant, stateHash: string, now: number): Promise<Selectable<SsoStatesTable> | undefined> {
  const row = await t.selectFrom('sso_states').selectAll().where('state_hash', '=', stateHash).where('expires_at', '>', now).executeTakeFirst();
  if (!row) return undefined;
  const deleted = await t.deleteFrom('sso_states').where('id', '=', row.id).executeTakeFirst();
  return Number(deleted.numDeletedRows) === 1 ? row : undefined;
}

// Members as the callback finds, links and provisions them.

export const findLinkedMember = (t: Tenant, sub: string) => t.selectFrom('users').selectAll().where('sso_sub', '=', sub).executeTakeFirst();

/** Members whose email equals `email` ignoring case, with whether each holds a passkey. */
export const membersByEmail = (t: Tenant, email: string) =>
  t
    .selectFrom('users')
    .selectAll('users')
    .select((eb) => eb.exists(eb.selectFrom('passkeys').select('passkeys.id').whereRef('passkeys.user_id', '=', 'users.id')).as('has_passkey'))
    .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email.toLowerCase()))
    .execute();

export const usernameTaken = async (t: Tenant, username: string) =>
  (await t.selectFrom('users').select('id').where('username', '=', username).executeTakeFirst()) !== undefined;

export const setMember = (t: Tenant, id: number, set: Updateable<UsersTable>) =>
  t.updateTable('users').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow();

/** Whether the member holds a passkey. */
export const hasPasskey = async (t: Tenant, userId: number) =>
  (await t.selectFrom('passkeys').select('id').where('user_id', '=', userId).executeTakeFirst()) !== undefined;

/** `sso disable` (the CLI), by slug: the database alone. */
export const findOrganisationId = (db: Db, slug: string) => db.selectFrom('organisations').select('id').where('slug', '=', slug).executeTakeFirst();

/** Removes a member's link: the member as it was, or undefined when it had none. */
export async function unlinkRow(t: Tenant, id: number) {
  const member = await t.selectFrom('users').select(['id', 'username']).where('id', '=', id).where('sso_sub', 'is not', null).executeTakeFirst();
  if (member) await t.updateTable('users').set({ sso_sub: null, sso_linked_at: null }).where('id', '=', id).execute();
  return member;
}
