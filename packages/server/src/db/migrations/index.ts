import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Database, DialectName } from '../database.js';
import { foundation } from './0001_foundation.js';

/** Migrations are written once for both dialects; each receives the dialect for the few DDL differences. */
const migrations: Record<string, (dialect: DialectName) => Migration> = {
  '0001_foundation': foundation,
};

export async function migrateToLatest(database: Database): Promise<string[]> {
  const provider: MigrationProvider = {
    getMigrations: async () =>
      Object.fromEntries(Object.entries(migrations).map(([name, make]) => [name, make(database.dialect)])),
  };
  const migrator = new Migrator({ db: database.db as Kysely<unknown>, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
