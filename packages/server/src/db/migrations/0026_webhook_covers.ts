import { sql, type Kysely, type Migration } from 'kysely';

/**
 * DESIGN.md 15: `*` stands for every event whose read scope the credential saving it holds, the
 * endpoint keeping the list it stood for at that save, so each endpoint with `*` keeps that list
 * in `covers`. Until now saving `*` needed every read scope an event had, so an endpoint saved
 * with it stood for the whole catalogue of that time, which is what it keeps here: the events
 * added since (integration.failed, whose integrations:read its credential may not hold) it does
 * not take until saved again.
 */
const CATALOGUE_BEFORE = [
  'licence.issued',
  'licence.renewed',
  'licence.revoked',
  'licence.reinstated',
  'licence.archived',
  'licence.restored',
  'licence.expiring',
  'licence.expired',
  'licence.trial_started',
  'licence.trial_extended',
  'licence.trial_converted',
  'machine.bound',
  'machine.released',
  'machine.borrowed',
  'product.created',
  'product.updated',
  'product.deleted',
  'product.key_rotated',
  'product.check_token_rotated',
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'usage.threshold',
  'release.published',
  'release.yanked',
  'release.unyanked',
];

export function webhookCovers(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('webhook_endpoints').addColumn('covers', 'text').execute();
      await sql`update webhook_endpoints set covers = ${JSON.stringify(CATALOGUE_BEFORE)} where events like ${'%"*"%'}`.execute(db);
    },
  };
}
