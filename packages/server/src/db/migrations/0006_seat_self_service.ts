import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * DESIGN.md 12: a product's self-service release limit. Products that exist when it is added
 * get 0, so an upgrade turns nothing on; new products get 3 from the product defaults.
 */
export function seatSelfService(_dialect: DialectName): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('products').addColumn('self_release_limit', 'integer', (c) => c.defaultTo(0)).execute();
    },
  };
}
