import type { Database } from '../db/database.js';
import { pruneEvents } from './repo.js';

const EVERY_MS = 60 * 60 * 1000;

/**
 * Forgets usage ids past their horizon (DESIGN.md 19), hourly and once at start: event rows deleted
 * and their count rows' remembered ids lowered with them, `used` never changed. Every process runs
 * it; a delete that finds nothing costs little.
 */
export function usagePruner(database: Database, log: { warn(obj: unknown, msg: string): void }) {
  let timer: NodeJS.Timeout | undefined;
  const run = () => pruneEvents(database.db, Date.now()).catch((err: unknown) => log.warn({ err }, 'pruning usage ids failed; the next hour tries again'));
  return {
    start() {
      void run();
      timer = setInterval(() => void run(), EVERY_MS).unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
