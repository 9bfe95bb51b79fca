import { lockRow, transaction } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import type { Ctx } from './context.js';

/**
 * Runs `work` in one transaction with a tenant handle bound to it. `lockOrganisation`
 * serialises writers that check an organisation-wide count (plan capacity, last administrator).
 * A context `within` a transaction already open runs the work in that one.
 */
export async function inTransaction<T>(
  ctx: Pick<Ctx, 'database' | 'org' | 'within'>,
  work: (t: Tenant) => Promise<T>,
  { lockOrganisation = false } = {},
): Promise<T> {
  if (ctx.within) {
    if (lockOrganisation) await lockRow(ctx.database, ctx.within.db, 'organisations', ctx.org.id);
    return work(ctx.within);
  }
  return transaction(ctx.database, async (trx) => {
    if (lockOrganisation) await lockRow(ctx.database, trx, 'organisations', ctx.org.id);
    return work(tenant(trx, ctx.org.id));
  });
}
