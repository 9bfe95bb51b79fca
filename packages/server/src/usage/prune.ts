import { hourly } from '../core/hourly.js';
import type { Database } from '../db/database.js';
import { pruneEvents } from './repo.js';

/**
 * Forgets usage ids past their horizon (DESIGN.md 19), hourly and once at start: event rows deleted
 * and their count rows' remembered ids lowered with them, `used` never changed.
 */
export const usagePruner = (database: Database, log: { warn(obj: unknown, msg: string): void }) =>
  hourly(() => pruneEvents(database.db, Date.now()), log, 'pruning usage ids failed');
