import type { Selectable } from 'kysely';
import type { Database } from '../db/database.js';
import type { ApiTokensTable } from '../db/schema.js';
import { tenant, type Tenant } from '../db/tenant.js';
import { roleAllows, scopesAllow, type Role, type Scope } from './access.js';

/** An organisation (a tenant) as every request carries it (orgs/repo.ts reads it). */
export interface Organisation {
  id: number;
  slug: string;
  name: string;
  planLimit: number | null;
  /** DESIGN.md 18: the control plane's cap on its ACTIVE trials; null for none. */
  trialLimit: number | null;
  timezone: string;
  settingsUpdatedAt: number | null;
  settingsUpdatedBy: string | null;
  /** DESIGN.md 8: its members and tokens are refused; checks go on. */
  suspended: boolean;
  createdAt: number;
}

export type TokenRow = Selectable<ApiTokensTable>;

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
  /**
   * A transaction already open that every write of this context joins (inTransaction), its
   * `tenant` bound to it too: an integration's event is applied whole or not at all (DESIGN.md 22).
   */
  within?: Tenant;
}

export interface CachedCaller {
  /** The token's row as cached; `org` is the organisation as cached. */
  token: TokenRow;
  /** Forgets the cached organisation and token, so the next admission reads them. */
  forget(): void;
}

/** Who the portal cookie signs in: one customer of one organisation. */
export interface PortalSession {
  customerId: number;
  sessionId: string;
  tenant: Tenant;
  /** The audit actor, `customer/<id>`. */
  actor: string;
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
    can: (scope) => actor.kind === 'system' || (actor.kind === 'token' ? scopesAllow(actor.scopes, scope) : roleAllows(actor.role, scope)),
  };
}
