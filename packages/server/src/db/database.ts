import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  sql,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  PostgresIntrospector,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type DialectAdapter,
  type RawBuilder,
  type Driver,
  type TableMetadata,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import type { Schema } from './schema.js';
import { checkpointInBackground } from './checkpoints.js';
import { migrateToLatest } from './migrations/index.js';

export type DialectName = 'sqlite' | 'postgres';

/** Which database a query builder talks to, for the few statements whose SQL differs. */
export const dialectOf = (db: Db): DialectName => (db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite');
export type Db = Kysely<Schema>;
export type Trx = Transaction<Schema>;

export interface Database {
  db: Db;
  dialect: DialectName;
  close(): Promise<void>;
}

/*
 * Kysely's SQLite driver opens transactions with a plain BEGIN, which takes the write lock
 * late: a read-then-write can then fail with SQLITE_BUSY. BEGIN IMMEDIATE serialises writers
 * up front, which is the SQLite half of the row locks DESIGN.md asks for.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

// SQLite does run DDL in transactions; saying so makes Kysely's migrator take BEGIN IMMEDIATE
// before reading what has run, so two processes starting together migrate one after the other.
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly database: BetterSqlite3.Database) {
    super({ database });
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver({ database: this.database });
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

const STATEMENT_CACHE = 500;

/**
 * Kysely prepares every query anew; preparing is a tenth of an issue's CPU time. The queries
 * are few distinct texts, so prepared statements are kept per SQL text (better-sqlite3 runs one
 * statement at a time, and nothing here iterates one across an await).
 */
function withStatementCache(sqlite: BetterSqlite3.Database): BetterSqlite3.Database {
  const statements = new Map<string, BetterSqlite3.Statement>();
  const prepare = (source: string) => {
    let statement = statements.get(source);
    if (!statement) {
      statement = sqlite.prepare(source);
      if (statements.size >= STATEMENT_CACHE) statements.delete(statements.keys().next().value!);
      statements.set(source, statement);
    }
    return statement;
  };
  return new Proxy(sqlite, {
    get: (target, property) => {
      if (property === 'prepare') return prepare;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The automatic checkpoint's threshold, in pages, of a serving connection: a backstop to checkpoints.ts (SQLite's default is 1,000). */
const BACKSTOP_CHECKPOINT_PAGES = 8_000;

function openSqlite(file: string, serving: boolean, warn: (message: string) => void): Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  // better-sqlite3 is synchronous: a long busy wait would block the event loop.
  sqlite.pragma('busy_timeout = 1000');
  sqlite.pragma('foreign_keys = ON');
  // A log that grew under a burst of writes is cut back when it next starts again.
  sqlite.pragma('journal_size_limit = 67108864');
  const stopCheckpoints = serving && file !== ':memory:' ? checkpointInBackground(file, warn) : null;
  if (stopCheckpoints) sqlite.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
  const db = new Kysely<Schema>({ dialect: new ImmediateSqliteDialect(withStatementCache(sqlite)) });
  return {
    db,
    dialect: 'sqlite',
    close: async () => {
      await stopCheckpoints?.();
      await db.destroy();
    },
  };
}

// int8 (ids, epoch-millisecond times, counts) as numbers: every value we store fits in 2^53.
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 || oid === 1700 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** The hot path's statements (tenant.ts preparedQuery): on PostgreSQL, named, so each connection parses and plans them once. */
const statementNames = new Map<string, string>();
export function nameStatement(sql: string): void {
  if (!statementNames.has(sql)) statementNames.set(sql, `licensor_${statementNames.size + 1}`);
}

/**
 * The bounds of DESIGN.md 17 on a pool that serves requests, so an unreachable server is a 503
 * within 10 s rather than a hang: 5 s to connect (or to wait for a free client), 5 s for a
 * statement on the server, and 6 s for its answer to arrive (a server gone without closing the
 * connection). The CLI and migrations run without them.
 */
const SERVING_LIMITS = { connectionTimeoutMillis: 5_000, statement_timeout: 5_000, query_timeout: 6_000 };

/**
 * Kysely's PostgreSQL introspector reads the columns of every schema of the database and asks
 * has_schema_privilege by name, which fails when another schema is dropped meanwhile (other
 * deployments or test schemas on one database). Its Migrator only asks which tables exist, so
 * answer that for the schema we connect to (search_path), from the catalogue alone.
 */
class OwnSchemaIntrospector extends PostgresIntrospector {
  readonly #db: Kysely<any>;
  constructor(db: Kysely<any>) {
    super(db);
    this.#db = db;
  }
  override async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ schema: string; name: string; kind: string }>`
      select n.nspname as schema, c.relname as name, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p')`.execute(this.#db);
    return rows.map(({ schema, name, kind }) => ({ schema, name, isView: kind === 'v', columns: [] }));
  }
}

class OwnSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): PostgresIntrospector {
    return new OwnSchemaIntrospector(db);
  }
}

/** The text standing for statements sent together (pipelined): its parameters are the statements. */
const PIPELINE = '-- licensor: pipelined';

/**
 * Runs the statements on one connection in order, each after the one before it has finished, but
 * on PostgreSQL sent together, one round trip for all (pipeline mode): Kysely awaits each statement
 * of a transaction before it sends the next. Each statement sees what the ones before it did, and
 * one that fails fails the transaction, so those after it fail too. Answers each statement's rows.
 */
export async function pipelined(db: Db, queries: readonly CompiledQuery[]): Promise<unknown[][]> {
  if (dialectOf(db) === 'postgres') return (await db.executeQuery(CompiledQuery.raw(PIPELINE, [...queries]))).rows as unknown[][];
  const rows: unknown[][] = [];
  for (const query of queries) rows.push((await db.executeQuery(query)).rows as unknown[]);
  return rows;
}

/** What a BEGIN answers, as Kysely reads an answer. */
const BEGUN = { command: 'BEGIN', rowCount: null, rows: [], fields: [] };

function openPostgres(connectionString: string, serving: boolean): Database {
  // Pipeline mode: a query is written without waiting for the answer to the one before it, which
  // only the transactions' BEGIN below uses (Kysely awaits every other statement).
  const pool = new pg.Pool({ connectionString, max: 10, types: pgTypes, pipeline: true, ...(serving ? SERVING_LIMITS : {}) });
  // A client losing its connection (a server restart) must not end the process, idle or checked
  // out: node-postgres emits 'error' on both, and an unhandled one is thrown. The query in flight
  // fails on its own; the pool drops the broken client and the next one connects afresh (and so
  // prepares its named statements again).
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // Kysely sends text and values; a named statement's text goes as pg's named query instead.
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    // Statements sent together go out in one write to the socket, which wakes the server once.
    const stream = (client as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection.stream;
    let held = false;
    const hold = () => {
      if (held) return;
      held = true;
      stream.cork();
    };
    const release = () => {
      if (!held) return;
      held = false;
      stream.uncork();
    };
    client.query = ((text: unknown, ...rest: unknown[]) => {
      // A transaction's BEGIN is answered at once and goes out with its first statement, a round
      // trip fewer for every transaction (a usage batch's five were most of its time,
      // docs/benchmarks.md). BEGIN cannot fail on a connection that works; on one that does not,
      // the statement behind it fails too. Should none follow in this turn, it goes out alone.
      if (text === 'begin') {
        hold();
        setImmediate(release);
        (query(text) as Promise<unknown>).catch(() => {});
        return Promise.resolve(BEGUN);
      }
      hold();
      try {
        return text === PIPELINE ? sendTogether(rest[0] as CompiledQuery[]) : send(text as string, rest[0] as readonly unknown[] | undefined);
      } finally {
        release();
      }
    }) as typeof client.query;
    const send = async (text: string, values: readonly unknown[] | undefined) => {
      const name = statementNames.get(text);
      const answer = (await (name ? query({ name, text, values }) : query(text, values))) as pg.QueryResult;
      // A COMMIT after a statement failed ends the transaction as a ROLLBACK, with no error of its own.
      if (text === 'commit' && answer.command === 'ROLLBACK') throw new Error('the transaction was rolled back');
      return answer;
    };
    const sendTogether = async (queries: readonly CompiledQuery[]) => {
      const answers = await Promise.allSettled(queries.map((q) => send(q.sql, q.parameters)));
      const failed = answers.find((a) => a.status === 'rejected');
      if (failed) throw failed.reason;
      return { command: 'SELECT', rowCount: null, rows: answers.map((a) => (a as PromiseFulfilledResult<pg.QueryResult>).value.rows), fields: [] };
    };
  });
  const db = new Kysely<Schema>({ dialect: new OwnSchemaPostgresDialect({ pool }) });
  return { db, dialect: 'postgres', close: () => db.destroy() };
}

/**
 * Opens the configured database and brings its schema up to date. `serving`: the database answers
 * requests, so a PostgreSQL pool gets the timeouts of DESIGN.md 17 and a SQLite database its
 * checkpoints on a thread of their own (checkpoints.ts).
 */
export async function openDatabase(
  options: { databaseUrl: string | null; sqliteFile: string },
  { migrate = true, serving = false, warn = (message: string) => process.emitWarning(message) } = {},
): Promise<Database> {
  const database = options.databaseUrl ? openPostgres(options.databaseUrl, serving) : openSqlite(options.sqliteFile, serving, warn);
  if (migrate) {
    try {
      await migrateWhenFree(database);
    } catch (err) {
      await database.close();
      throw err;
    }
  }
  return database;
}

/**
 * Migrates, trying again while another process holds SQLite's write lock for its own migration,
 * or (PostgreSQL, 3F000 or 42P01) when a schema was dropped while Kysely's migrator read the
 * whole database's catalog: it lists every schema's tables, so another schema sharing the
 * database being dropped at that moment fails the read, as a missing schema or a missing table
 * (seen with the tests' per-file schemas).
 */
async function migrateWhenFree(database: Database): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await migrateToLatest(database);
      return;
    } catch (err) {
      const code = (err as { code?: string }).code;
      // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, _RECOVERY) alike: another process holds the lock.
      if ((!code?.startsWith('SQLITE_BUSY') && code !== '3F000' && code !== '42P01') || attempt >= 30) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export function sqliteFileIn(dataDir: string): string {
  return path.join(dataDir, 'licensor.sqlite');
}

/**
 * Serialises writers that check a limit or a count on the given row: SELECT ... FOR NO KEY UPDATE
 * on PostgreSQL, which excludes every other such lock and every update of the row but not the
 * KEY SHARE a foreign key's check takes, so rows written earlier in the transaction that name
 * this one (a licence its product) never deadlock two lockers. On SQLite the transaction already
 * holds the database's write lock (BEGIN IMMEDIATE).
 */
export async function lockRow(
  database: Pick<Database, 'dialect'>,
  trx: Db,
  table: 'organisations' | 'licences' | 'products' | 'integrations',
  id: number,
): Promise<void> {
  if (database.dialect !== 'postgres') return;
  await trx.selectFrom(table).select('id').where('id', '=', id).forNoKeyUpdate().execute();
}

/**
 * Serialises writers on a name rather than a row (PostgreSQL advisory lock, released at the end
 * of the transaction), for work that has no row to lock yet, such as creating a customer; `shared`
 * holders only keep out an exclusive one. On SQLite the transaction already holds the database's
 * write lock.
 */
export async function lockName(database: Pick<Database, 'dialect'>, trx: Db, name: string, mode: 'exclusive' | 'shared' = 'exclusive'): Promise<void> {
  const lock = lockExpression(database, name, mode);
  if (lock) await sql`select ${lock}`.execute(trx);
}

/** lockName's lock as an expression, for a statement made anyway to take it (null on SQLite). */
export function lockExpression(database: Pick<Database, 'dialect'>, name: string, mode: 'exclusive' | 'shared' = 'exclusive'): RawBuilder<unknown> | null {
  if (database.dialect !== 'postgres') return null;
  const lock = sql.raw(mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock');
  return sql`${lock}(hashtextextended(${name}, 0))`;
}

const CONNECTION_FAULTS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// PostgreSQL: shutting down, crashed, starting up, cancelled (the statement timeout), too many connections.
const SERVER_FAULTS = new Set(['57P01', '57P02', '57P03', '57014', '53300']);
// node-postgres's own errors for a connection lost, never made, or timed out.
const CLIENT_FAULTS =
  /^(?:Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed)/;

/**
 * True when the error says the database could not be reached or did not answer in time, rather
 * than that the request was wrong: PostgreSQL down or restarting, or SQLite's write lock still
 * held after the busy timeout. Such a request is answered 503 (DESIGN.md 17).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (CONNECTION_FAULTS.has(code) || SERVER_FAULTS.has(code) || code.startsWith('08') || code.startsWith('SQLITE_BUSY')) return true;
  return typeof e?.message === 'string' && CLIENT_FAULTS.test(e.message);
}

/** True when the error is a unique-constraint violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string } | null;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Runs `work` in one transaction (BEGIN IMMEDIATE on SQLite). */
export function transaction<T>(database: Database, work: (trx: Trx) => Promise<T>): Promise<T> {
  return database.db.transaction().execute(work);
}

/**
 * Runs `work` in one transaction, then the statements it answers with its result and the COMMIT,
 * sent together (pipelined): a transaction whose last statement is a write needs no round trip of
 * its own to commit it. Nothing is answered before the COMMIT is.
 */
export async function transactionEndingIn<T>(database: Database, work: (db: Db) => Promise<{ result: T; last: CompiledQuery[] }>): Promise<T> {
  if (database.dialect === 'sqlite')
    return transaction(database, async (trx) => {
      const { result, last } = await work(trx);
      await pipelined(trx, last);
      return result;
    });
  return database.db.connection().execute(async (db) => {
    await db.executeQuery(CompiledQuery.raw('begin'));
    let result: T;
    try {
      let last: CompiledQuery[];
      ({ result, last } = await work(db));
      await pipelined(db, [...last, CompiledQuery.raw('commit')]);
    } catch (err) {
      // Already ended when the COMMIT went out; a connection that broke has no transaction left.
      await db.executeQuery(CompiledQuery.raw('rollback')).catch(() => {});
      throw err;
    }
    return result;
  });
}

/** A LIKE pattern (with `escape '\\'`) finding `text` anywhere in a lower-cased column. */
export const substringPattern = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
