import { iso } from '../core/schemas.js';
import type { EventRow } from './repo.js';

/** A ledger entry as `GET /integrations/{id}/events` and a retry answer it. */
export const entryOf = (row: EventRow) => ({
  id: row.id,
  eventId: row.event_id,
  type: row.type,
  receivedAt: iso(row.received_at),
  outcome: row.outcome,
  error: row.error,
  lids: JSON.parse(row.lids) as string[],
  deliveries: row.deliveries,
  lastDeliveryAt: iso(row.last_delivery_at),
});
