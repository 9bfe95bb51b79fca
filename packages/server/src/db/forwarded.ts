import type { MessagePort } from 'node:worker_threads';
import { CompiledQuery, Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import type { Database } from './database.js';
import type { Schema } from './schema.js';

/*
 * SQLite statements of a worker thread (the webhook delivery loop, webhooks/thread.ts) run on the
 * connection of the thread that owns the database, in turn with its own. A second connection in
 * the thread would contend for SQLite's write lock: the owner's writes would then wait in
 * SQLite's busy handler, which sleeps the whole event loop (1, 2, 5 ms and more at a time), and
 * each commit of the other connection would empty its page cache. Forwarded, a thread's
 * transaction holds the owner's one connection as one of the owner's own would, and the owner's
 * requests wait for it asynchronously.
 */

type Call = { op: 'begin' | 'commit' | 'rollback' } | { op: 'query'; sql: string; parameters: readonly unknown[] };
type Request = Call & { id: number };
type Answer = { id: number; result?: QueryResult<unknown>; error?: { message: string; code?: string } };

/** How long a thread's transaction may hold the connection before it is rolled back, its thread told so at its next statement. */
const TRANSACTION_LIMIT_MS = 2_000;
const EXPIRED = 'the transaction ran too long and was rolled back';

/**
 * The owner's side: answers the statements a thread sends on `port` with `database`. Returns a
 * function that ends what the thread left open (a thread that died mid-transaction).
 */
export function answerStatements(database: Database, port: MessagePort): () => Promise<void> {
  // The thread's open transaction: the owner's connection, held until commit or rollback.
  let open: { connection: Pick<Kysely<Schema>, 'executeQuery'>; release: () => void; released: Promise<void>; timer: NodeJS.Timeout } | null = null;
  // Whether the thread is in a transaction: still so after its transaction ran too long and was rolled back.
  let inTransaction = false;

  const begin = () =>
    new Promise<void>((begun, failed) => {
      const released: Promise<void> = database.db
        .connection()
        .execute(async (connection) => {
          await connection.executeQuery(CompiledQuery.raw('begin immediate'));
          await new Promise<void>((release) => {
            const timer = setTimeout(() => void finish('rollback').catch(() => {}), TRANSACTION_LIMIT_MS).unref();
            open = { connection, release, released, timer };
            begun();
          });
        })
        .catch(failed);
    });

  async function finish(op: 'commit' | 'rollback'): Promise<void> {
    const ending = open!;
    open = null;
    clearTimeout(ending.timer);
    try {
      await ending.connection.executeQuery(CompiledQuery.raw(op));
    } finally {
      ending.release();
      await ending.released;
    }
  }

  const run = async (request: Request): Promise<QueryResult<unknown> | undefined> => {
    switch (request.op) {
      case 'begin':
        if (inTransaction) throw new Error('a transaction is open already');
        await begin();
        inTransaction = true;
        return undefined;
      case 'commit':
      case 'rollback':
        if (!inTransaction) throw new Error(`${request.op} without a transaction`);
        inTransaction = false;
        if (open) await finish(request.op);
        else if (request.op === 'commit') throw new Error(EXPIRED);
        return undefined;
      case 'query': {
        const query = CompiledQuery.raw(request.sql, [...request.parameters]);
        if (!inTransaction) return database.db.executeQuery(query);
        if (!open) throw new Error(EXPIRED);
        return open.connection.executeQuery(query);
      }
    }
  };

  port.on('message', (request: Request) => {
    void run(request).then(
      (result) => port.postMessage({ id: request.id, result } satisfies Answer),
      (err: Error & { code?: string }) => port.postMessage({ id: request.id, error: { message: err.message, code: err.code } } satisfies Answer),
    );
  });
  return async () => {
    port.close();
    if (open) await finish('rollback').catch(() => {});
  };
}

/** The thread's side: a Database whose statements run on the owner's connection (answerStatements). */
export function forwardedDatabase(port: MessagePort): Database {
  const db = new Kysely<Schema>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new ForwardedDriver(port),
      createIntrospector: (kysely) => new SqliteIntrospector(kysely),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

class ForwardedDriver implements Driver {
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (result: QueryResult<unknown> | undefined) => void; reject: (err: Error) => void }>();
  // One connection, as SQLite's own driver has: a query outside a transaction waits for it to end.
  private busy = false;
  private readonly queue: Array<() => void> = [];
  private readonly connection: DatabaseConnection = {
    executeQuery: async <R>(query: CompiledQuery) => (await this.call({ op: 'query', sql: query.sql, parameters: query.parameters })) as QueryResult<R>,
    streamQuery: () => {
      throw new Error('a forwarded connection does not stream');
    },
  };

  constructor(private readonly port: MessagePort) {
    port.on('message', ({ id, result, error }: Answer) => {
      const call = this.waiting.get(id)!;
      this.waiting.delete(id);
      if (error) call.reject(Object.assign(new Error(error.message), { code: error.code }));
      else call.resolve(result);
    });
  }

  private call(request: Call): Promise<QueryResult<unknown> | undefined> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.port.postMessage({ ...request, id });
    });
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.busy) await new Promise<void>((handed) => this.queue.push(handed));
    this.busy = true;
    return this.connection;
  }

  async releaseConnection(): Promise<void> {
    const next = this.queue.shift();
    if (next) next();
    else this.busy = false;
  }

  async beginTransaction(): Promise<void> {
    await this.call({ op: 'begin' });
  }

  async commitTransaction(): Promise<void> {
    await this.call({ op: 'commit' });
  }

  async rollbackTransaction(): Promise<void> {
    await this.call({ op: 'rollback' });
  }

  async destroy(): Promise<void> {
    this.port.close();
  }
}
