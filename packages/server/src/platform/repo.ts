import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../db/database.js';
import type { PlatformAccountsTable, PlatformSessionsTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';

// The control plane's tables are outside every organisation: these queries take no tenant.

export async function insertPlatformAudit(
  db: Db,
  actor: string,
  now: number,
  entry: { action: string; organisation: string | null; details?: Record<string, unknown> },
): Promise<void> {
  await db
    .insertInto('platform_audit')
    .values({ at: now, actor, action: entry.action, organisation: entry.organisation, details: entry.details ? JSON.stringify(entry.details) : null })
    .execute();
}

/** A page of the platform's audit trail, newest first, and how many entries it has. */
export async function platformAuditPage(db: Db, limit: number, offset: number) {
  const [rows, total] = await Promise.all([
    db.selectFrom('platform_audit').selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    db
      .selectFrom('platform_audit')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** Inserts the account; undefined when the username is taken. */
export const insertAccount = (db: Db, values: Insertable<PlatformAccountsTable>) =>
  db
    .insertInto('platform_accounts')
    .values(values)
    .onConflict((oc) => oc.column('username').doNothing())
    .returning(['id', 'username', 'role'])
    .executeTakeFirst();

export const findAccount = (db: Db, id: number) => db.selectFrom('platform_accounts').selectAll().where('id', '=', id).executeTakeFirst();

export const findAccountByUsername = (db: Db, username: string) =>
  db.selectFrom('platform_accounts').selectAll().where('username', '=', username).executeTakeFirst();

export async function updateAccount(db: Db, id: number, set: Updateable<PlatformAccountsTable>): Promise<void> {
  await db.updateTable('platform_accounts').set(set).where('id', '=', id).execute();
}

export async function endAccountSessions(db: Db, accountId: number): Promise<void> {
  await db.deleteFrom('platform_sessions').where('account_id', '=', accountId).execute();
}

export async function endPlatformSession(db: Db, id: string): Promise<void> {
  await db.deleteFrom('platform_sessions').where('id', '=', id).execute();
}

export async function insertPlatformSession(db: Db, values: Insertable<PlatformSessionsTable>): Promise<void> {
  await db.insertInto('platform_sessions').values(values).execute();
}

/** The failed platform sign-ins from an address since `since`, newest first. */
export const recentPlatformFailures = (db: Db, address: string, since: number, limit: number) =>
  db
    .selectFrom('platform_login_failures')
    .select(['at', 'username'])
    .where('address', '=', address)
    .where('at', '>', since)
    .orderBy('at', 'desc')
    .limit(limit)
    .execute();

/** Records a failed sign-in, and forgets those older than `before`, which no longer count for anyone. */
export async function insertPlatformFailure(db: Db, username: string, address: string, now: number, before: number): Promise<void> {
  await db.insertInto('platform_login_failures').values({ username, address, at: now }).execute();
  await db.deleteFrom('platform_login_failures').where('at', '<=', before).execute();
}

export async function clearPlatformFailures(db: Db, username: string, address: string): Promise<void> {
  await db.deleteFrom('platform_login_failures').where('username', '=', username).where('address', '=', address).execute();
}

/** How many licences, products and members an organisation has. */
export async function organisationCounts(t: Tenant) {
  const count = async (table: 'licences' | 'products' | 'users') =>
    Number(
      (
        await t
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { licences: await count('licences'), products: await count('products'), members: await count('users') };
}
