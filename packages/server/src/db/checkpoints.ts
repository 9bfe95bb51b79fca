import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/*
 * A serving SQLite database copies its write-ahead log into the database file from a thread of
 * its own. SQLite's automatic checkpoint runs inside the commit that crosses its threshold, on
 * the thread that commits: the API's, where it cost about 5 ms each (pages copied, two fsyncs),
 * a sixth of issuing's time, and a stall of every request waiting behind it. The thread's
 * checkpoints are PASSIVE: they take no lock a writer waits for. The API connection keeps an
 * automatic checkpoint at a higher threshold as a backstop, which then finds nearly every page
 * copied already, and is what lets the log start again from its beginning while writes never
 * pause (SQLite restarts the log only once every frame in it has been copied).
 */
const INTERVAL_MS = 250;

// The thread's code is this short script, so it runs the same from the sources (tests) and the build.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const sqlite = new (require(workerData.driver))(workerData.file);
const timer = setInterval(() => {
  // SQLITE_BUSY (another checkpoint at that moment) or a passing I/O error: the next turn tries again.
  try { sqlite.pragma('wal_checkpoint(PASSIVE)'); } catch {}
}, workerData.intervalMs);
parentPort.on('message', () => { clearInterval(timer); sqlite.close(); parentPort.close(); });
`;

/**
 * Starts the checkpoints of the SQLite database in `file`; the function returned stops them.
 * `warn` hears once if the thread fails: the backstop then does the work, slower, never wrong,
 * and an operator who sees write latency rise knows why.
 */
export function checkpointInBackground(file: string, warn: (message: string) => void): () => Promise<void> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(THREAD, { eval: true, workerData: { driver, file, intervalMs: INTERVAL_MS }, execArgv: [] });
  worker.unref();
  worker.on('error', (err) =>
    warn(`the SQLite checkpoint thread stopped (${err.message}): commits checkpoint the write-ahead log themselves from now on, which slows writes`),
  );
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return async () => {
    worker.postMessage('stop');
    await exited;
  };
}
