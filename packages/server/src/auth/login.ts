import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { forbidden, tooManyRequests, unauthorized } from '../core/errors.js';
import type { Organisation } from '../core/context.js';
import { findUserByUsername, stampLogin, type UserRow } from '../users/repo.js';
import { recordAudit } from '../audit/audit.js';
import { clearFailures, insertFailure, insertSession, recentFailures, ssoEnforcement } from './repo.js';
import { shutOutBySso, ssoEnforced } from './enforcement.js';
import { SESSION_LIFETIME_MS } from './credentials.js';
import { newSecret, sha256Hex } from '../core/secrets.js';
import { verifyPassword } from '../core/passwords.js';

export const WINDOW_MS = 15 * 60 * 1000;
// The per-address limit is ten times the per-(username, address) one (DESIGN.md 4).
export const ADDRESS_FACTOR = 10;
/**
 * The username a failure is recorded under when the sign-in named none (a passkey's). No
 * sign-in username is empty, so these failures belong to no (username, address) pair and
 * count only towards the address's limit (DESIGN.md 9).
 */
export const NO_USERNAME = '';

/**
 * When a limit is reached, how long until enough failures age out of the window to allow
 * another attempt; null while both limits have room.
 */
function retryAfter(times: number[], limit: number, now: number): number | null {
  if (times.length < limit) return null;
  const oldestThatMustExpire = times[times.length - limit]!;
  return (oldestThatMustExpire + WINDOW_MS - now) / 1000;
}

/**
 * A 429 when the failures in the window (newest first, with their usernames) reach the
 * per-(username, address) limit or ten times it for the address. A sign-in naming no username
 * (NO_USERNAME) is judged by the address's limit alone.
 */
export function throttle(failures: Array<{ at: number; username: string | null }>, username: string, limit: number, now: number) {
  const all = failures.map((f) => f.at).reverse();
  const pair =
    username === NO_USERNAME
      ? []
      : failures
          .filter((f) => f.username === username)
          .map((f) => f.at)
          .reverse();
  const wait = Math.max(retryAfter(pair, limit, now) ?? 0, retryAfter(all, limit * ADDRESS_FACTOR, now) ?? 0);
  if (wait > 0) throw tooManyRequests('too many failed sign-in attempts: try again later', wait);
}

/** Failures are counted in the database, so every instance sees the same counts. */
async function failuresOf(database: Database, org: Organisation, address: string, limit: number, now: number) {
  const rows = await recentFailures(database.db, address, now - WINDOW_MS, limit * ADDRESS_FACTOR);
  // Another organisation's member of the same name is another pair; the address is the same.
  return rows.map((r) => ({ at: r.at, username: r.org_id === org.id ? r.username : null }));
}

export interface LoginResult {
  cookieValue: string;
  user: UserRow;
}

/**
 * The sign-in attempt's gate and its record (DESIGN.md 4): refuses a suspended organisation and
 * an address or (username, address) over the failure limit; `fail` records a failure (a
 * passkey's, under NO_USERNAME, counts for the address only).
 */
export async function signInGate(database: Database, config: Pick<Config, 'loginFailures'>, org: Organisation, username: string, address: string, now: number) {
  if (org.suspended) throw forbidden('organisation suspended');
  if (config.loginFailures > 0) throttle(await failuresOf(database, org, address, config.loginFailures, now), username, config.loginFailures, now);
  return async function fail(message: string): Promise<never> {
    // Keep the table small: failures older than the window no longer count for anyone.
    await insertFailure(tenant(database.db, org.id), username, address, now, now - WINDOW_MS);
    throw unauthorized(message);
  };
}

/**
 * Opens a session for a member who proved who they are; clears their failures from this address.
 * While single sign-on is enforced only a break-glass member gets here, and the sign-in is audited.
 */
export async function openSession(
  database: Database,
  org: Organisation,
  user: UserRow,
  username: string,
  address: string,
  now: number,
  method: 'password' | 'passkey' = 'password',
): Promise<LoginResult> {
  const cookieValue = newSecret();
  await database.db.transaction().execute(async (trx) => {
    const tt = tenant(trx, org.id);
    await clearFailures(tt, username, address);
    await insertSession(tt, {
      id: sha256Hex(cookieValue),
      user_id: user.id,
      created_at: now,
      last_seen_at: now,
      expires_at: now + SESSION_LIFETIME_MS,
      method,
    });
    await stampLogin(tt, user.id, now);
    if (ssoEnforced(await ssoEnforcement(tt))) {
      await recordAudit(
        tt,
        { actor: { name: user.username }, now },
        {
          action: 'auth.break_glass_login',
          subjectType: 'user',
          subjectId: user.id,
          summary: `${user.username} signed in with a ${method} while single sign-on is required (break-glass)`,
          details: { method },
        },
      );
    }
  });
  return { cookieValue, user };
}

/** DESIGN.md 21: a member single sign-on shuts out gets the answer of wrong credentials. */
export async function shutOut(database: Database, org: Organisation, user: UserRow): Promise<boolean> {
  return shutOutBySso(await ssoEnforcement(tenant(database.db, org.id)), user);
}

/**
 * Signs a person in. A missing user, a wrong password and a disabled account give the same
 * answer after the same work (a password hash is always verified).
 */
export async function login(
  database: Database,
  config: Pick<Config, 'loginFailures'>,
  org: Organisation,
  input: { username: string; password: string },
  address: string,
): Promise<LoginResult> {
  const now = Date.now();
  const fail = await signInGate(database, config, org, input.username, address, now);
  const user = await findUserByUsername(tenant(database.db, org.id), input.username);
  const passwordOk = await verifyPassword(input.password, user?.password_hash ?? null);
  if (!user || !passwordOk || user.active !== 1 || (await shutOut(database, org, user))) return fail('wrong username or password');
  return openSession(database, org, user, input.username, address, now);
}
