import cluster, { type Worker } from 'node:cluster';
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';
import { answerRateHits, memoryRateLimiter } from './check/rate-limit.js';
import { SCHEMA_CHANGED_EXIT } from './db/schema-watch.js';

// A worker that dies this soon after starting is replaced after a pause, not in a tight loop.
const EARLY_DEATH_MS = 5_000;
const RESTART_PAUSE_MS = 1_000;

/**
 * The primary process of DESIGN.md 11: it prepares the database (migrations, first-run
 * bootstrap) before any worker starts, then keeps `config.workers` workers serving the port,
 * replaces one that dies, holds the rate-limit counts when there is no Redis, and on SIGTERM
 * lets every worker finish its in-flight requests before it exits.
 */
export async function superviseWorkers(config: Config, prepare: (log: Logger) => Promise<void>): Promise<void> {
  const log = pino({ level: config.logLevel }).child({ role: 'primary' });
  await prepare(log);
  const counts = memoryRateLimiter();
  const startedAt = new Map<Worker, number>();
  let stopping = false;
  let exitCode = 0;

  const start = () => {
    if (stopping) return;
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
    answerRateHits(worker, counts);
    worker.once('online', () => log.info({ worker: worker.process.pid }, 'worker started'));
  };
  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    if (stopping) {
      if (startedAt.size === 0) process.exit(exitCode);
      return;
    }
    if (code === SCHEMA_CHANGED_EXIT) {
      // A newer release migrated the database: a new worker of this release would find the same. The supervisor restarts the instance.
      log.error({ worker: worker.process.pid }, 'the database was migrated by a newer release: stopping every worker');
      exitCode = 1;
      stop('newer schema');
      return;
    }
    log.error({ worker: worker.process.pid, code, signal }, 'worker died: starting another');
    setTimeout(start, lived < EARLY_DEATH_MS ? RESTART_PAUSE_MS : 0);
  });
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: every worker finishes its in-flight requests');
    if (startedAt.size === 0) process.exit(exitCode);
    for (const worker of startedAt.keys()) worker.process.kill('SIGTERM');
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  log.info({ workers: config.workers }, 'starting workers');
  for (let i = 0; i < config.workers; i++) start();
}
