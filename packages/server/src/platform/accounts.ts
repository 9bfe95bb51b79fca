import { Type } from 'typebox';
import type { Config } from '../config.js';
import { transaction, type Database } from '../db/database.js';
import { ADDRESS_FACTOR, throttle, WINDOW_MS } from '../auth/login.js';
import { SESSION_LIFETIME_MS, type PlatformAccount, type PlatformRole } from '../auth/credentials.js';
import { newSecret, sha256Hex } from '../core/secrets.js';
import { hashPassword, verifyPassword } from '../core/passwords.js';
import { conflict, notFound, unauthorized } from '../core/errors.js';
import {
  clearPlatformFailures,
  endAccountSessions,
  findAccount,
  findAccountByUsername,
  insertAccount,
  insertPlatformAudit,
  insertPlatformFailure,
  insertPlatformSession,
  recentPlatformFailures,
  updateAccount,
} from './repo.js';

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

/** `platform-account create` (CLI). */
export async function createPlatformAccount(database: Database, input: { username: string; password: string; role: PlatformRole }) {
  const hash = await hashPassword(input.password);
  const now = Date.now();
  const row = await transaction(database, async (trx) => {
    const created = await insertAccount(trx, {
      username: input.username,
      display_name: input.username,
      role: input.role,
      active: 1,
      password_hash: hash,
      created_at: now,
    });
    if (created)
      await insertPlatformAudit(trx, 'cli', now, {
        action: 'platform_account.created',
        organisation: null,
        details: { username: input.username, role: input.role },
      });
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
    const row = await findAccountByUsername(trx, username);
    if (!row) throw notFound(`no platform account "${username}"`);
    await updateAccount(trx, row.id, {
      ...(hash === undefined ? {} : { password_hash: hash }),
      ...(change.active === undefined ? {} : { active: change.active ? 1 : 0 }),
    });
    if (hash !== undefined || change.active === false) await endAccountSessions(trx, row.id);
    await insertPlatformAudit(trx, 'cli', now, {
      action: 'platform_account.updated',
      organisation: null,
      details: { username, ...(hash === undefined ? {} : { password: 'changed' }), ...(change.active === undefined ? {} : { active: change.active }) },
    });
    const account = (await findAccount(trx, row.id))!;
    return { username: account.username, role: account.role, active: account.active === 1 };
  });
}

/** The platform's sign-in gate (throttled like an organisation's); `fail` records a failure and throws 401. */
export async function platformSignInGate(database: Database, config: Pick<Config, 'loginFailures'>, username: string, address: string, now: number) {
  if (config.loginFailures > 0) {
    throttle(await recentPlatformFailures(database.db, address, now - WINDOW_MS, config.loginFailures * ADDRESS_FACTOR), username, config.loginFailures, now);
  }
  return async function fail(message: string): Promise<never> {
    await insertPlatformFailure(database.db, username, address, now, now - WINDOW_MS);
    throw unauthorized(message);
  };
}

type AccountRow = { id: number; username: string; display_name: string; role: string };

/** Opens a platform session for an account that proved who it is. */
export async function openPlatformSession(database: Database, account: AccountRow, username: string, address: string, now: number) {
  const cookieValue = newSecret();
  await transaction(database, async (trx) => {
    await clearPlatformFailures(trx, username, address);
    await insertPlatformSession(trx, {
      id: sha256Hex(cookieValue),
      account_id: account.id,
      created_at: now,
      last_seen_at: now,
      expires_at: now + SESSION_LIFETIME_MS,
    });
    await updateAccount(trx, account.id, { last_login_at: now });
  });
  return {
    cookieValue,
    account: {
      id: account.id,
      username: account.username,
      displayName: account.display_name,
      role: account.role as PlatformRole,
      sessionId: sha256Hex(cookieValue),
    },
  };
}

/** Signs a platform account in with its password. */
export async function platformLogin(database: Database, config: Pick<Config, 'loginFailures'>, input: { username: string; password: string }, address: string) {
  const now = Date.now();
  const fail = await platformSignInGate(database, config, input.username, address, now);
  const account = await findAccountByUsername(database.db, input.username);
  // A missing account, a wrong password and an inactive one: the same answer after the same work.
  const passwordOk = await verifyPassword(input.password, account?.password_hash ?? null);
  if (!account || !passwordOk || account.active !== 1) return fail('wrong username or password');
  return openPlatformSession(database, account, input.username, address, now);
}
