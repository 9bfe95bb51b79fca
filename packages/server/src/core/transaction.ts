import { lockRow, transaction } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import type { Ctx } from './context.js';

/**
 * Runs `work` in one transaction with a tenant handle bound to it. `lockOrganisation`
 * serialises writers that check an organisation-wide count (plan capacity, last administrator).
 */
export function inTransaction<T>(ctx: Pick<Ctx, 'database' | 'org'>, work: (t: Tenant) => Promise<T>, { lockOrganisation = false } = {}): Promise<T> {
  return transaction(ctx.database, async (trx) => {
    if (lockOrganisation) await lockRow(ctx.database, trx, 'organisations', ctx.org.id);
    return work(tenant(trx, ctx.org.id));
  });
}
