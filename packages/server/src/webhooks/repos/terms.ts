import type { Db } from '../../db/database.js';

/**
 * Up to `limit` terms whose `licence.expiring` (expiresAt within the window, the term entering it
 * since the organisation has had an endpoint) or `licence.expired` (graceEndsAt passed since then)
 * is not marked raised, of licences neither revoked nor archived, across organisations.
 */
export function termsToRaise(db: Db, kind: 'expiring' | 'expired', now: number, windowMs: number, limit: number) {
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
          .where('licences.expires_at', '<=', now + windowMs)
          .where((eb) =>
            eb.or([
              eb('licences.issued_at', '>=', eb.ref('webhook_state.since')),
              eb('licences.expires_at', '>=', eb(eb.ref('webhook_state.since'), '+', windowMs)),
            ]),
          )
      : query.where('licences.grace_ends_at', '<=', now).where('licences.grace_ends_at', '>=', (eb) => eb.ref('webhook_state.since'));
  return query.orderBy('licences.id').limit(limit).execute();
}
