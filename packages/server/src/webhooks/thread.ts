import { MessageChannel, Worker } from 'node:worker_threads';
import type { BaseLogger } from 'pino';
import type { Database } from '../db/database.js';
import { answerStatements } from '../db/forwarded.js';
import type { Status } from './outbox.js';
import { anyEndpoint } from './repos/queue.js';

const RESTART_PAUSE_MS = 1_000;
/** Until the first endpoint exists, how often the database is asked whether one does. */
const WATCH_MS = 5_000;

/**
 * The delivery loop (outbox.ts) in a thread of its own, with its own database connection, as
 * `serve` runs it: an attempt's CPU (its claim, the request and its answer, the outcome's write)
 * then comes from another core than the API's, not from the requests this worker answers. A
 * thread that dies is started again after a pause; what it had claimed is leased and is
 * attempted again when the lease runs out, as after a process's death. The thread starts once
 * the database holds an endpoint (any organisation's, on any instance), so a service without
 * webhooks spends neither the thread's memory nor its start-up on them.
 */
export class DeliveryThread {
  private worker: Worker | null = null;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly database: Database,
    private readonly masterKey: Buffer,
    private readonly log: Pick<BaseLogger, 'error'>,
    private readonly counted: (outcome: Status) => void,
  ) {}

  start(): void {
    const look = async () => {
      if (this.stopping) return;
      const endpoint = await anyEndpoint(this.database.db).catch(() => false);
      if (this.stopping) return;
      if (endpoint) this.spawn();
      else this.timer = setTimeout(() => void look(), WATCH_MS).unref();
    };
    void look();
  }

  private spawn(): void {
    // The thread reads the configuration from the environment it shares with this process.
    // On SQLite the thread's statements run on this thread's connection (db/forwarded.ts).
    const channel = this.database.dialect === 'sqlite' ? new MessageChannel() : null;
    const ended = channel ? answerStatements(this.database, channel.port1) : async () => {};
    const worker = new Worker(new URL('./thread-main.js', import.meta.url), {
      workerData: { masterKey: new Uint8Array(this.masterKey), statements: channel?.port2 },
      transferList: channel ? [channel.port2] : [],
      execArgv: [],
    });
    this.worker = worker;
    worker.on('message', (message: { outcome?: Status }) => {
      if (message.outcome) this.counted(message.outcome);
    });
    worker.on('error', (err) => this.log.error({ err }, 'webhook delivery thread failed'));
    worker.on('exit', (code) => {
      this.worker = null;
      void ended();
      if (this.stopping) return;
      this.log.error({ code }, 'webhook delivery thread ended: starting it again');
      this.timer = setTimeout(() => this.spawn(), RESTART_PAUSE_MS).unref();
    });
  }

  /** Asks the loop to stop claiming and to finish the attempts it has made, and waits for the thread to end. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const worker = this.worker;
    if (!worker) return;
    const ended = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage('stop');
    await ended;
  }
}
