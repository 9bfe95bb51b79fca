import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Issue 34: a licence's stamp (lastCheckedAt, in two sort indexes) is no HOT update on
 * PostgreSQL, so each one evaluates the trigram index's expression afresh. 0010's body spends
 * half its time in `distinct`, sorting out duplicates that the GIN index's array_ops drops by
 * itself (docs/benchmarks.md). The same trigrams, duplicates kept: the index's keys and every `@>`
 * answer are unchanged, so the index built with the old body stays valid as it is.
 */
export function licenceTrigrams(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await sql`create or replace function licence_trigrams(text) returns text[] language sql immutable strict parallel safe as
        $$ select array(select substr($1, i, 3) from generate_series(1, length($1) - 2) as i) $$`.execute(db);
    },
  };
}
