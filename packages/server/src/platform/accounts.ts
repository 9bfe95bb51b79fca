import { Type } from 'typebox';
import type { Config } from '../config.js';
import { transaction, type Database, type Db } from '../db/database.js';
import { ADDRESS_FACTOR, throttle, WINDOW_MS } from '../auth/login.js';
import { SESSION_LIFETIME_MS, type PlatformAccount, type PlatformRole } from '../auth/credentials.js';
import { newSecret, sha256Hex } from '../core/secrets.js';
import { hashPassword, verifyPassword } from '../core/passwords.js';
import { conflict, notFound, unauthorized } from '../core/errors.js';

/** What a platform sign-in answers (SPEC 2.10's identity, outside every organisation). */
export const PlatformIdentity = Type.Object({
  username: Type.String(),
  displayName: Type.String(),
  role: Type.String({ description: 'The platform role.' }),
  platform: Type.Boolean(),
  platformRole: Type.String(),
  version: Type.String(),
  organization: Type.Null(),
  tenant: Type.Null(),
});

export const platformIdentity = (account: Pick<PlatformAccount, 'username' | 'displayName' | 'role'>, version: string) => ({
  username: account.username,
  displayName: account.displayName,
  role: account.role,
  platform: true,
  platformRole: account.role,
  version,
  organization: null,
  tenant: null,
});

/** DESIGN.md 8's audit trail of the platform, written in the change's own transaction. */
export async function recordPlatformAudit(db: Db, actor: string, now: number, entry: { action: string; organisation: string | null; details?: Record<string, unknown> }) {
  await db
    .insertInto('platform_audit')
    .values({ at: now, actor, action: entry.action, organisation: entry.organisation, details: entry.details ? JSON.stringify(entry.details) : null })
    .execute();
}

/** `platform-account create` (CLI). */
export async function createPlatformAccount(database: Database, input: { username: string; password: string; role: PlatformRole }) {
  const hash = await hashPassword(input.password);
  const now = Date.now();
  const row = await transaction(database, async (trx) => {
    const created = await trx
      .insertInto('platform_accounts')
      .values({ username: input.username, display_name: input.username, role: input.role, active: 1, password_hash: hash, created_at: now })
      .onConflict((oc) => oc.column('username').doNothing())
      .returning(['id', 'username', 'role'])
      .executeTakeFirst();
    if (created) await recordPlatformAudit(trx, 'cli', now, { action: 'platform_account.created', organisation: null, details: { username: input.username, role: input.role } });
    return created;
  });
  if (!row) throw conflict(`a platform account "${input.username}" already exists`);
  return { id: row.id, username: row.username, role: row.role, active: true };
}

/** `platform-account set-password` and `set-active`: either ends the account's sessions. */
export async function updatePlatformAccount(database: Database, username: string, change: { password?: string; active?: boolean }) {
  const hash = change.password === undefined ? undefined : await hashPassword(change.password);
  const now = Date.now();
  return transaction(database, async (trx) => {
    const row = await trx.selectFrom('platform_accounts').select(['id', 'role']).where('username', '=', username).executeTakeFirst();
    if (!row) throw notFound(`no platform account "${username}"`);
    await trx
      .updateTable('platform_accounts')
      .set({ ...(hash === undefined ? {} : { password_hash: hash }), ...(change.active === undefined ? {} : { active: change.active ? 1 : 0 }) })
      .where('id', '=', row.id)
      .execute();
    if (hash !== undefined || change.active === false) await trx.deleteFrom('platform_sessions').where('account_id', '=', row.id).execute();
    await recordPlatformAudit(trx, 'cli', now, {
      action: 'platform_account.updated',
      organisation: null,
      details: { username, ...(hash === undefined ? {} : { password: 'changed' }), ...(change.active === undefined ? {} : { active: change.active }) },
    });
    const account = await trx.selectFrom('platform_accounts').select(['username', 'role', 'active']).where('id', '=', row.id).executeTakeFirstOrThrow();
    return { username: account.username, role: account.role, active: account.active === 1 };
  });
}

/** The platform's sign-in gate (throttled like an organisation's); `fail` records a failure and throws 401. */
export async function platformSignInGate(database: Database, config: Pick<Config, 'loginFailures'>, username: string, address: string, now: number) {
  if (config.loginFailures > 0) {
    const rows = await database.db
      .selectFrom('platform_login_failures')
      .select(['at', 'username'])
      .where('address', '=', address)
      .where('at', '>', now - WINDOW_MS)
      .orderBy('at', 'desc')
      .limit(config.loginFailures * ADDRESS_FACTOR)
      .execute();
    throttle(rows, username, config.loginFailures, now);
  }
  return async function fail(message: string): Promise<never> {
    await database.db.insertInto('platform_login_failures').values({ username, address, at: now }).execute();
    await database.db.deleteFrom('platform_login_failures').where('at', '<=', now - WINDOW_MS).execute();
    throw unauthorized(message);
  };
}

type AccountRow = { id: number; username: string; display_name: string; role: string };

/** Opens a platform session for an account that proved who it is. */
export async function openPlatformSession(database: Database, account: AccountRow, username: string, address: string, now: number) {
  const cookieValue = newSecret();
  await transaction(database, async (trx) => {
    await trx.deleteFrom('platform_login_failures').where('username', '=', username).where('address', '=', address).execute();
    await trx.insertInto('platform_sessions').values({ id: sha256Hex(cookieValue), account_id: account.id, created_at: now, last_seen_at: now, expires_at: now + SESSION_LIFETIME_MS }).execute();
    await trx.updateTable('platform_accounts').set({ last_login_at: now }).where('id', '=', account.id).execute();
  });
  return { cookieValue, account: { id: account.id, username: account.username, displayName: account.display_name, role: account.role as PlatformRole, sessionId: sha256Hex(cookieValue) } };
}

/** Signs a platform account in with its password. */
export async function platformLogin(database: Database, config: Pick<Config, 'loginFailures'>, input: { username: string; password: string }, address: string) {
  const now = Date.now();
  const fail = await platformSignInGate(database, config, input.username, address, now);
  const account = await database.db.selectFrom('platform_accounts').selectAll().where('username', '=', input.username).executeTakeFirst();
  // A missing account, a wrong password and an inactive one: the same answer after the same work.
  const passwordOk = await verifyPassword(input.password, account?.password_hash ?? null);
  if (!account || !passwordOk || account.active !== 1) return fail('wrong username or password');
  return openPlatformSession(database, account, input.username, address, now);
}
