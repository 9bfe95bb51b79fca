import { lockRow, transaction, type Database } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import type { Organisation } from '../orgs/repo.js';
import { roleAllows, scopesAllow, type Role, type Scope } from '../auth/access.js';
import type { TokenRow } from '../auth/credentials.js';

export type Actor =
  | { kind: 'user'; name: string; userId: number; displayName: string; role: Role; sessionId: string }
  | { kind: 'token'; name: string; tokenId: string; tokenName: string; scopes: string[] }
  /** A platform account inside an organisation (DESIGN.md 8), acting with `role`'s permissions. */
  | { kind: 'platform'; name: string; accountId: number; displayName: string; platformRole: string; role: Role; sessionId: string }
  /** The operator CLI, which acts on the database directly. */
  | { kind: 'system'; name: string };

/** Everything a service needs to know about who asks, for which organisation. */
export interface Ctx {
  database: Database;
  org: Organisation;
  tenant: Tenant;
  actor: Actor;
  now: number;
  can(scope: Scope): boolean;
  /** Set when the organisation and API token came from this process's caches, for the request's transaction to confirm. */
  cached?: CachedCaller;
}

export interface CachedCaller {
  /** The token's row as cached; `org` is the organisation as cached. */
  token: TokenRow;
  /** Forgets the cached organisation and token, so the next admission reads them. */
  forget(): void;
}

/** Thrown in a transaction that finds something its request took from a cache changed: the request is judged again (http/tenancy.ts confirmed). */
export class StaleCache extends Error {}

export function makeCtx(database: Database, org: Organisation, actor: Actor, now = Date.now()): Ctx {
  return {
    database,
    org,
    tenant: tenant(database.db, org.id),
    actor,
    now,
    can: (scope) =>
      actor.kind === 'system' || (actor.kind === 'token' ? scopesAllow(actor.scopes, scope) : roleAllows(actor.role, scope)),
  };
}

/**
 * Runs `work` in one transaction with a tenant handle bound to it. `lockOrganisation`
 * serialises writers that check an organisation-wide count (plan capacity, last administrator).
 */
export function inTransaction<T>(
  ctx: Pick<Ctx, 'database' | 'org'>,
  work: (t: Tenant) => Promise<T>,
  { lockOrganisation = false } = {},
): Promise<T> {
  return transaction(ctx.database, async (trx) => {
    if (lockOrganisation) await lockRow(ctx.database, trx, 'organisations', ctx.org.id);
    return work(tenant(trx, ctx.org.id));
  });
}
