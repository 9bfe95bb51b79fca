import { hourly } from '../core/hourly.js';
import type { Database } from '../db/database.js';
import { expireWaiting } from './hook.js';
import { deleteEventsBefore } from './repo.js';

/** DESIGN.md 22: a connection's ledger entries are kept 90 days (a replay is IGNORED after 30). */
export const KEEP_MS = 90 * 86_400_000;

/** The ledger's hourly upkeep: old entries forgotten, WAITING ones whose customer never came FAILED. */
export const ledgerPruner = (database: Database, publicUrl: string, log: { warn(obj: unknown, msg: string): void }) =>
  hourly(
    async () => {
      const now = Date.now();
      await deleteEventsBefore(database.db, now - KEEP_MS);
      await expireWaiting(database, publicUrl, now);
    },
    log,
    'the integration ledger upkeep failed',
  );
