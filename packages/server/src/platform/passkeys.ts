import { Type } from 'typebox';
import type { Config } from '../config.js';
import { PLATFORM_COOKIE, SESSION_LIFETIME_MS } from '../auth/credentials.js';
import { NO_USERNAME } from '../auth/login.js';
import { Id } from '../core/schemas.js';
import type { Database } from '../db/database.js';
import type { PasskeyOwner } from '../passkeys/service.js';
import { openPlatformSession, platformIdentity, PlatformIdentity, platformSignInGate } from './accounts.js';
import { findAccount, insertPlatformAudit } from './repo.js';

type AccountRow = NonNullable<Awaited<ReturnType<typeof findAccount>>>;

/** DESIGN.md 9 for platform accounts, under `/platform/api/auth/` (their passkeys are theirs alone). */
export function platformPasskeys(database: Database, config: Config, version: string): PasskeyOwner<AccountRow> {
  const secure = config.publicUrl.startsWith('https:');
  return {
    routes: {
      manage: { platform: 'read' },
      signIn: { platform: 'public' },
      passkeyParams: Type.Object({ id: Id() }),
      identity: PlatformIdentity,
      docs: {
        startAdding: { summary: 'Start adding a passkey to this platform account' },
        add: { summary: 'Add a passkey to this platform account' },
        list: { summary: "This platform account's passkeys" },
        delete: { summary: 'Delete one of this account’s passkeys' },
        startSignIn: { summary: 'Start a passkey sign-in to the control plane' },
        signIn: { summary: 'Sign in to the control plane with a passkey' },
      },
    },
    book: () => ({ realm: 'platform' }),
    accountId: (request) => request.platformAccount.id,
    account: async (request) => {
      const account = (await findAccount(database.db, request.platformAccount.id))!;
      return { id: account.id, username: account.username, displayName: account.display_name, passwordHash: account.password_hash };
    },
    now: () => Date.now(),
    audit: (db, request, action, name) =>
      insertPlatformAudit(db, `platform/${request.platformAccount.username}`, Date.now(), { action, organisation: null, details: { name } }),
    refuseSignIn: () => {},
    signInGate: (request, now) => platformSignInGate(database, config, NO_USERNAME, request.ip, now),
    signingIn: async (_request, accountId) => {
      const account = await findAccount(database.db, accountId);
      return account?.active === 1 ? account : undefined;
    },
    openSession: async (request, reply, account, now) => {
      const opened = await openPlatformSession(database, account, NO_USERNAME, request.ip, now);
      reply.setCookie(PLATFORM_COOKIE, opened.cookieValue, { path: '/', httpOnly: true, sameSite: 'strict', secure, maxAge: SESSION_LIFETIME_MS / 1000 });
      return platformIdentity(opened.account, version);
    },
  };
}
