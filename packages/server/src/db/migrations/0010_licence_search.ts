import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Issue 15: on PostgreSQL, `q` is served like SQLite's FTS5 trigram table: a GIN index over every
 * three-character substring of search_text, spaces and punctuation included, so a search can ask
 * for its rarest trigrams (listings/repos/search.ts). pg_trgm's index, which knows only trigrams within
 * words, goes: `renewal call 7` could only ask it for the common ones.
 */
export function licenceSearch(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await sql`create function licence_trigrams(text) returns text[] language sql immutable strict parallel safe as
        $$ select coalesce(array_agg(distinct substr($1, i, 3)), '{}') from generate_series(1, length($1) - 2) as i $$`.execute(db);
      await sql`create index licences_trigrams on licences using gin (licence_trigrams(search_text))`.execute(db);
      await sql`drop index licences_search`.execute(db);
    },
  };
}
