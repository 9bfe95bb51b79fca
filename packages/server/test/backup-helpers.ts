// Shared by the backup tests: databases to restore into, every table's rows, a service over a restored database.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { baseTables } from '../src/backup/tables.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, sqliteFileIn, type Database } from '../src/db/database.js';
import { freshDatabaseEnv } from './harness.js';

export interface Target {
  env: Record<string, string>;
  dispose(): Promise<void>;
}

/** A new, empty database of the kind asked for, sealed under `masterKey` (base64). */
export async function emptyTarget(kind: 'sqlite' | 'postgres', masterKey: string): Promise<Target> {
  if (kind === 'postgres') {
    const fresh = await freshDatabaseEnv();
    return { env: { ...fresh.env, LICENSOR_MASTER_KEY: masterKey }, dispose: fresh.dispose };
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-restore-'));
  return {
    env: { LICENSOR_DATA_DIR: dataDir, LICENSOR_MASTER_KEY: masterKey, LOG_LEVEL: 'silent' },
    dispose: async () => fs.rmSync(dataDir, { recursive: true, force: true }),
  };
}

export function openEnv(env: Record<string, string>): Promise<Database> {
  const config = loadConfig(env);
  return openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) }, { migrate: false });
}

const catalogOf = (database: Database) => async (text: string) => (await sql.raw<Record<string, unknown>>(text).execute(database.db)).rows;

/**
 * Every row of every table a backup holds, each table's rows in one canonical order, and the
 * tallies restore recounts (without the clock's instant), so two databases compare equal.
 */
export async function dump(database: Database): Promise<Record<string, string[]>> {
  const tables: Record<string, string[]> = {};
  for (const table of await baseTables(database.dialect, catalogOf(database))) {
    const rows = await sql.raw<Record<string, unknown>>(`select ${table.columns.map((c) => `"${c}"`).join(', ')} from "${table.name}"`).execute(database.db);
    tables[table.name] = rows.rows.map((row) => JSON.stringify(table.columns.map((c) => row[c]))).sort();
  }
  const tallies = await database.db.selectFrom('licence_tallies').selectAll().where('n', '>', 0).execute();
  tables.licence_tallies = tallies.map((t) => JSON.stringify(t)).sort();
  return tables;
}

/** The rows of a table as objects, by column, from a dump. */
export const rowsOf = (dumped: Record<string, string[]>, table: string) => dumped[table]!.map((r) => JSON.parse(r) as unknown[]);

export interface Service {
  app: FastifyInstance;
  database: Database;
  request(
    method: string,
    url: string,
    options?: { body?: unknown; headers?: Record<string, string> },
  ): Promise<{ statusCode: number; data: any; cookies: Array<{ name: string; value: string }> }>;
  close(): Promise<void>;
}

/** The service over a restored database, as `serve` would run it there. */
export async function serviceOn(env: Record<string, string>): Promise<Service> {
  const config = loadConfig(env);
  const database = await openEnv(env);
  const app = await buildApp({ config, database, masterKey: config.masterKey! });
  await app.ready();
  return {
    app,
    database,
    async request(method, url, { body, headers = {} } = {}) {
      const response = await app.inject({
        method: method as 'GET',
        url,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      return { statusCode: response.statusCode, data: response.body ? JSON.parse(response.body) : undefined, cookies: response.cookies };
    },
    async close() {
      await app.close();
      await database.close();
    },
  };
}

/** The backup's uncompressed lines, to cut or edit. */
export const linesOf = (file: string) => gunzipSync(fs.readFileSync(file)).toString('utf8').split('\n');
export const writeLines = (file: string, lines: string[]) => fs.writeFileSync(file, gzipSync(lines.join('\n')));

/** Lines of a backup with `extra` rows appended to tables, its trailer made to match again (a file as a backup of that database would be). */
export function withRows(lines: string[], extra: Record<string, unknown[][]>): string[] {
  const out: string[] = [];
  const counts: Record<string, number> = {};
  let table = '';
  const flush = () => {
    for (const row of extra[table] ?? []) out.push(JSON.stringify(row));
    if (table) counts[table] = (counts[table] ?? 0) + (extra[table]?.length ?? 0);
  };
  for (const line of lines) {
    if (line === '') continue;
    if (line.startsWith('{"trailer"')) break;
    if (line.startsWith('{"table"')) {
      flush();
      table = JSON.parse(line).table;
      counts[table] = 0;
    } else if (line.startsWith('[')) counts[table]!++;
    out.push(line);
  }
  flush();
  const sha256 = createHash('sha256')
    .update(out.map((l) => `${l}\n`).join(''))
    .digest('hex');
  return [...out, JSON.stringify({ trailer: true, counts, sha256 }), ''];
}

/** The names of a database's indexes and triggers, which restore sets aside during the load and makes again. */
export async function indexesOf(database: Database): Promise<string[]> {
  const text =
    database.dialect === 'sqlite'
      ? `select type || ' ' || name as name from sqlite_master where type in ('index', 'trigger') order by name`
      : `select indexname as name from pg_indexes where schemaname = current_schema() order by indexname`;
  return (await catalogOf(database)(text)).map((r) => String(r.name));
}

/**
 * An organisation written as a release at an older migration wrote it: the current repo's
 * columns (a later migration's trial_limit among them) do not exist there yet.
 */
export async function insertOldOrganisation(database: Database, slug: string, name: string): Promise<{ id: number }> {
  return database.db
    .insertInto('organisations')
    .values({ slug, name, plan_limit: null, timezone: 'UTC', created_at: Date.now() })
    .returning('id')
    .executeTakeFirstOrThrow();
}
