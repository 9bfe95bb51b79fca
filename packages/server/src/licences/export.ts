import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Db } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import type { Ctx } from '../http/context.js';
import { badRequest } from '../http/errors.js';
import { countMatching, orderedLids, readPlan, sortExpression, viewsInOrder, type ListingFilter, type ReadPlan } from './listing.js';
import { toLicenceListItem, type LicenceView } from './repo.js';

export const EXPORT_LIMIT = 25_000;
const BATCH = 1000;

const COLUMNS = [
  'lid',
  'licensee',
  'licenseeEmail',
  'productKey',
  'productName',
  'licenceType',
  'status',
  'issuedAt',
  'startsAt',
  'expiresAt',
  'graceDays',
  'maxMachines',
  'seatsUsed',
  'revoked',
  'archived',
  'lastCheckedAt',
  'notes',
] as const;

/**
 * One CSV cell (RFC 4180). A cell that a spreadsheet would read as a formula (or that starts
 * with a tab or carriage return) is prefixed with a quote, so opening an export runs nothing.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const csvRow = (cells: unknown[]) => `${cells.map(csvCell).join(',')}\r\n`;

/*
 * Keyset continuation after the last row sent, for the sort's direction with nulls last:
 * rows whose key comes later, rows with an equal key and a later lid, then the null keys.
 */
function after(filter: ListingFilter, now: number, last: { key: unknown; lid: string }): Expression<SqlBool> {
  const key = sortExpression(filter.sort, now);
  const [later, laterLid] = filter.asc ? [sql.raw('>'), sql.raw('>')] : [sql.raw('<'), sql.raw('<')];
  if (last.key === null) return sql<SqlBool>`(${key} is null and licences.lid ${laterLid} ${last.lid})`;
  return sql<SqlBool>`(${key} ${later} ${last.key} or (${key} = ${last.key} and licences.lid ${laterLid} ${last.lid}) or ${key} is null)`;
}

async function* batches(db: Db, ctx: Ctx, filter: ListingFilter, now: number, plan: ReadPlan): AsyncGenerator<LicenceView[]> {
  const t = tenant(db, ctx.org.id);
  let last: { key: unknown; lid: string } | null = null;
  for (;;) {
    let query = orderedLids(t, filter, now, plan);
    if (last) {
      const cursor = last;
      query = query.where(() => after(filter, now, cursor));
    }
    const rows = await query.limit(BATCH).execute();
    if (rows.length === 0) return;
    yield viewsInOrder(t, rows.map((r) => r.lid));
    const tail = rows[rows.length - 1]!;
    last = { key: tail.sort_key, lid: tail.lid };
    if (rows.length < BATCH) return;
  }
}

/**
 * Counts first (refusing above the limit rather than truncating), then streams the rows in
 * keyset batches so memory stays flat. One `now` serves every calendar rule of the request;
 * on PostgreSQL the count and every batch read one REPEATABLE READ snapshot.
 */
export function exportLicences(ctx: Ctx, filter: ListingFilter): Promise<Readable> {
  const { database } = ctx;
  const now = ctx.now;
  const run = <T>(work: (db: Db) => Promise<T>) =>
    database.dialect === 'postgres'
      ? database.db.transaction().setIsolationLevel('repeatable read').execute((trx) => work(trx))
      : work(database.db);

  return new Promise((resolve, reject) => {
    run(async (db) => {
      const count = await countMatching(tenant(db, ctx.org.id), filter, now);
      if (count > EXPORT_LIMIT) {
        throw badRequest(`${count} licences match: an export holds at most ${EXPORT_LIMIT}; narrow the filter`);
      }
      const out = new PassThrough();
      resolve(out);
      try {
        out.write(csvRow([...COLUMNS]));
        for await (const rows of batches(db, ctx, filter, now, readPlan(filter, count))) {
          if (out.destroyed) return;
          const text = rows
            .map((view) => {
              const item = toLicenceListItem(view, now) as Record<string, unknown>;
              return csvRow(COLUMNS.map((c) => item[c]));
            })
            .join('');
          // A client that went away closes the stream: stop reading rather than wait for a drain.
          if (!out.write(text)) await Promise.race([once(out, 'drain'), once(out, 'close')]);
        }
        out.end();
      } catch (err) {
        out.destroy(err as Error);
      }
    }).catch(reject);
  });
}
