/** The delivery thread's entry (thread.ts): the outbox's loop over a connection of its own (PostgreSQL) or the API's (SQLite, db/forwarded.ts). */
import fs from 'node:fs';
import os from 'node:os';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { openDatabase, sqliteFileIn } from '../db/database.js';
import { forwardedDatabase } from '../db/forwarded.js';
import { Outbox } from './outbox.js';

// Deliveries are background work: on a busy machine the kernel gives the API's threads (and the
// database's) the CPU first, and deliveries catch up when it is free. On Linux a thread has a
// nice value of its own; elsewhere deliveries share the CPU as equals.
try {
  os.setPriority(Number(fs.readlinkSync('/proc/thread-self').split('/').at(-1)), os.constants.priority.PRIORITY_BELOW_NORMAL);
} catch {}

const port = parentPort!;
const config = loadConfig();
const log = pino({ level: config.logLevel }).child({ role: 'webhooks' });
const data = workerData as { masterKey: Uint8Array; statements?: MessagePort };
const database = data.statements
  ? forwardedDatabase(data.statements)
  : await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) }, { migrate: false, serving: true });
const masterKey = Buffer.from(data.masterKey);
const outbox = new Outbox(database, masterKey, config.webhookAllowNetworks, log, (outcome) => port.postMessage({ outcome }));
port.on('message', (message) => {
  if (message !== 'stop') return;
  void outbox
    .stop()
    .then(() => database.close())
    .finally(() => port.close());
});
outbox.start();
