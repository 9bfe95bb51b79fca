import type { Tenant } from '../db/tenant.js';
import { recordEvent, type EventData } from './events.js';
import { insertEntry } from './repo.js';

/** Who made a change and when: a request's context, or a worker's own (`check`, `webhooks`). */
export interface Author {
  actor: { name: string };
  now: number;
}

export interface AuditInput {
  action: string;
  subjectType: string;
  subjectId?: string | number | null | undefined;
  lid?: string | null | undefined;
  summary: string;
  details?: Record<string, unknown> | null;
  /** An action of the webhook catalogue (events.ts): the event's data. */
  event?: EventData | undefined;
}

/**
 * Appends one entry. Call it with the transaction's tenant handle, so the entry commits or
 * rolls back with the change it records. There is deliberately no update or delete. An action
 * named like a webhook event (DESIGN.md 15) also writes that event, in the same transaction.
 */
export async function recordAudit(t: Tenant, by: Author, entry: AuditInput): Promise<void> {
  await insertEntry(t, by.actor.name, by.now, entry);
  await recordEvent(t, by.now, entry.action, entry.event);
}
