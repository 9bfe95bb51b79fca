import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import { openDatabase, sqliteFileIn, type DialectName } from '../db/database.js';
import { BackupWriter, FORMAT, FORMAT_VERSION, type Header } from './file.js';
import type { Progress } from './progress.js';
import { allTables, baseTables, type BaseTable, type CatalogQuery } from './tables.js';

const BATCH = 1000;

/** One read transaction: what the backup reads, all of it as committed when the transaction began. */
interface Snapshot {
  dialect: DialectName;
  query: CatalogQuery;
  rows(table: BaseTable): AsyncIterable<unknown[][]>;
}

const columnList = (table: BaseTable) => table.columns.map((c) => `"${c}"`).join(', ');

/**
 * SQLite: a read transaction on a connection of its own (WAL lets the service go on writing);
 * rows are read by an iterator, a batch at a time, so memory stays bounded.
 */
async function sqliteSnapshot<T>(file: string, work: (snapshot: Snapshot) => Promise<T>): Promise<T> {
  const connection = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    connection.pragma('busy_timeout = 1000');
    connection.exec('begin');
    return await work({
      dialect: 'sqlite',
      query: async (text) => connection.prepare(text).all() as Array<Record<string, unknown>>,
      async *rows(table) {
        let batch: unknown[][] = [];
        for (const row of connection
          .prepare(`select ${columnList(table)} from "${table.name}"`)
          .raw(true)
          .iterate()) {
          batch.push(row as unknown[]);
          if (batch.length === BATCH) {
            yield batch;
            batch = [];
          }
        }
        if (batch.length) yield batch;
      },
    });
  } finally {
    connection.close();
  }
}

/** PostgreSQL: REPEATABLE READ, read only, on one connection; rows through a cursor, a batch per fetch. */
async function postgresSnapshot<T>(databaseUrl: string, work: (snapshot: Snapshot) => Promise<T>): Promise<T> {
  const database = await openDatabase({ databaseUrl, sqliteFile: '' }, { migrate: false });
  try {
    return await database.db.connection().execute(async (connection) => {
      const query: CatalogQuery = async (text) => (await sql.raw<Record<string, unknown>>(text).execute(connection)).rows;
      await query('begin isolation level repeatable read read only');
      try {
        return await work({
          dialect: 'postgres',
          query,
          async *rows(table) {
            await query(`declare backup_rows no scroll cursor for select ${columnList(table)} from "${table.name}"`);
            for (;;) {
              const rows = await query(`fetch forward ${BATCH} from backup_rows`);
              if (rows.length === 0) break;
              yield rows.map((row) => table.columns.map((c) => row[c]));
            }
            await query('close backup_rows');
          },
        });
      } finally {
        await query('rollback');
      }
    });
  } finally {
    await database.close();
  }
}

export function withSnapshot<T>(config: Pick<Config, 'databaseUrl' | 'dataDir'>, work: (snapshot: Snapshot) => Promise<T>): Promise<T> {
  return config.databaseUrl ? postgresSnapshot(config.databaseUrl, work) : sqliteSnapshot(sqliteFileIn(config.dataDir), work);
}

/** The last migration applied, read in the snapshot. */
async function schemaOf(snapshot: Snapshot): Promise<string> {
  const migrated = (await allTables(snapshot.dialect, snapshot.query)).includes('kysely_migration');
  const [last] = migrated ? await snapshot.query('select max(name) as name from kysely_migration') : [];
  if (typeof last?.name !== 'string') throw new Error('the database has no schema yet: there is nothing to back up');
  return last.name;
}

export interface BackupResult {
  file: string;
  schema: string;
  counts: Record<string, number>;
  bytes: number;
  sha256: string;
}

/** `licensor backup --out FILE`: one consistent snapshot of every base table into FILE (DESIGN.md 17). */
export async function backup(config: Pick<Config, 'databaseUrl' | 'dataDir'>, file: string, progress: Progress): Promise<BackupResult> {
  const writer = new BackupWriter(file);
  try {
    const { schema, trailer } = await withSnapshot(config, async (snapshot) => {
      const schema = await schemaOf(snapshot);
      const tables = await baseTables(snapshot.dialect, snapshot.query);
      const totals = new Map<string, number>();
      for (const table of tables) totals.set(table.name, Number((await snapshot.query(`select count(*) as n from "${table.name}"`))[0]!.n));
      const total = [...totals.values()].reduce((a, b) => a + b, 0);
      const header: Header = { format: FORMAT, version: FORMAT_VERSION, schema, createdAt: new Date().toISOString(), database: snapshot.dialect };
      await writer.write([JSON.stringify(header)]);
      const counts: Record<string, number> = {};
      let done = 0;
      for (const table of tables) {
        progress.table(table.name);
        await writer.write([JSON.stringify({ table: table.name, columns: table.columns })]);
        counts[table.name] = 0;
        for await (const rows of snapshot.rows(table)) {
          await writer.write(rows.map((row) => JSON.stringify(row)));
          counts[table.name]! += rows.length;
          done += rows.length;
          progress.advance(rows.length, done, total);
        }
      }
      return { schema, trailer: await writer.close(counts) };
    });
    return { file, schema, counts: trailer.counts, bytes: writer.bytes, sha256: trailer.sha256 };
  } catch (err) {
    writer.abandon();
    throw err;
  } finally {
    progress.end();
  }
}
