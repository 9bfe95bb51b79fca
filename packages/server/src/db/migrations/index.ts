import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Database, DialectName } from '../database.js';
import { foundation } from './0001_foundation.js';
import { products } from './0002_products.js';
import { licences } from './0003_licences.js';
import { consoleAmendments } from './0004_console_amendments.js';
import { controlPlane } from './0005_control_plane.js';
import { seatSelfService } from './0006_seat_self_service.js';
import { passkeys } from './0007_passkeys.js';
import { tokenKeys } from './0008_token_keys.js';
import { licenceTallies } from './0009_licence_tallies.js';
import { licenceSearch } from './0010_licence_search.js';
import { licenceSorts } from './0011_licence_sorts.js';
import { floatingLicences } from './0012_floating_licences.js';
import { airGapActivation } from './0013_air_gap_activation.js';

/** Migrations are written once for both dialects; each receives the dialect for the few DDL differences. */
const migrations: Record<string, (dialect: DialectName) => Migration> = {
  '0001_foundation': foundation,
  '0002_products': products,
  '0003_licences': licences,
  '0004_console_amendments': consoleAmendments,
  '0005_control_plane': controlPlane,
  '0006_seat_self_service': seatSelfService,
  '0007_passkeys': passkeys,
  '0008_token_keys': tokenKeys,
  '0009_licence_tallies': licenceTallies,
  '0010_licence_search': licenceSearch,
  '0011_licence_sorts': licenceSorts,
  '0012_floating_licences': floatingLicences,
  '0013_air_gap_activation': airGapActivation,
};

/** Applies every migration not yet applied, or (for the upgrade tests) those up to and including `upTo`. */
export async function migrateToLatest(database: Database, upTo?: string): Promise<string[]> {
  const provider: MigrationProvider = {
    getMigrations: async () =>
      Object.fromEntries(Object.entries(migrations).map(([name, make]) => [name, make(database.dialect)])),
  };
  // Kysely looks for its bookkeeping tables in every schema; keep it to the one we connect to
  // (search_path), so several schemas on one PostgreSQL database do not confuse it.
  const schema =
    database.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(database.db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db: database.db as Kysely<unknown>,
    provider,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await (upTo === undefined ? migrator.migrateToLatest() : migrator.migrateTo(upTo));
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
