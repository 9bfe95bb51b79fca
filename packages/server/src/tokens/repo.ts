import type { Insertable } from 'kysely';
import type { TokenRow } from '../core/context.js';
import type { ApiTokensTable } from '../db/schema.js';
import type { Tenant } from '../db/tenant.js';
import { iso } from '../core/schemas.js';

export function toTokenRecord(row: TokenRow) {
  return {
    id: row.id,
    name: row.name,
    scopes: JSON.parse(row.scopes) as string[],
    createdAt: iso(row.created_at),
    createdBy: row.created_by,
    expiresAt: iso(row.expires_at),
    lastUsedAt: iso(row.last_used_at),
    revokedAt: iso(row.revoked_at),
  };
}

export const listTokenRows = (t: Tenant) => t.selectFrom('api_tokens').selectAll().orderBy('created_at', 'desc').execute();

export const insertToken = (t: Tenant, values: Omit<Insertable<ApiTokensTable>, 'org_id'>) =>
  t.insertInto('api_tokens', values).returningAll().executeTakeFirstOrThrow();

/** Revokes the token (a revoked one keeps its first revocation time); undefined when there is none. */
export const revokeTokenRow = (t: Tenant, id: string, now: number) =>
  t
    .updateTable('api_tokens')
    .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(now)) }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();

export const deleteTokenRow = (t: Tenant, id: string) => t.deleteFrom('api_tokens').where('id', '=', id).returning(['name']).executeTakeFirst();
