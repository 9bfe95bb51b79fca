import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { forbidden, unauthorized } from '../core/errors.js';
import type { Actor, Organisation, TokenRow } from '../core/context.js';
import { isRole } from '../core/access.js';
import type { Callers } from '../http/tenancy.js';
import { findOrganisationBySlug, type OrganisationCache } from '../orgs/repo.js';
import { digestsEqual, sha256Hex } from '../core/secrets.js';
import { shutOutBySso } from './enforcement.js';
import { findPlatformSession, findSession, findToken, stampPlatformSession, stampSession, stampToken } from './repo.js';

export const SESSION_COOKIE = 'svc_session';
export const SESSION_LIFETIME_MS = 12 * 60 * 60 * 1000;
// lastUsedAt and a session's sliding expiry are stamped at most once a minute, not per request.
const STAMP_INTERVAL_MS = 60 * 1000;

const TOKEN_HEADER = /^Bearer svc_([a-z0-9]{12,32})_([0-9a-f]{64})$/;
const SESSION_VALUE = /^[0-9a-f]{64}$/;

// The control plane's session (DESIGN.md 8) is read here too: a platform account may act inside an organisation.
export const PLATFORM_ROLES = ['PLATFORM_ADMIN', 'PLATFORM_SUPPORT'] as const;
export type PlatformRole = (typeof PLATFORM_ROLES)[number];
export const PLATFORM_COOKIE = 'svc_platform';

export interface PlatformAccount {
  id: number;
  username: string;
  displayName: string;
  role: PlatformRole;
  sessionId: string;
}

/*
 * Credentials are looked up by their own unique id, before any tenant is trusted; the
 * organisation they belong to is then compared with the one the URL selected.
 */
async function tokenActor(database: Database, header: string, org: Organisation, now: number, tokens?: TokenCache): Promise<Actor> {
  const match = TOKEN_HEADER.exec(header);
  if (!match) throw unauthorized('malformed API token');
  const [, id, secret] = match as unknown as [string, string, string];
  const row = tokens?.get(id) ?? (await findToken(database.db, id));
  if (!row || !digestsEqual(row.secret_hash, sha256Hex(secret))) throw unauthorized('unknown API token');
  if (row.revoked_at !== null) throw unauthorized('this API token has been revoked');
  if (row.expires_at !== null && row.expires_at <= now) throw unauthorized('this API token has expired');
  if (row.org_id !== org.id) throw forbidden('this credential belongs to another organisation');
  if (row.last_used_at === null || now - row.last_used_at >= STAMP_INTERVAL_MS) {
    await stampToken(database.db, id, now);
    row.last_used_at = now;
  }
  tokens?.remember(row);
  return { kind: 'token', name: `token/${row.name}`, tokenId: row.id, tokenName: row.name, scopes: JSON.parse(row.scopes) };
}

/** The id an Authorization header names, when it is an API token's. */
const tokenIdOf = (header: string | undefined) => (header === undefined ? undefined : TOKEN_HEADER.exec(header)?.[1]);

/**
 * API tokens by id, for the routes whose transaction confirms them (licences/opening.ts): only a
 * token that was accepted is kept. `last_used_at` is what this process last stamped or read.
 */
class TokenCache {
  private readonly byId = new Map<string, TokenRow>();

  get(id: string): TokenRow | undefined {
    return this.byId.get(id);
  }

  remember(row: TokenRow): void {
    if (!this.byId.has(row.id) && this.byId.size >= 10_000) this.byId.delete(this.byId.keys().next().value!);
    this.byId.set(row.id, row);
  }

  forget(id: string): void {
    this.byId.delete(id);
  }
}

async function sessionActor(database: Database, value: string, org: Organisation, now: number): Promise<Actor> {
  if (!SESSION_VALUE.test(value)) throw unauthorized('session expired or signed out');
  const id = sha256Hex(value);
  const row = await findSession(database.db, id);
  // Role and `active` are read here on every request, so a change takes effect at once.
  if (!row || row.expires_at <= now || row.active !== 1 || !isRole(row.role)) {
    throw unauthorized('session expired or signed out');
  }
  // DESIGN.md 21, judged when read: an SSO session ends 12 hours after its sign-in and with the
  // configuration; one opened by a password or passkey ends when enforcement shuts its member out.
  const sso = { enforce: row.sso_enforce, break_glass: row.sso_break_glass };
  if (
    (row.hard_end !== null && row.hard_end <= now) ||
    (row.method === 'sso' ? row.sso_id === null : shutOutBySso(sso, { id: row.user_id, role: row.role, active: row.active }))
  ) {
    throw unauthorized('session expired or signed out');
  }
  if (row.org_id !== org.id) throw forbidden('this credential belongs to another organisation');
  if (now - row.last_seen_at >= STAMP_INTERVAL_MS) {
    await stampSession(database.db, id, now, now + SESSION_LIFETIME_MS);
  }
  return {
    kind: 'user',
    name: row.username,
    userId: row.user_id,
    displayName: row.display_name,
    role: row.role,
    sessionId: id,
  };
}

/** The account a `svc_platform` cookie signs in, or a 401; role and `active` read on every request. */
export async function platformSession(database: Database, value: string, now: number): Promise<PlatformAccount> {
  if (!SESSION_VALUE.test(value)) throw unauthorized('platform session expired or signed out');
  const id = sha256Hex(value);
  const row = await findPlatformSession(database.db, id);
  if (!row || row.expires_at <= now || row.active !== 1 || !(PLATFORM_ROLES as readonly string[]).includes(row.role)) {
    throw unauthorized('platform session expired or signed out');
  }
  if (now - row.last_seen_at >= STAMP_INTERVAL_MS) {
    await stampPlatformSession(database.db, id, now, now + SESSION_LIFETIME_MS);
  }
  return { id: row.account_id, username: row.username, displayName: row.display_name, role: row.role as PlatformRole, sessionId: id };
}

/** DESIGN.md 8: PLATFORM_ADMIN acts as an ORG_ADMIN, PLATFORM_SUPPORT as a VIEWER, under `platform/<username>`. */
function platformActor(account: PlatformAccount): Actor {
  return {
    kind: 'platform',
    name: `platform/${account.username}`,
    accountId: account.id,
    displayName: account.displayName,
    platformRole: account.role,
    role: account.role === 'PLATFORM_ADMIN' ? 'ORG_ADMIN' : 'VIEWER',
    sessionId: account.sessionId,
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Who is asking. An Authorization header is judged alone (a bad token is 401 even beside a
 * good cookie); otherwise the session cookie, whose unsafe requests must come from our origin.
 */
async function authenticate(
  request: FastifyRequest,
  database: Database,
  config: Pick<Config, 'ownOrigins'>,
  org: Organisation,
  now: number,
  tokens?: TokenCache,
): Promise<Actor> {
  const header = request.headers.authorization;
  if (header !== undefined) return tokenActor(database, header, org, now, tokens);
  const cookie = request.cookies[SESSION_COOKIE];
  const platformCookie = request.cookies[PLATFORM_COOKIE];
  if (!cookie && !platformCookie) throw unauthorized('authentication required: send a session cookie or an API token');
  const actor = cookie ? await sessionActor(database, cookie, org, now) : platformActor(await platformSession(database, platformCookie!, now));
  const origin = request.headers.origin;
  if (!SAFE_METHODS.has(request.method) && origin !== undefined && !config.ownOrigins.includes(origin)) {
    throw forbidden(`requests from origin ${origin} are not accepted`);
  }
  return actor;
}

/**
 * An organisation's callers for the tenancy hook (http/tenancy.ts): its organisation by slug and
 * who a credential is, the organisation and API tokens from this process's caches where asked.
 */
export function memberCallers(database: Database, config: Pick<Config, 'ownOrigins'>, organisations: OrganisationCache): Omit<Callers, 'customer'> {
  const tokens = new TokenCache();
  return {
    organisation: (slug, cached) => (cached ? organisations.find(database.db, slug) : findOrganisationBySlug(database.db, slug)),
    member: (request, org, now, cached) => authenticate(request, database, config, org, now, cached ? tokens : undefined),
    cachedToken: (id) => tokens.get(id),
    forget: (slug, authorization) => {
      organisations.forget(slug);
      const id = tokenIdOf(authorization);
      if (id !== undefined) tokens.forget(id);
    },
  };
}
