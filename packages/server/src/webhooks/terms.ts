import { transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { termsToRaise } from './repos/terms.js';
import { EXPIRING_WINDOW_MS, recordTermEvent, subscriptions } from '../audit/events.js';
import { findLicenceView, toLicence } from '../listings/repos/views.js';

const BATCH = 500;

/**
 * Finds the terms that raise `licence.expiring` (expiresAt within 7 days, the term entering the
 * window since the organisation has had an endpoint) and `licence.expired` (graceEndsAt passed
 * since then), neither revoked nor archived, each with its mark in one transaction.
 */
export async function scanTerms(database: Database, now: number): Promise<void> {
  for (const kind of ['expiring', 'expired'] as const) {
    const terms = await termsToRaise(database.db, kind, now, EXPIRING_WINDOW_MS, BATCH);
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
