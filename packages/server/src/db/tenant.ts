import {
  CompiledQuery,
  sql,
  type RawBuilder,
  type Compilable,
  type DeleteQueryBuilder,
  type DeleteResult,
  type InsertQueryBuilder,
  type InsertResult,
  type Insertable,
  type SelectQueryBuilder,
  type UpdateQueryBuilder,
  type UpdateResult,
} from 'kysely';
import { dialectOf, nameStatement, type Db } from './database.js';
import type { Schema } from './schema.js';

/** The tables that hold one organisation's data: every one has an `org_id`. */
export type TenantTable = {
  [K in keyof Schema]: Schema[K] extends { org_id: number } ? K : never;
}[keyof Schema];

/**
 * The only way repositories reach organisation data: every query built here is already
 * filtered by (or stamped with) the organisation, so a forgotten tenant filter cannot happen.
 */
export interface Tenant {
  readonly orgId: number;
  readonly db: Db;
  // biome-ignore lint/complexity/noBannedTypes: Kysely's own type for a selection of no columns yet
  selectFrom<T extends TenantTable>(table: T): SelectQueryBuilder<Schema, T, {}>;
  updateTable<T extends TenantTable>(table: T): UpdateQueryBuilder<Schema, T, T, UpdateResult>;
  deleteFrom<T extends TenantTable>(table: T): DeleteQueryBuilder<Schema, T, DeleteResult>;
  insertInto<T extends TenantTable>(table: T, values: Omit<Insertable<Schema[T]>, 'org_id'>): InsertQueryBuilder<Schema, T, InsertResult>;
}

export function tenant(db: Db, orgId: number): Tenant {
  // Kysely cannot type a column reference on a generic table name; the casts stay in this one place.
  const scoped = <Q>(query: Q, table: string): Q =>
    (query as unknown as { where: (c: string, op: string, v: number) => Q }).where(`${table}.org_id`, '=', orgId);
  return {
    orgId,
    db,
    selectFrom: (table) => scoped(db.selectFrom(table) as never, table),
    updateTable: (table) => scoped(db.updateTable(table) as never, table),
    deleteFrom: (table) => scoped(db.deleteFrom(table) as never, table),
    insertInto: (table, values) => db.insertInto(table).values({ ...values, org_id: orgId } as never) as never,
  };
}

/** A stand-in for an argument while a prepared query is compiled: found again among its parameters. */
class Slot {
  constructor(readonly index: number) {}
}
const ORG = -1;

/**
 * A query built through a tenant once, then run with fresh arguments: the hot path pays
 * Kysely's building and compiling once per dialect instead of once per request, and the
 * database prepares it once per connection (SQLite's statement cache; a named statement on
 * PostgreSQL). The organisation is a parameter like the others, filled
 * from the tenant it runs on, so the tenant filter is still the builder's own.
 */
export function preparedQuery<A extends unknown[], R>(
  build: (t: Tenant, ...args: A) => Compilable<R>,
): ((t: Tenant, ...args: A) => Promise<R[]>) & { query: (t: Tenant, ...args: A) => CompiledQuery<R> } {
  // biome-ignore lint/complexity/noBannedTypes: keyed by the dialect adapter's constructor
  const compiled = new Map<Function, { sql: string; parameters: readonly unknown[] }>();
  /** The statement with these arguments, to run or to send with others (database.ts pipelined). */
  const query = (t: Tenant, ...args: A) => {
    const dialect = t.db.getExecutor().adapter.constructor;
    let made = compiled.get(dialect);
    if (!made) {
      const stand = tenant(t.db, new Slot(ORG) as never);
      const built = build(stand, ...(args.map((_, i) => new Slot(i)) as A)).compile();
      nameStatement(built.sql);
      made = { sql: built.sql, parameters: built.parameters };
      compiled.set(dialect, made);
    }
    const parameters = made.parameters.map((p) => (p instanceof Slot ? (p.index === ORG ? t.orgId : args[p.index]) : p));
    return CompiledQuery.raw(made.sql, parameters) as CompiledQuery<R>;
  };
  return Object.assign(async (t: Tenant, ...args: A) => (await t.db.executeQuery<R>(query(t, ...args))).rows, { query });
}

/**
 * The rows of a JSON array of arrays, `columns` its elements' names and types, as a subquery a
 * prepared statement (preparedQuery) takes as one parameter, whatever the number of rows: one
 * statement for many rows, its text the same every time.
 */
export function jsonRows(t: Pick<Tenant, 'db'>, json: string, columns: ReadonlyArray<readonly [name: string, type: 'bigint' | 'text']>): RawBuilder<unknown> {
  const postgres = dialectOf(t.db) === 'postgres';
  const rows = postgres ? sql`jsonb_array_elements(${json}::jsonb) e` : sql`json_each(${json}) e`;
  // PostgreSQL's ->> answers text; SQLite's answers the JSON value's own type.
  const select = columns.map(([name, type], i) => (postgres ? `(e ->> ${i})::${type} as ${name}` : `e.value ->> ${i} as ${name}`));
  // `limit -1` (no limit) keeps SQLite from flattening the subquery: materialised, it is the outer
  // loop of a join, each row one primary-key lookup. Flattened, a database never ANALYZEd (as
  // SQLite leaves one) walked the organisation's whole index once per element instead: 48 ms for
  // a second's 100 stamps at 2,000 licences, 390 ms at 20,000, with every check waiting.
  return sql`(select ${sql.raw(select.join(', '))} from ${rows}${sql.raw(postgres ? '' : ' limit -1')})`;
}
