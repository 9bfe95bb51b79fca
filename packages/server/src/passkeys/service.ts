import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import { invalid, notFound, tooManyRequests } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { verifyPassword } from '../core/passwords.js';
import { transaction, type Database, type Db } from '../db/database.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { deletePasskey, findOwnPasskey, insertPasskey, passkeyByCredential, passkeysOf, touchPasskey, type PasskeyBook } from './repo.js';
import { authenticationOptions, passkeyRefused, registrationOptions, verifyAuthentication, verifyRegistration, type PasskeyAccount } from './webauthn.js';

// DESIGN.md 9: requests for sign-in options are limited per address.
const OPTIONS_PER_MINUTE = 60;

type Doc = { summary: string; description?: string };

/** How one realm's passkey routes are declared and documented; their paths are the same in each. */
export interface PasskeyRoutesDoc {
  /** The access of the routes that manage the signed-in account's passkeys, and of the sign-in's. */
  manage: FastifyContextConfig;
  signIn: FastifyContextConfig;
  /** The path parameters of a passkey's own path. */
  passkeyParams: TSchema;
  /** What a sign-in answers. */
  identity: TSchema;
  docs: { startAdding: Doc; add: Doc; list: Doc; delete: Doc; startSignIn: Doc; signIn: Doc };
}

/**
 * One realm's side of the passkey routes (DESIGN.md 9): whose passkeys they are, how the realm
 * signs its people in and what it audits. An organisation's members (auth/passkeys.ts) and the
 * platform's accounts (platform/passkeys.ts) each have one; their passkeys are theirs alone.
 */
export interface PasskeyOwner<Account> {
  /** How the realm's routes are declared and documented (passkeys/routes.ts). */
  routes: PasskeyRoutesDoc;
  /** Where the request's realm keeps its passkeys. */
  book(request: FastifyRequest): PasskeyBook;
  /** The id of the signed-in account managing its own passkeys (403 for a credential that may not). */
  accountId(request: FastifyRequest): number;
  /** That account, as a new passkey is made for it. */
  account(request: FastifyRequest): Promise<PasskeyAccount & { passwordHash: string | null }>;
  /** A realm's own refusal of a registration (a member without a password, long after its single sign-on). */
  refuseAdding?(request: FastifyRequest, account: { passwordHash: string | null }): Promise<void>;
  now(request: FastifyRequest): number;
  /** Audits a change to the account's passkeys, in the change's transaction (`db`). */
  audit(db: Db, request: FastifyRequest, action: 'passkey.registered' | 'passkey.deleted', name: string): Promise<void>;
  /** A realm's own refusal of a sign-in before its options (a suspended organisation). */
  refuseSignIn(request: FastifyRequest): void;
  /** The realm's sign-in limits (DESIGN.md 4); `fail` records a failure and throws the 401. */
  signInGate(request: FastifyRequest, now: number): Promise<(message: string) => Promise<never>>;
  /** The account a verified passkey names, if it may sign in. */
  signingIn(request: FastifyRequest, accountId: number): Promise<Account | undefined>;
  /** Opens the account's session and sets its cookie: the sign-in's answer. */
  openSession(request: FastifyRequest, reply: FastifyReply, account: Account, now: number): Promise<unknown>;
}

const toPasskey = (row: { id: number; name: string; created_at: number; last_used_at: number | null }) => ({
  id: row.id,
  name: row.name,
  createdAt: iso(row.created_at),
  lastUsedAt: iso(row.last_used_at),
});

/** Creation options for a new passkey; with a password, the current one is asked again. */
export async function startAdding(
  database: Database,
  config: Pick<Config, 'passkeyOrigin'>,
  owner: PasskeyOwner<unknown>,
  request: FastifyRequest,
  currentPassword: string | undefined,
) {
  const account = await owner.account(request);
  await owner.refuseAdding?.(request, account);
  if (account.passwordHash !== null && !(await verifyPassword(currentPassword ?? '', account.passwordHash)))
    throw invalid('currentPassword', 'this is not your password');
  const book = owner.book(request);
  const existing = await passkeysOf(database.db, book, account.id);
  return registrationOptions(database.db, config, book.realm, account, existing, owner.now(request));
}

/** Stores the passkey a verified registration made, with its audit entry. */
export async function addPasskey(
  database: Database,
  config: Pick<Config, 'passkeyOrigin'>,
  owner: PasskeyOwner<unknown>,
  request: FastifyRequest,
  name: string,
  response: RegistrationResponseJSON,
) {
  const accountId = owner.accountId(request);
  const now = owner.now(request);
  const book = owner.book(request);
  if (owner.refuseAdding) await owner.refuseAdding(request, await owner.account(request));
  const credential = await verifyRegistration(database, config, book.realm, accountId, response, now);
  return transaction(database, async (trx) => {
    const created = await insertPasskey(trx, book, accountId, { ...credential, name, createdAt: now });
    await owner.audit(trx, request, 'passkey.registered', created.name);
    return toPasskey(created);
  });
}

export async function listPasskeys(database: Database, owner: PasskeyOwner<unknown>, request: FastifyRequest) {
  return (await passkeysOf(database.db, owner.book(request), owner.accountId(request))).map(toPasskey);
}

export async function removePasskey(database: Database, owner: PasskeyOwner<unknown>, request: FastifyRequest, id: number): Promise<void> {
  const accountId = owner.accountId(request);
  const book = owner.book(request);
  await transaction(database, async (trx) => {
    const row = await findOwnPasskey(trx, book, accountId, id);
    if (!row) throw notFound(`no passkey ${id}`);
    await deletePasskey(trx, book, row.id);
    await owner.audit(trx, request, 'passkey.deleted', row.name);
  });
}

/** Options for a passkey sign-in: any discoverable credential of the realm, limited per address. */
export async function startSignIn(
  database: Database,
  config: Pick<Config, 'passkeyOrigin'>,
  rateLimits: RateLimiter,
  owner: PasskeyOwner<unknown>,
  request: FastifyRequest,
) {
  const now = Date.now();
  const book = owner.book(request);
  const decision = await rateLimits.hit(`passkey:${book.realm === 'platform' ? 'platform' : 'member'}:${request.ip}`, OPTIONS_PER_MINUTE, now);
  if (!decision.allowed) throw tooManyRequests('too many passkey sign-in requests from this address', decision.retryAfterSeconds);
  owner.refuseSignIn(request);
  return authenticationOptions(database.db, config, book.realm, now);
}

/** A passkey sign-in: every failure is the same 401, counted in the realm's sign-in limits. */
export async function signInWithPasskey<Account>(
  database: Database,
  config: Pick<Config, 'passkeyOrigin'>,
  owner: PasskeyOwner<Account>,
  request: FastifyRequest,
  reply: FastifyReply,
  response: AuthenticationResponseJSON,
) {
  const now = Date.now();
  const fail = await owner.signInGate(request, now);
  const book = owner.book(request);
  try {
    const { passkey, counter } = await verifyAuthentication(
      database,
      config,
      book.realm,
      response,
      (credentialId) => passkeyByCredential(database.db, book, credentialId),
      now,
    );
    const account = await owner.signingIn(request, passkey.ownerId);
    if (!account) throw passkeyRefused();
    await touchPasskey(database.db, book, passkey.id, counter, now);
    return await owner.openSession(request, reply, account, now);
  } catch {
    return fail('passkey not accepted');
  }
}
