import type { Generated } from 'kysely';

/*
 * One representation on both dialects: times are epoch milliseconds (int8), flags are
 * integers 0/1 and structured values are JSON text. Both drivers then return the same
 * JavaScript values, so no repository converts per dialect (see docs/decisions.md).
 */

export interface OrganisationsTable {
  id: Generated<number>;
  slug: string;
  name: string;
  plan_limit: number | null;
  timezone: string;
  settings_updated_at: number | null;
  settings_updated_by: string | null;
  created_at: number;
}

export interface UsersTable {
  id: Generated<number>;
  org_id: number;
  username: string;
  display_name: string;
  email: string | null;
  role: string;
  active: number;
  password_hash: string | null;
  created_at: number;
  created_by: string | null;
  last_login_at: number | null;
}

export interface SessionsTable {
  /** SHA-256 (hex) of the cookie secret; the secret itself is never stored. */
  id: string;
  org_id: number;
  user_id: number;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

export interface ApiTokensTable {
  id: string;
  org_id: number;
  name: string;
  scopes: string;
  secret_hash: string;
  created_at: number;
  created_by: string;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface LoginFailuresTable {
  id: Generated<number>;
  org_id: number;
  username: string;
  address: string;
  at: number;
}

export interface AuditEntriesTable {
  id: Generated<number>;
  org_id: number;
  at: number;
  actor: string;
  action: string;
  subject_type: string;
  subject_id: string | null;
  lid: string | null;
  summary: string;
  details: string | null;
}

export interface Schema {
  organisations: OrganisationsTable;
  users: UsersTable;
  sessions: SessionsTable;
  api_tokens: ApiTokensTable;
  login_failures: LoginFailuresTable;
  audit_entries: AuditEntriesTable;
}
