import { sql, type Expression, type SqlBool } from 'kysely';

/**
 * DESIGN.md 13: the one rule for "live" that every reader uses (check, fetch, release, listings,
 * dashboard, portal, export): not released, and no lease end (a node-locked seat) or an end later
 * than now. A lapsed lease frees its seat by time alone; nothing has to write.
 */
export function liveBinding(table: string, now: unknown): Expression<SqlBool> {
  const column = (name: string) => sql.ref(`${table}.${name}`);
  return sql<SqlBool>`(${column('released_at')} is null and (${column('lease_ends_at')} is null or ${column('lease_ends_at')} > ${now}))`;
}

/** The same rule for a row already read. */
export const isLive = (row: { released_at: number | null; lease_ends_at: number | null }, now: number): boolean =>
  row.released_at === null && (row.lease_ends_at === null || row.lease_ends_at > now);
