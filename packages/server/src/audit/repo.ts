import type { Tenant } from '../db/tenant.js';

export async function insertEntry(
  t: Tenant,
  actor: string,
  at: number,
  entry: {
    action: string;
    subjectType: string;
    subjectId?: string | number | null | undefined;
    lid?: string | null | undefined;
    summary: string;
    details?: Record<string, unknown> | null;
  },
): Promise<void> {
  await t
    .insertInto('audit_entries', {
      at,
      actor,
      action: entry.action,
      subject_type: entry.subjectType,
      subject_id: entry.subjectId == null ? null : String(entry.subjectId),
      lid: entry.lid ?? null,
      summary: entry.summary,
      details: entry.details ? JSON.stringify(entry.details) : null,
    })
    .execute();
}

/** A page of the organisation's audit trail, newest first, narrowed by licence, exact action and actor, and how many entries match. */
export async function auditPage(
  t: Tenant,
  filter: { lid?: string | undefined; action?: string | undefined; actor?: string | undefined },
  limit: number,
  offset: number,
) {
  let query = t.selectFrom('audit_entries');
  if (filter.lid !== undefined) query = query.where('lid', '=', filter.lid);
  if (filter.action !== undefined) query = query.where('action', '=', filter.action);
  if (filter.actor !== undefined) query = query.where('actor', '=', filter.actor);
  const [rows, count] = await Promise.all([
    query.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** The event types the organisation's endpoints take, enabled or not (for `*`, those it stood for when saved). */
export async function subscribedTypes(t: Tenant): Promise<Set<string>> {
  const rows = await t.selectFrom('webhook_endpoints').select(['events', 'covers']).execute();
  return new Set(rows.flatMap((e) => JSON.parse(e.covers ?? e.events) as string[]));
}

export async function insertEvent(t: Tenant, eventId: string, now: number, type: string, data: Record<string, unknown>): Promise<void> {
  await t.insertInto('webhook_events', { event_id: eventId, type, data: JSON.stringify(data), created_at: now, sequence: null, body: null }).execute();
}

/** Marks a licence term's `expiring` or `expired` event as raised; false when it was already. */
export async function insertTermMark(t: Tenant, licenceId: number, kind: 'expiring' | 'expired', termVersion: number): Promise<boolean> {
  const mark = await t
    .insertInto('webhook_term_marks', { licence_id: licenceId, kind, term_version: termVersion })
    .onConflict((oc) => oc.columns(['licence_id', 'kind', 'term_version']).doNothing())
    .executeTakeFirst();
  return Number(mark.numInsertedOrUpdatedRows ?? 0) > 0;
}
