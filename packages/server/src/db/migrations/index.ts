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
import { webhooks } from './0014_webhooks.js';
import { licenceTrigrams } from './0015_licence_trigrams.js';
import { licenceStamps } from './0016_licence_stamps.js';
import { trials } from './0017_trials.js';
import { usageMetering } from './0018_usage_metering.js';
import { singleSignOn } from './0019_single_sign_on.js';
import { releases } from './0020_releases.js';
import { mail } from './0022_mail.js';
import { updatesUntil } from './0023_updates_until.js';
import { usageRemembered } from './0024_usage_remembered.js';
import { integrations } from './0025_integrations.js';
import { webhookCovers } from './0026_webhook_covers.js';
import { usageEventsUnchecked } from './0027_usage_events_unchecked.js';

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
  '0014_webhooks': webhooks,
  '0015_licence_trigrams': licenceTrigrams,
  '0016_licence_stamps': licenceStamps,
  '0017_trials': trials,
  '0018_usage_metering': usageMetering,
  '0019_single_sign_on': singleSignOn,
  '0020_releases': releases,
  '0022_mail': mail,
  '0023_updates_until': updatesUntil,
  '0024_usage_remembered': usageRemembered,
  '0025_integrations': integrations,
  '0026_webhook_covers': webhookCovers,
  '0027_usage_events_unchecked': usageEventsUnchecked,
};

export const MIGRATION_NAMES: readonly string[] = Object.keys(migrations);
export const LATEST_MIGRATION = MIGRATION_NAMES.at(-1)!;

/** The migrations applied to the database, in order (none for a new database). */
export async function appliedMigrations(database: Database): Promise<string[]> {
  const present =
    database.dialect === 'postgres'
      ? (
          await sql<{
            name: string;
          }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_name = 'kysely_migration'`.execute(
            database.db,
          )
        ).rows[0]?.name
      : (await sql<{ name: string }>`select name from sqlite_master where name = 'kysely_migration'`.execute(database.db)).rows[0]?.name;
  if (!present) return [];
  return (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(database.db)).rows.map((r) => r.name);
}

/** Refuses a database migrated by a newer release (DESIGN.md 17): this release would not know what it holds. */
export async function refuseNewerSchema(database: Database): Promise<void> {
  const unknown = (await appliedMigrations(database)).filter((name) => !(name in migrations));
  if (unknown.length > 0) {
    throw new Error(`the database's schema (${unknown.at(-1)}) is newer than this release's (${LATEST_MIGRATION}): run a release at least as new`);
  }
}

/** Applies every migration not yet applied, or (for the upgrade tests) those up to and including `upTo`. */
export async function migrateToLatest(database: Database, upTo?: string): Promise<string[]> {
  await refuseNewerSchema(database);
  const provider: MigrationProvider = {
    getMigrations: async () => Object.fromEntries(Object.entries(migrations).map(([name, make]) => [name, make(database.dialect)])),
  };
  const migrator = new Migrator({ db: database.db as Kysely<unknown>, provider });
  const { error, results } = await (upTo === undefined ? migrator.migrateToLatest() : migrator.migrateTo(upTo));
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
