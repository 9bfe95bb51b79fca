import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { processLogger } from './log.js';
import type { Config } from './config.js';
import { answerRateHits, memoryRateLimiter } from './http/rate-limit.js';
import { SCHEMA_CHANGED_EXIT } from './db/schema-watch.js';

// A worker that dies this soon after starting is replaced after a pause, not in a tight loop.
const EARLY_DEATH_MS = 5_000;
const RESTART_PAUSE_MS = 1_000;
// Workers drain for up to 10 s on SIGTERM (cli.ts); one that has not exited a little later is killed.
const STOP_DEADLINE_MS = 15_000;

/**
 * The primary accepts each connection and hands it to a worker (Node's round-robin scheduling),
 * closing its own copy only when the worker says it took it. A worker that dies with a handed
 * connection still unacknowledged would leave it open, unanswered, until the client gives up:
 * such connections are closed when the worker exits, so the client sees at once that it failed.
 * This follows the messages of Node's cluster module (`newconn`, answered by an `ack`); should
 * they change, nothing here matches and nothing else is affected.
 */
function closeOrphanedConnections(worker: Worker): void {
  type Message = { cmd?: string; act?: string; seq?: number; ack?: number };
  const handed = new Map<number, { close(): void }>();
  const child = worker.process as unknown as { send(message: Message, handle?: unknown, ...rest: unknown[]): boolean };
  const send = child.send.bind(child);
  child.send = (message, handle, ...rest) => {
    if (message?.cmd === 'NODE_CLUSTER' && message.act === 'newconn' && typeof message.seq === 'number' && handle) {
      handed.set(message.seq, handle as { close(): void });
    }
    return send(message, handle, ...rest);
  };
  worker.process.on('internalMessage', (message: Message) => {
    if (message?.cmd === 'NODE_CLUSTER' && typeof message.ack === 'number') handed.delete(message.ack);
  });
  worker.once('exit', () => {
    for (const handle of handed.values()) handle.close();
    handed.clear();
  });
}

/**
 * The primary process of DESIGN.md 11 and 17, whatever the number of workers: it prepares the
 * database (migrations, first-run bootstrap) before any worker starts, then keeps
 * `config.workers` workers serving the port, replaces one that dies, holds the rate-limit counts
 * the workers share (without Redis, or while it is down), and on SIGTERM lets every worker finish
 * its in-flight requests before it exits.
 */
export async function superviseWorkers(config: Config, prepare: (log: Logger) => Promise<void>): Promise<void> {
  const log = processLogger(config).child({ role: 'primary' });
  await prepare(log);
  const counts = memoryRateLimiter();
  const startedAt = new Map<Worker, number>();
  let stopping = false;
  // Until a worker has listened, a death is a failure to start (the port taken, say): the
  // primary then exits rather than start another in a loop.
  let served = false;
  let exitCode = 0;

  // A standby worker has loaded the service and opened its pool but does not listen until told,
  // so a worker that dies is replaced by one that serves within milliseconds, not after the
  // seconds a new process takes to load (several on a busy machine).
  let standby: Worker | undefined;
  let standbyReady = false;
  const fork = (asStandby: boolean) => {
    // The title tells a worker from the standby in `ps` (and /proc) from its first instant.
    cluster.setupPrimary({ execArgv: [...process.execArgv, `--title=${asStandby ? STANDBY_TITLE : WORKER_TITLE}`] });
    const worker = cluster.fork(asStandby ? { [STANDBY_ENV]: '1' } : {});
    startedAt.set(worker, Date.now());
    answerRateHits(worker, counts);
    closeOrphanedConnections(worker);
    worker.once('online', () => log.info({ worker: worker.process.pid }, asStandby ? 'standby worker started' : 'worker started'));
    if (asStandby) {
      standby = worker;
      standbyReady = false;
      worker.on('message', (message: unknown) => {
        if (worker === standby && (message as { licensor?: string } | null)?.licensor === READY_MESSAGE.licensor) standbyReady = true;
      });
    }
  };
  const start = () => {
    if (stopping) return;
    const ready = standby;
    // A standby still loading would serve no sooner than a new worker.
    if (ready && standbyReady && ready.isConnected()) {
      standby = undefined;
      ready.send(SERVE_MESSAGE);
      log.info({ worker: ready.process.pid }, 'standby worker now serving');
      fork(true);
    } else {
      fork(false);
    }
  };
  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    const wasStandby = worker === standby;
    if (wasStandby) standby = undefined;
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
    if (!served) {
      log.error({ worker: worker.process.pid, code, signal }, 'worker could not start');
      process.exit(1);
    }
    log.error({ worker: worker.process.pid, code, signal, standby: wasStandby }, 'worker died: starting another');
    const replace = wasStandby ? () => void (stopping || fork(true)) : start;
    setTimeout(replace, lived < EARLY_DEATH_MS ? RESTART_PAUSE_MS : 0);
  });
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: every worker finishes its in-flight requests');
    if (startedAt.size === 0) process.exit(exitCode);
    for (const worker of startedAt.keys()) worker.process.kill('SIGTERM');
    setTimeout(() => {
      log.error('workers still running after the drain: killing them');
      for (const worker of startedAt.keys()) worker.process.kill('SIGKILL');
    }, STOP_DEADLINE_MS).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  log.info({ workers: config.workers }, 'starting workers');
  for (let i = 0; i < config.workers; i++) fork(false);
  // The standby loads once the service is up, so it never slows the first start.
  cluster.once('listening', () => {
    served = true;
    if (!stopping) fork(true);
  });
}

const STANDBY_ENV = 'LICENSOR_STANDBY_WORKER';
/** The process titles of a worker serving the port, and of the standby until it is promoted. */
export const WORKER_TITLE = 'licensor worker';
export const STANDBY_TITLE = 'licensor standby';
const SERVE_MESSAGE = { licensor: 'serve' };
const READY_MESSAGE = { licensor: 'standby-ready' };

/**
 * In a worker, called first: returns what to await before listening, which resolves at once, or
 * for the standby once its primary promotes it. The standby tells its primary it is ready only
 * when it awaits (the service loaded); the primary's message is heard however early it comes.
 */
export function promotion(): () => Promise<void> {
  if (process.env[STANDBY_ENV] !== '1') return () => Promise.resolve();
  let promoted = false;
  let wake = () => {};
  const onMessage = (message: unknown) => {
    if ((message as { licensor?: string } | null)?.licensor !== SERVE_MESSAGE.licensor) return;
    process.off('message', onMessage);
    process.title = WORKER_TITLE;
    promoted = true;
    wake();
  };
  process.on('message', onMessage);
  return () =>
    promoted
      ? Promise.resolve()
      : new Promise((resolve) => {
          wake = resolve;
          process.send?.(READY_MESSAGE);
        });
}
