import type { Db } from '../db/database.js';
import { tenant } from '../db/tenant.js';

/** Where a ceremony belongs: an organisation's members (`org:<id>`) or the platform's accounts. */
export type Realm = `org:${number}` | 'platform';

/**
 * Where a realm keeps its passkeys: an organisation's members' in `passkeys`, through its tenant
 * handle; the platform accounts' in `platform_passkeys`, outside every organisation.
 */
export type PasskeyBook = { realm: `org:${number}`; orgId: number } | { realm: 'platform' };

/** A stored passkey, whoever owns it. */
export interface PasskeyRow {
  id: number;
  /** The member's or platform account's id. */
  ownerId: number;
  credential_id: string;
  public_key: string;
  counter: number;
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

const members = (db: Db, book: PasskeyBook) => (book.realm === 'platform' ? null : tenant(db, book.orgId));

/** The owner's passkeys, oldest first. */
export async function passkeysOf(db: Db, book: PasskeyBook, ownerId: number): Promise<PasskeyRow[]> {
  const t = members(db, book);
  if (t)
    return (await t.selectFrom('passkeys').selectAll().where('user_id', '=', ownerId).orderBy('id').execute()).map(({ user_id, ...row }) => ({
      ...row,
      ownerId: user_id,
    }));
  return (await db.selectFrom('platform_passkeys').selectAll().where('account_id', '=', ownerId).orderBy('id').execute()).map(({ account_id, ...row }) => ({
    ...row,
    ownerId: account_id,
  }));
}

export interface NewPasskey {
  credentialId: string;
  publicKey: string;
  counter: number;
  transports: string;
  name: string;
  createdAt: number;
}

export async function insertPasskey(db: Db, book: PasskeyBook, ownerId: number, key: NewPasskey): Promise<Omit<PasskeyRow, 'ownerId'>> {
  const columns = {
    credential_id: key.credentialId,
    public_key: key.publicKey,
    counter: key.counter,
    transports: key.transports,
    name: key.name,
    created_at: key.createdAt,
    last_used_at: null,
  };
  const t = members(db, book);
  if (t)
    return t
      .insertInto('passkeys', { user_id: ownerId, ...columns })
      .returningAll()
      .executeTakeFirstOrThrow();
  return db
    .insertInto('platform_passkeys')
    .values({ account_id: ownerId, ...columns })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** One of the owner's passkeys, if it is theirs. */
export function findOwnPasskey(db: Db, book: PasskeyBook, ownerId: number, id: number): Promise<{ id: number; name: string } | undefined> {
  const t = members(db, book);
  if (t) return t.selectFrom('passkeys').select(['id', 'name']).where('id', '=', id).where('user_id', '=', ownerId).executeTakeFirst();
  return db.selectFrom('platform_passkeys').select(['id', 'name']).where('id', '=', id).where('account_id', '=', ownerId).executeTakeFirst();
}

export async function deletePasskey(db: Db, book: PasskeyBook, id: number): Promise<void> {
  const t = members(db, book);
  if (t) await t.deleteFrom('passkeys').where('id', '=', id).execute();
  else await db.deleteFrom('platform_passkeys').where('id', '=', id).execute();
}

/** The realm's passkey with this credential id, if one is stored. */
export async function passkeyByCredential(db: Db, book: PasskeyBook, credentialId: string): Promise<PasskeyRow | undefined> {
  const t = members(db, book);
  if (t) {
    const row = await t.selectFrom('passkeys').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
    return row && { ...row, ownerId: row.user_id };
  }
  const row = await db.selectFrom('platform_passkeys').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
  return row && { ...row, ownerId: row.account_id };
}

/** A sign-in used the passkey: its new counter and when. */
export async function touchPasskey(db: Db, book: PasskeyBook, id: number, counter: number, now: number): Promise<void> {
  const t = members(db, book);
  if (t) await t.updateTable('passkeys').set({ counter, last_used_at: now }).where('id', '=', id).execute();
  else await db.updateTable('platform_passkeys').set({ counter, last_used_at: now }).where('id', '=', id).execute();
}

/** Stores a challenge issued now; expired ones go as new ones come, so the table stays small. */
export async function insertChallenge(
  db: Db,
  challenge: string,
  realm: Realm,
  purpose: 'register' | 'login',
  subject: number | null,
  now: number,
  expiresAt: number,
): Promise<void> {
  await db.deleteFrom('webauthn_challenges').where('expires_at', '<=', now).execute();
  await db.insertInto('webauthn_challenges').values({ challenge, realm, purpose, subject, expires_at: expiresAt }).execute();
}

/** Deletes the challenge if it was issued for this realm, purpose and person and has not expired: true when it was. */
export async function takeChallenge(
  db: Db,
  challenge: string,
  realm: Realm,
  purpose: 'register' | 'login',
  subject: number | null,
  now: number,
): Promise<boolean> {
  let query = db
    .deleteFrom('webauthn_challenges')
    .where('challenge', '=', challenge)
    .where('realm', '=', realm)
    .where('purpose', '=', purpose)
    .where('expires_at', '>', now);
  query = subject === null ? query.where('subject', 'is', null) : query.where('subject', '=', subject);
  const taken = await query.executeTakeFirst();
  return Number(taken.numDeletedRows) === 1;
}
