import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoBase64URL } from '@simplewebauthn/server/helpers';
import type { Config } from '../config.js';
import type { Database, Db } from '../db/database.js';
import { unauthorized } from '../core/errors.js';
import { insertChallenge, takeChallenge, type Realm } from './repo.js';

/** DESIGN.md 9: a challenge lives five minutes and is used once. */
const CHALLENGE_MS = 5 * 60 * 1000;

export interface PasskeyAccount {
  id: number;
  username: string;
  displayName: string;
}

export interface StoredPasskey {
  id: number;
  credential_id: string;
  public_key: string;
  counter: number;
  transports: string;
}

const rp = (config: Pick<Config, 'passkeyOrigin'>) => ({ origin: config.passkeyOrigin, id: new URL(config.passkeyOrigin).hostname });

/** The failure of any passkey step, never saying which check failed. */
export const passkeyRefused = () => unauthorized('passkey not accepted');

const remember = (db: Db, challenge: string, realm: Realm, purpose: 'register' | 'login', subject: number | null, now: number) =>
  insertChallenge(db, challenge, realm, purpose, subject, now, now + CHALLENGE_MS);

/**
 * Takes the challenge the browser signed out of the store: it must have been issued here, for
 * this realm, purpose and person, and not have expired. Deleting it is what makes it single-use.
 */
async function signedChallenge(
  db: Db,
  clientDataJSON: unknown,
  realm: Realm,
  purpose: 'register' | 'login',
  subject: number | null,
  now: number,
): Promise<string> {
  let challenge: unknown;
  try {
    challenge = (JSON.parse(isoBase64URL.toUTF8String(String(clientDataJSON))) as { challenge?: unknown }).challenge;
  } catch {
    throw passkeyRefused();
  }
  if (typeof challenge !== 'string' || challenge.length > 200) throw passkeyRefused();
  if (!(await takeChallenge(db, challenge, realm, purpose, subject, now))) throw passkeyRefused();
  return challenge;
}

/** Creation options for a new passkey: discoverable, user verification required, no attestation. */
export async function registrationOptions(
  db: Db,
  config: Pick<Config, 'passkeyOrigin'>,
  realm: Realm,
  owner: PasskeyAccount,
  existing: StoredPasskey[],
  now: number,
) {
  const options = await generateRegistrationOptions({
    rpName: 'Licensor',
    rpID: rp(config).id,
    userName: owner.username,
    userDisplayName: owner.displayName,
    userID: new TextEncoder().encode(`${realm}:${owner.id}`),
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: JSON.parse(p.transports) as AuthenticatorTransport[] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  });
  await remember(db, options.challenge, realm, 'register', owner.id, now);
  return options;
}

/** The new credential, once its response verifies against a challenge issued to this person. */
export async function verifyRegistration(
  database: Database,
  config: Pick<Config, 'passkeyOrigin'>,
  realm: Realm,
  ownerId: number,
  response: RegistrationResponseJSON,
  now: number,
) {
  const expectedChallenge = await signedChallenge(database.db, response?.response?.clientDataJSON, realm, 'register', ownerId, now);
  const { origin, id } = rp(config);
  const result = await verifyRegistrationResponse({
    response,
    expectedChallenge,
    expectedOrigin: origin,
    expectedRPID: id,
    requireUserVerification: true,
  }).catch(() => null);
  if (!result?.verified) throw passkeyRefused();
  const { credential } = result.registrationInfo;
  return {
    credentialId: credential.id,
    publicKey: isoBase64URL.fromBuffer(credential.publicKey),
    counter: credential.counter,
    transports: JSON.stringify(credential.transports ?? []),
  };
}

/** Request options for a passkey sign-in: any discoverable credential of this realm. */
export async function authenticationOptions(db: Db, config: Pick<Config, 'passkeyOrigin'>, realm: Realm, now: number) {
  const options = await generateAuthenticationOptions({ rpID: rp(config).id, userVerification: 'required', allowCredentials: [] });
  await remember(db, options.challenge, realm, 'login', null, now);
  return options;
}

/**
 * Verifies a sign-in: the challenge was issued for this realm, the credential is one `find`
 * knows, the signature holds with user verification, and the counter did not go backwards.
 * Answers the passkey and its new counter.
 */
export async function verifyAuthentication<T extends StoredPasskey>(
  database: Database,
  config: Pick<Config, 'passkeyOrigin'>,
  realm: Realm,
  response: AuthenticationResponseJSON,
  find: (credentialId: string) => Promise<T | undefined>,
  now: number,
): Promise<{ passkey: T; counter: number }> {
  const expectedChallenge = await signedChallenge(database.db, response?.response?.clientDataJSON, realm, 'login', null, now);
  if (typeof response?.id !== 'string' || response.id.length > 1024) throw passkeyRefused();
  const passkey = await find(response.id);
  if (!passkey) throw passkeyRefused();
  const { origin, id } = rp(config);
  const result = await verifyAuthenticationResponse({
    response,
    expectedChallenge,
    expectedOrigin: origin,
    expectedRPID: id,
    requireUserVerification: true,
    credential: {
      id: passkey.credential_id,
      publicKey: isoBase64URL.toBuffer(passkey.public_key),
      counter: Number(passkey.counter),
      transports: JSON.parse(passkey.transports) as AuthenticatorTransport[],
    },
  }).catch(() => null);
  if (!result?.verified) throw passkeyRefused();
  return { passkey, counter: result.authenticationInfo.newCounter };
}
