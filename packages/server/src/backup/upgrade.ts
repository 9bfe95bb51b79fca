import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import { openDatabase, sqliteFileIn } from '../db/database.js';
import { appliedMigrations, MIGRATION_NAMES, refuseNewerSchema } from '../db/migrations/index.js';
import { backup } from './backup.js';
import { terminalProgress } from './progress.js';

/** Backups kept in LICENSOR_BACKUP_DIR: the newest five. */
const KEEP = 5;
const NAME = /^licensor-\d{8}T\d{6}\d{3}Z-.+\.backup\.gz$/;

interface Log {
  info(details: object, message: string): void;
  warn(message: string): void;
}

/**
 * DESIGN.md 17: before a release migrates a SQLite database that holds data, a backup of it goes
 * to LICENSOR_BACKUP_DIR, so an upgrade that goes wrong can be undone with `restore` and the old
 * release. Returns the file written, or null when there was nothing to migrate or nothing to keep.
 */
export async function backupBeforeMigrating(config: Config, log: Log): Promise<string | null> {
  if (config.databaseUrl || !fs.existsSync(sqliteFileIn(config.dataDir))) return null;
  const database = await openDatabase({ databaseUrl: null, sqliteFile: sqliteFileIn(config.dataDir) }, { migrate: false });
  let schema: string | undefined;
  try {
    // A newer schema is refused before anything is written.
    await refuseNewerSchema(database);
    const applied = await appliedMigrations(database);
    if (applied.length === 0 || MIGRATION_NAMES.every((name) => applied.includes(name))) return null;
    const { rows } = await sql<{ n: number }>`select count(*) as n from organisations`.execute(database.db);
    if (Number(rows[0]?.n ?? 0) === 0) return null;
    schema = applied.at(-1)!;
  } finally {
    await database.close();
  }
  fs.mkdirSync(config.backupDir, { recursive: true, mode: 0o700 });
  const stamp = new Date().toISOString().replace(/[-:.]/g, '');
  const file = path.join(config.backupDir, `licensor-${stamp}-${schema}.backup.gz`);
  await backup(config, file, terminalProgress());
  log.info({ file }, 'backed up the database before migrating it');
  if (!config.masterKey) {
    log.warn(
      `the master key these backups need is the generated one in ${path.join(config.dataDir, 'master.key')}, in the same data dir: keep a copy of it elsewhere, or set LICENSOR_MASTER_KEY`,
    );
  }
  const kept = fs
    .readdirSync(config.backupDir)
    .filter((name) => NAME.test(name))
    .sort();
  for (const old of kept.slice(0, -KEEP)) fs.rmSync(path.join(config.backupDir, old));
  return file;
}
