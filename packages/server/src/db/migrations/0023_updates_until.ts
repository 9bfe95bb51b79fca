import { sql, type Kysely, type Migration } from 'kysely';

/**
 * DESIGN.md 20: every licence's `updatesUntil` is stored, so that a release is covered by one
 * comparison. Licences issued before update windows were signed without `upd`: theirs is the
 * grace end (Unix seconds; grace ends are whole seconds), and a perpetual one's stays null (every
 * release). 0020 added the column empty; this fills it as issue, renewal and trials now write it.
 */
export function updatesUntil(): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`update licences set updates_until = grace_ends_at / 1000 where updates_until is null and grace_ends_at is not null`.execute(db);
    },
  };
}
