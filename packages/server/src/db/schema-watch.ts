import type { FastifyInstance } from 'fastify';
import type { Database } from './database.js';
import { appliedMigrations, MIGRATION_NAMES } from './migrations/index.js';

/** A worker that found the schema changed under it exits with this code, and its primary stops too (workers.ts). */
export const SCHEMA_CHANGED_EXIT = 75;
const EVERY_MS = 5_000;
// In-flight requests get this long (and new ones their 503) before the process exits.
const EXIT_AFTER_MS = 5_000;

/**
 * DESIGN.md 17: an instance that finds a newer release's migration applied to its database answers
 * 503 from then on and exits, for its supervisor to start the new release. Looked for every few
 * seconds (one small query); a failed look (the database unreachable) is not a change.
 */
export function guardSchema(app: FastifyInstance, database: Database, exit: (code: number) => void = process.exit): void {
  let changed = false;
  app.addHook('onRequest', async (_request, reply) => {
    if (changed) return reply.code(503).header('retry-after', '5').send({ error: 'the database was upgraded by a newer release: this instance is restarting' });
  });
  const look = async () => {
    const applied = await appliedMigrations(database).catch(() => []);
    if (changed || applied.every((name) => MIGRATION_NAMES.includes(name))) return;
    changed = true;
    clearInterval(timer);
    app.log.error({ schema: applied.at(-1) }, 'the database was migrated by a newer release: answering 503 and exiting for the supervisor to restart');
    setTimeout(() => exit(SCHEMA_CHANGED_EXIT), EXIT_AFTER_MS);
  };
  const timer = setInterval(() => void look(), EVERY_MS).unref();
  app.addHook('onClose', async () => clearInterval(timer));
}
