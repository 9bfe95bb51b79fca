import fs from 'node:fs';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { transaction, type Database } from '../db/database.js';
import { LATEST_MIGRATION, MIGRATION_NAMES, migrateToLatest } from '../db/migrations/index.js';
import { countUncounted } from '../listings/repos/tallies.js';
import { readBackup, type Header, type Line, type TableLine } from './file.js';
import { failPendingEmails } from './repo.js';
import type { Progress } from './progress.js';
import { allTables, baseTables, type BaseTable, type CatalogQuery } from './tables.js';

// SQLite binds at most 32,766 values a statement; PostgreSQL 65,535. Statements of a few hundred rows go as fast as larger ones.
const VALUES_PER_INSERT = 30_000;
const ROWS_PER_INSERT = 250;

const catalog =
  (db: Kysely<any>): CatalogQuery =>
  async (text) =>
    (await sql.raw<Record<string, unknown>>(text).execute(db)).rows;

/** A backup from a newer release is refused before anything is written. */
function checkSchema(header: Header): void {
  if (!MIGRATION_NAMES.includes(header.schema)) {
    throw new Error(`the backup's schema (${header.schema}) is newer than this release's (${LATEST_MIGRATION}): restore it with a release at least as new`);
  }
}

/**
 * Takes the target back to empty after a restore that failed: the data was rolled back, and the
 * schema made for it goes too, so the restore can be run again.
 */
async function dropSchema(database: Database): Promise<void> {
  const query = catalog(database.db);
  if (database.dialect === 'sqlite') {
    // A virtual table first: its shadow tables go with it. Foreign keys off, so the tables go in any order.
    const virtual = await query(`select name from sqlite_master where type = 'table' and lower(sql) like 'create virtual table%'`);
    await query('pragma foreign_keys = off');
    try {
      for (const { name } of virtual) await query(`drop table if exists "${String(name)}"`);
      for (const name of await allTables('sqlite', query)) await query(`drop table if exists "${name}"`);
    } finally {
      await query('pragma foreign_keys = on');
    }
    return;
  }
  for (const name of await allTables('postgres', query)) await query(`drop table if exists "${name}" cascade`);
  // Functions the migrations made (not those of an extension such as pg_trgm).
  const functions = await query(
    `select p.oid::regprocedure::text as name from pg_proc p
     where p.pronamespace = current_schema()::regnamespace
       and not exists (select 1 from pg_depend d where d.objid = p.oid and d.deptype = 'e')`,
  );
  for (const { name } of functions) await query(`drop function if exists ${String(name)}`);
}

/**
 * Sets the indexes aside while the rows go in, and (SQLite) the triggers that keep the search
 * index; the returned step makes them again and rebuilds the search index. Building an index once
 * from all its rows is far cheaper than keeping it through a million inserts in random key order.
 * Read from the catalog, so an index a later migration adds is handled alike. Indexes that
 * back a constraint (primary keys, unique columns) stay, and go on checking every row.
 */
async function setIndexesAside(trx: Kysely<any>, dialect: Database['dialect']): Promise<() => Promise<void>> {
  const query = catalog(trx);
  const objects =
    dialect === 'sqlite'
      ? await query(`select type, name, sql from sqlite_master where type in ('index', 'trigger') and sql is not null`)
      : await query(
          `select 'index' as type, indexname as name, indexdef as sql from pg_indexes
           where schemaname = current_schema() and indexname not in (select conname from pg_constraint where connamespace = current_schema()::regnamespace)`,
        );
  const searchIndexes =
    dialect === 'sqlite' ? await query(`select name from sqlite_master where type = 'table' and lower(sql) like 'create virtual table%'`) : [];
  for (const { type, name } of objects) await query(`drop ${String(type)} "${String(name)}"`);
  return async () => {
    for (const { sql: definition } of objects) await query(String(definition));
    // FTS5's own command to index every row of its content table afresh.
    for (const { name } of searchIndexes) await query(`insert into "${String(name)}" ("${String(name)}") values ('rebuild')`);
  };
}

/**
 * Inserts a batch of rows as a few multi-row statements. The text is written here, with the
 * dialect's placeholders, rather than built by Kysely's query builder: a builder's tree for tens of
 * thousands of values per statement is garbage that made memory grow with the size of the restore.
 */
async function insertRows(trx: Kysely<any>, dialect: Database['dialect'], table: BaseTable, columns: string[], rows: unknown[][]): Promise<void> {
  const perInsert = Math.min(ROWS_PER_INSERT, Math.max(1, Math.floor(VALUES_PER_INSERT / columns.length)));
  const overriding = dialect === 'postgres' && table.identity !== null && columns.includes(table.identity) ? ' overriding system value' : '';
  const head = `insert into "${table.name}" (${columns.map((c) => `"${c}"`).join(', ')})${overriding} values `;
  for (let i = 0; i < rows.length; i += perInsert) {
    const batch = rows.slice(i, i + perInsert);
    const values: unknown[] = [];
    const tuples = batch.map((row) => {
      if (row.length !== columns.length)
        throw new Error(`the backup file is not usable: a row of ${table.name} has ${row.length} values for ${columns.length} columns`);
      const start = values.length;
      values.push(...row);
      return `(${row.map((_, j) => (dialect === 'postgres' ? `$${start + j + 1}` : '?')).join(', ')})`;
    });
    await trx.executeQuery(CompiledQuery.raw(head + tuples.join(', '), values));
  }
}

export interface RestoreResult {
  schema: string;
  counts: Record<string, number>;
  migrated: string[];
}

/**
 * `licensor restore FILE` (DESIGN.md 17): into an empty database of either kind, the schema made at
 * the backup's migration, every row loaded with its id in one transaction that commits only once
 * the file's digest and counts are confirmed; then the later migrations and the tallies' count.
 * The indexes, the search index among them, are built once the rows are in, in the same transaction.
 */
export async function restore(database: Database, file: string, progress: Progress): Promise<RestoreResult> {
  const query = catalog(database.db);
  if ((await allTables(database.dialect, query)).length > 0) {
    throw new Error('the target database is not empty: restore into a new database (or data dir), before its first start');
  }
  const size = fs.statSync(file).size;
  let read = 0;
  let header: Header | null = null;
  const lines = readBackup(
    file,
    (h) => void (header = h),
    (bytes) => (read += bytes),
  );
  // Reads the header (and the first table's line) before anything is made.
  let first: IteratorResult<Line>;
  let schema: string;
  try {
    first = await lines.next();
    schema = checkedHeader(header).schema;
  } catch (err) {
    await lines.return(undefined);
    throw err;
  }
  const counts: Record<string, number> = {};
  try {
    await migrateToLatest(database, schema);
    await transaction(database, async (trx) => {
      const tables = new Map((await baseTables(database.dialect, catalog(trx))).map((t) => [t.name, t]));
      const rebuildIndexes = await setIndexesAside(trx, database.dialect);
      let current: { table: BaseTable; columns: string[] } | null = null;
      for (let item: IteratorResult<Line> = first; !item.done; item = await lines.next()) {
        const line = item.value;
        if (line.kind === 'table') {
          current = target(tables, line.table);
          counts[current.table.name] = 0;
          progress.table(current.table.name);
        } else {
          await insertRows(trx, database.dialect, current!.table, current!.columns, line.rows);
          counts[current!.table.name]! += line.rows.length;
          progress.advance(line.rows.length, read, size);
        }
      }
      await rebuildIndexes();
      if (database.dialect === 'postgres') {
        for (const table of tables.values()) {
          if (table.identity === null) continue;
          // The next id generated is past every id restored.
          await sql`select setval(pg_get_serial_sequence(${table.name}, ${table.identity}), coalesce(max(${sql.id(table.identity)}), 0) + 1, false) from ${sql.table(table.name)}`.execute(
            trx,
          );
        }
      }
    });
  } catch (err) {
    await lines.return(undefined);
    await dropSchema(database);
    throw err;
  } finally {
    progress.end();
  }
  const migrated = await migrateToLatest(database);
  await countUncounted(database);
  await failPendingEmails(database.db);
  return { schema, counts, migrated };
}

function checkedHeader(header: Header | null): Header {
  if (header === null) throw new Error('the backup file is not usable: it is empty');
  checkSchema(header);
  return header;
}

/** The table a section of the file goes into, which the schema at the backup's migration must have, with every column named. */
function target(tables: Map<string, BaseTable>, line: TableLine): { table: BaseTable; columns: string[] } {
  const table = tables.get(line.table);
  if (!table) throw new Error(`the backup file is not usable: it holds table "${line.table}", which its schema does not have`);
  const unknown = line.columns.find((c) => !table.columns.includes(c));
  if (unknown !== undefined) throw new Error(`the backup file is not usable: table "${line.table}" has no column "${unknown}"`);
  return { table, columns: line.columns };
}
