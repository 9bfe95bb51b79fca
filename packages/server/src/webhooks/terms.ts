import { transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { EXPIRING_WINDOW_MS, recordTermEvent, subscriptions } from '../audit/events.js';
import { findLicenceView, toLicence } from '../listings/repos/views.js';

const BATCH = 500;

/**
 * Finds the terms that raise `licence.expiring` (expiresAt within 7 days, the term entering the
 * window since the organisation has had an endpoint) and `licence.expired` (graceEndsAt passed
 * since then), neither revoked nor archived, each with its mark in one transaction.
 */
export async function scanTerms(database: Database, now: number): Promise<void> {
  const db = database.db;
  for (const kind of ['expiring', 'expired'] as const) {
    let query = db
      .selectFrom('licences')
      .innerJoin('webhook_state', 'webhook_state.org_id', 'licences.org_id')
      .select(['licences.org_id', 'licences.lid'])
      .where('licences.revoked', '=', 0)
      .where('licences.archived', '=', 0)
      .where((eb) => eb.exists(eb.selectFrom('webhook_endpoints').select('webhook_endpoints.id').whereRef('webhook_endpoints.org_id', '=', 'licences.org_id')))
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('webhook_term_marks')
              .select('webhook_term_marks.id')
              .whereRef('webhook_term_marks.licence_id', '=', 'licences.id')
              .whereRef('webhook_term_marks.term_version', '=', 'licences.term_version')
              .where('webhook_term_marks.kind', '=', kind),
          ),
        ),
      );
    query =
      kind === 'expiring'
        ? query
            .where('licences.expires_at', '>', now)
            .where('licences.expires_at', '<=', now + EXPIRING_WINDOW_MS)
            .where((eb) => eb.or([eb('licences.issued_at', '>=', eb.ref('webhook_state.since')), eb('licences.expires_at', '>=', eb(eb.ref('webhook_state.since'), '+', EXPIRING_WINDOW_MS))]))
        : query.where('licences.grace_ends_at', '<=', now).where('licences.grace_ends_at', '>=', (eb) => eb.ref('webhook_state.since'));
    const terms = await query.orderBy('licences.id').limit(BATCH).execute();
    for (const term of terms) {
      await transaction(database, async (trx) => {
        const t = tenant(trx, term.org_id);
        if (!(await subscriptions(t))(`licence.${kind}`)) return;
        const view = await findLicenceView(t, term.lid, now);
        await recordTermEvent(t, now, kind, { licenceId: view.id, termVersion: view.term_version }, () => ({ licence: toLicence(view, now) }));
      });
    }
  }
}
