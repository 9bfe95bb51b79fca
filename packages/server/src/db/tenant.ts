import type { DeleteQueryBuilder, DeleteResult, InsertQueryBuilder, InsertResult, Insertable, SelectQueryBuilder, UpdateQueryBuilder, UpdateResult } from 'kysely';
import type { Db } from './database.js';
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
  selectFrom<T extends TenantTable>(table: T): SelectQueryBuilder<Schema, T, {}>;
  updateTable<T extends TenantTable>(table: T): UpdateQueryBuilder<Schema, T, T, UpdateResult>;
  deleteFrom<T extends TenantTable>(table: T): DeleteQueryBuilder<Schema, T, DeleteResult>;
  insertInto<T extends TenantTable>(
    table: T,
    values: Omit<Insertable<Schema[T]>, 'org_id'>,
  ): InsertQueryBuilder<Schema, T, InsertResult>;
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
