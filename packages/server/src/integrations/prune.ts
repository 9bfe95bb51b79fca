import { hourly } from '../core/hourly.js';
import type { Database } from '../db/database.js';
import { deleteEventsBefore } from './repo.js';

/** DESIGN.md 22: a connection's ledger entries are kept 90 days (a replay is IGNORED after 30). */
export const KEEP_MS = 90 * 86_400_000;

export const ledgerPruner = (database: Database, log: { warn(obj: unknown, msg: string): void }) =>
  hourly(() => deleteEventsBefore(database.db, Date.now() - KEEP_MS), log, 'pruning integration events failed');
