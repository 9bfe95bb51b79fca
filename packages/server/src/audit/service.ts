import { iso } from '../core/schemas.js';
import type { Tenant } from '../db/tenant.js';
import { auditPage } from './repo.js';

/** The audit trail's entries as the API lists them, a page at a time. */
export async function listAudit(
  t: Tenant,
  filter: { lid?: string; action?: string | undefined; actor?: string | undefined; limit?: number | undefined; offset?: number | undefined },
) {
  const limit = filter.limit ?? 50;
  const offset = filter.offset ?? 0;
  const { rows, total } = await auditPage(t, filter, limit, offset);
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
    total,
    limit,
    offset,
  };
}
