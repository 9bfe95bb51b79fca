import type { Db } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';

/*
 * Credentials are looked up by their own unique id, before any tenant is trusted (credentials.ts
 * compares the organisation they belong to with the one the URL selected): these lookups take no tenant.
 */

export const findToken = (db: Db, id: string) => db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();

export async function stampToken(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('api_tokens').set({ last_used_at: now }).where('id', '=', id).execute();
}

/** A session with the member it signs in, read on every request (role and `active` take effect at once). */
export const findSession = (db: Db, id: string) =>
  db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .leftJoin('sso_configs', 'sso_configs.org_id', 'sessions.org_id')
    .select([
      'sessions.org_id',
      'sessions.last_seen_at',
      'sessions.expires_at',
      'sessions.method',
      'sessions.hard_end',
      'sso_configs.id as sso_id',
      'sso_configs.enforce as sso_enforce',
      'sso_configs.break_glass as sso_break_glass',
      'users.id as user_id',
      'users.username',
      'users.display_name',
      'users.role',
      'users.active',
    ])
    .where('sessions.id', '=', id)
    .executeTakeFirst();

/** A session seen now: its sliding expiry moves on. */
export async function stampSession(db: Db, id: string, now: number, expiresAt: number): Promise<void> {
  await db.updateTable('sessions').set({ last_seen_at: now, expires_at: expiresAt }).where('id', '=', id).execute();
}

export const findPlatformSession = (db: Db, id: string) =>
  db
    .selectFrom('platform_sessions')
    .innerJoin('platform_accounts', 'platform_accounts.id', 'platform_sessions.account_id')
    .select([
      'platform_sessions.last_seen_at',
      'platform_sessions.expires_at',
      'platform_accounts.id as account_id',
      'platform_accounts.username',
      'platform_accounts.display_name',
      'platform_accounts.role',
      'platform_accounts.active',
    ])
    .where('platform_sessions.id', '=', id)
    .executeTakeFirst();

export async function stampPlatformSession(db: Db, id: string, now: number, expiresAt: number): Promise<void> {
  await db.updateTable('platform_sessions').set({ last_seen_at: now, expires_at: expiresAt }).where('id', '=', id).execute();
}

/** Failed sign-ins from an address since `since`, newest first, in every organisation (DESIGN.md 4 limits the address across them). */
export const recentFailures = (db: Db, address: string, since: number, limit: number) =>
  db
    .selectFrom('login_failures')
    .select(['at', 'org_id', 'username'])
    .where('address', '=', address)
    .where('at', '>', since)
    .orderBy('at', 'desc')
    .limit(limit)
    .execute();

/** Records a failed sign-in, and forgets those older than `before`, which no longer count for anyone. */
export async function insertFailure(t: Tenant, username: string, address: string, now: number, before: number): Promise<void> {
  await t.insertInto('login_failures', { username, address, at: now }).execute();
  await t.db.deleteFrom('login_failures').where('at', '<=', before).execute();
}

export async function clearFailures(t: Tenant, username: string, address: string): Promise<void> {
  await t.deleteFrom('login_failures').where('username', '=', username).where('address', '=', address).execute();
}

export async function insertSession(
  t: Tenant,
  values: {
    id: string;
    user_id: number;
    created_at: number;
    last_seen_at: number;
    expires_at: number;
    method?: 'password' | 'passkey' | 'sso';
    sso_at?: number;
    hard_end?: number;
  },
): Promise<void> {
  await t.insertInto('sessions', values).execute();
}

export async function deleteSession(t: Tenant, id: string): Promise<void> {
  await t.deleteFrom('sessions').where('id', '=', id).execute();
}

/** DESIGN.md 21: the organisation's single sign-on enforcement, as a password or passkey sign-in judges it. */
export const ssoEnforcement = (t: Tenant) => t.selectFrom('sso_configs').select(['enabled', 'enforce', 'break_glass']).executeTakeFirst();

/** How a session was opened, and when its single sign-on happened (DESIGN.md 21's passkey registration rule). */
export const sessionSignIn = (t: Tenant, id: string) => t.selectFrom('sessions').select(['method', 'sso_at']).where('id', '=', id).executeTakeFirst();
