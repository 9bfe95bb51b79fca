import type { DialectName } from '../db/database.js';

/** Runs one catalog query (no parameters: table names are checked before they are put in one). */
export type CatalogQuery = (text: string) => Promise<Array<Record<string, unknown>>>;

export interface BaseTable {
  name: string;
  columns: string[];
  /** PostgreSQL: the identity column, whose sequence restore moves past the largest id. */
  identity: string | null;
}

/**
 * Tables a backup leaves out (DESIGN.md 17): the migrator's own, sign-in state (everyone signs in
 * again after a restore; pending single sign-ins with it, DESIGN.md 21), and what restore derives afresh (the licence tallies, recounted). A
 * full-text index and its shadow tables are left out by kind (`searchIndexes`), whatever their names.
 */
export const EXCLUDED: ReadonlySet<string> = new Set([
  'kysely_migration',
  'kysely_migration_lock',
  'sessions',
  'platform_sessions',
  'portal_sessions',
  'webauthn_challenges',
  'sso_states',
  'login_failures',
  'platform_login_failures',
  'licence_tallies',
  'licence_tally_clocks',
]);

const NAME = /^[a-z_][a-z0-9_]*$/;

function checkedName(value: unknown): string {
  if (typeof value !== 'string' || !NAME.test(value)) throw new Error(`unexpected table or column name ${JSON.stringify(value)}`);
  return value;
}

/** SQLite: a virtual table (FTS5) and the shadow tables named after it. */
async function searchIndexes(query: CatalogQuery): Promise<(name: string) => boolean> {
  const virtual = (await query(`select name from sqlite_master where type = 'table' and lower(sql) like 'create virtual table%'`)).map((r) => String(r.name));
  return (name) => virtual.some((v) => name === v || name.startsWith(`${v}_`));
}

/** Every table of the schema, by name, before any is left out. */
export async function allTables(dialect: DialectName, query: CatalogQuery): Promise<string[]> {
  const rows =
    dialect === 'sqlite'
      ? await query(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`)
      : await query(`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`);
  return rows.map((r) => String(r.name)).sort();
}

/**
 * The base tables a backup holds, read from the database's own catalog (so a table added by a
 * later migration is backed up without being named here), parents before the tables that refer
 * to them.
 */
export async function baseTables(dialect: DialectName, query: CatalogQuery): Promise<BaseTable[]> {
  const isIndex = dialect === 'sqlite' ? await searchIndexes(query) : () => false;
  const names = (await allTables(dialect, query)).filter((name) => !EXCLUDED.has(name) && !isIndex(name)).map(checkedName);
  const tables = new Map<string, BaseTable & { parents: string[] }>();
  for (const name of names) {
    const columns =
      dialect === 'sqlite'
        ? await query(`select name, 0 as is_identity from pragma_table_info('${name}') order by cid`)
        : await query(
            `select column_name as name, (is_identity = 'YES') as is_identity from information_schema.columns
             where table_schema = current_schema() and table_name = '${name}' order by ordinal_position`,
          );
    const parents =
      dialect === 'sqlite'
        ? await query(`select "table" as parent from pragma_foreign_key_list('${name}')`)
        : await query(
            `select p.relname as parent from pg_constraint k join pg_class p on p.oid = k.confrelid
             where k.contype = 'f' and k.conrelid = to_regclass('${name}')`,
          );
    tables.set(name, {
      name,
      columns: columns.map((c) => checkedName(c.name)),
      identity: (columns.find((c) => c.is_identity === true)?.name as string | undefined) ?? null,
      parents: parents.map((p) => String(p.parent)).filter((p) => p !== name),
    });
  }
  // Parents first; among tables that are ready, by name, so the order is the same every time.
  const ordered: BaseTable[] = [];
  const placed = new Set<string>();
  while (placed.size < tables.size) {
    const ready = [...tables.values()].filter((t) => !placed.has(t.name) && t.parents.every((p) => placed.has(p) || !tables.has(p)));
    if (ready.length === 0) throw new Error('the tables refer to each other in a cycle');
    for (const { parents: _, ...table } of ready) {
      ordered.push(table);
      placed.add(table.name);
    }
  }
  return ordered;
}
