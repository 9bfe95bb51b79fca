import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import type { Db } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import type { Ctx } from '../core/context.js';
import { badRequest } from '../core/errors.js';
import { countListing, tallies } from './repos/tallies.js';
import { matchingLids, readPlan } from './repos/pages.js';
import type { ListingFilter } from './filter.js';
import { viewsInOrder, toLicenceListItem } from './repos/views.js';

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

/**
 * Counts first (refusing above the limit rather than truncating), then reads the matching lids
 * in order once (at most 25,000 short strings) and streams the rows in batches of 1,000, so the
 * filter is evaluated once and memory stays flat. One `now` serves every calendar rule of the
 * request; on PostgreSQL the lids and every batch read one REPEATABLE READ snapshot.
 */
export async function exportLicences(ctx: Ctx, filter: ListingFilter): Promise<Readable> {
  const { database, now } = ctx;
  // The tallies first: reading them brings every stored status to the request's instant.
  const count = await countListing(ctx, filter, await tallies(ctx));
  if (count > EXPORT_LIMIT) throw badRequest(`${count} licences match: an export holds at most ${EXPORT_LIMIT}; narrow the filter`);
  const run = <T>(work: (db: Db) => Promise<T>) =>
    database.dialect === 'postgres'
      ? database.db
          .transaction()
          .setIsolationLevel('repeatable read')
          .execute((trx) => work(trx))
      : work(database.db);

  return new Promise((resolve, reject) => {
    run(async (db) => {
      const t = tenant(db, ctx.org.id);
      const out = new PassThrough();
      resolve(out);
      try {
        out.write(csvRow([...COLUMNS]));
        const lids = await matchingLids(t, filter, now, readPlan(filter, count));
        for (let i = 0; i < lids.length; i += BATCH) {
          if (out.destroyed) return;
          const rows = await viewsInOrder(t, lids.slice(i, i + BATCH), now);
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
