import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Tenant } from '../db/tenant.js';
import type { UsersTable } from '../db/schema.js';
import { iso } from '../core/schemas.js';

export type UserRow = Selectable<UsersTable>;

/** A member as the API shows it: never the password or its hash. */
export function toMember(row: UserRow) {
  return {
    id: row.id,
    username: row.username,
    displayName: row.display_name,
    email: row.email,
    role: row.role,
    active: row.active === 1,
    createdAt: iso(row.created_at),
    lastLoginAt: iso(row.last_login_at),
    ssoLinkedAt: iso(row.sso_linked_at),
    ssoSignedInAt: iso(row.sso_signed_in_at),
  };
}

export const listUsers = (t: Tenant) => t.selectFrom('users').selectAll().orderBy('id').execute();

export const findUser = (t: Tenant, id: number) => t.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();

export const findUserByUsername = (t: Tenant, username: string) => t.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst();

/**
 * Administrators who can actually sign in: active and holding a password (passkeys, once they
 * exist, count here too). One created by a token without a password cannot rescue anyone.
 */
export async function countActiveAdmins(t: Tenant): Promise<number> {
  const row = await t
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('role', '=', 'ORG_ADMIN')
    .where('active', '=', 1)
    .where('password_hash', 'is not', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Ends a member's sessions, except the one making the change (when it is theirs). */
export async function endSessions(t: Tenant, userId: number, keepSessionId?: string): Promise<void> {
  let query = t.deleteFrom('sessions').where('user_id', '=', userId);
  if (keepSessionId) query = query.where('id', '!=', keepSessionId);
  await query.execute();
}

export async function stampLogin(t: Tenant, userId: number, now: number): Promise<void> {
  await t.updateTable('users').set({ last_login_at: now }).where('id', '=', userId).execute();
}

export async function setPasswordHash(t: Tenant, userId: number, hash: string): Promise<void> {
  await t.updateTable('users').set({ password_hash: hash }).where('id', '=', userId).execute();
}

export const insertUser = (t: Tenant, values: Omit<Insertable<UsersTable>, 'org_id'>) => t.insertInto('users', values).returningAll().executeTakeFirstOrThrow();

export const updateUser = (t: Tenant, id: number, set: Updateable<UsersTable>) =>
  t.updateTable('users').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow();

export async function deleteUser(t: Tenant, id: number): Promise<void> {
  await t.deleteFrom('users').where('id', '=', id).execute();
}

/**
 * DESIGN.md 21: while single sign-on is enforced, how many of its break-glass members can still
 * sign in without it (active ORG_ADMINs with a password or passkey); null when it is not enforced.
 */
export async function breakGlassLeft(t: Tenant): Promise<number | null> {
  const sso = await t.selectFrom('sso_configs').select(['enforce', 'break_glass']).executeTakeFirst();
  if (sso?.enforce !== 1) return null;
  const ids = JSON.parse(sso.break_glass) as number[];
  if (ids.length === 0) return 0;
  const row = await t
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('id', 'in', ids)
    .where('role', '=', 'ORG_ADMIN')
    .where('active', '=', 1)
    .where((eb) =>
      eb.or([eb('password_hash', 'is not', null), eb.exists(eb.selectFrom('passkeys').select('passkeys.id').whereRef('passkeys.user_id', '=', 'users.id'))]),
    )
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
