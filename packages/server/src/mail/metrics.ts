import { Gauge, type Registry } from 'prom-client';
import type { Database } from '../db/database.js';
import { pendingEmailCount } from './repo.js';

/** `licensor_mail_outbox_pending` (DESIGN.md 22): emails pending, held by the daily limit included, across organisations. */
export function mailMetrics(registry: Registry, database: Database): void {
  new Gauge({
    name: 'licensor_mail_outbox_pending',
    help: 'Licence emails not yet sent or failed, held ones included',
    registers: [registry],
    async collect() {
      this.set(await pendingEmailCount(database.db));
    },
  });
}
