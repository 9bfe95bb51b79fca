import type { Tenant } from '../db/tenant.js';
import { iso } from '../core/schemas.js';
import { recordEvent, type EventSubject } from '../webhooks/events.js';

export interface AuditInput extends EventSubject {
  action: string;
  summary: string;
  details?: Record<string, unknown> | null;
}

/**
 * Appends one entry. Call it with the transaction's tenant handle, so the entry commits or
 * rolls back with the change it records. There is deliberately no update or delete. An action
 * named like a webhook event (DESIGN.md 15) also writes that event, in the same transaction.
 */
export async function recordAudit(t: Tenant, actor: string, now: number, entry: AuditInput): Promise<void> {
  await t
    .insertInto('audit_entries', {
      at: now,
      actor,
      action: entry.action,
      subject_type: entry.subjectType,
      subject_id: entry.subjectId == null ? null : String(entry.subjectId),
      lid: entry.lid ?? null,
      summary: entry.summary,
      details: entry.details ? JSON.stringify(entry.details) : null,
    })
    .execute();
  await recordEvent(t, now, entry.action, entry);
}

export async function listAudit(
  t: Tenant,
  filter: { lid?: string; action?: string | undefined; actor?: string | undefined; limit?: number | undefined; offset?: number | undefined },
) {
  const limit = filter.limit ?? 50;
  const offset = filter.offset ?? 0;
  let query = t.selectFrom('audit_entries');
  if (filter.lid !== undefined) query = query.where('lid', '=', filter.lid);
  if (filter.action !== undefined) query = query.where('action', '=', filter.action);
  if (filter.actor !== undefined) query = query.where('actor', '=', filter.actor);
  const [rows, count] = await Promise.all([
    query.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return {
    items: rows.map((row) => ({
      id: row.id,
      at: iso(row.at),
      actor: row.actor,
      action: row.action,
      subjectType: row.subject_type,
      subjectId: row.subject_id,
      lid: row.lid,
      summary: row.summary,
      details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
    })),
    total: Number(count.n),
    limit,
    offset,
  };
}
