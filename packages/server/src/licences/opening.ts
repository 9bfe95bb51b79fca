import type { Tenant } from '../db/tenant.js';
import { StaleCache, type Ctx } from '../core/context.js';
import { ApiError, notFound } from '../core/errors.js';
import { findProductRow } from '../products/repo.js';
import { openingRow, TOKEN_COLUMNS } from './repo.js';
import { shapeOf, type ProductShape } from '../products/shape.js';
import { toOrganisation } from '../orgs/repo.js';
import { clockLock, holdClock, type HeldClock } from '../listings/repos/tallies.js';

/*
 * Issue and renew read nothing before their transaction that its first statement cannot confirm
 * (issue 34). The organisation and API token (http/tenancy.ts) and the product come from this
 * process's caches; the transaction's first statement, which takes the tally clock's lock (and
 * the customer's) anyway, reads them as they are, and anything changed is forgotten and the
 * request judged again on fresh reads (StaleCache): a revoked token, a suspended organisation,
 * a changed plan or a deactivated product is never served stale, even when another instance
 * changed it.
 */

export interface IssueProduct {
  id: number;
  /** Raised by every change to the product and its keys. */
  version: number;
  shape: ProductShape;
  /** Read in this request, or confirmed by its transaction's first statement (openWrite). */
  confirmed: boolean;
}

const LIMIT = 10_000;

/** Products by organisation and id, as issue and renew sign with them. */
export class ProductCache {
  private readonly byId = new Map<string, Omit<IssueProduct, 'confirmed'>>();

  /**
   * Runs `work` on the product, as cached when it is. A refusal given before the work's
   * transaction confirmed the product may rest on a product since changed: the product is then
   * forgotten and the request judged again (StaleCache).
   */
  async with<T>(t: Tenant, productId: number, work: (product: IssueProduct) => Promise<T>): Promise<T> {
    const key = `${t.orgId}:${productId}`;
    const cached = this.byId.get(key);
    if (cached) {
      const product = { ...cached, confirmed: false };
      try {
        return await work(product);
      } catch (err) {
        if (product.confirmed || !(err instanceof ApiError)) throw err;
        this.byId.delete(key);
        throw new StaleCache();
      }
    }
    const row = await findProductRow(t, productId);
    if (!row) throw notFound(`no product ${productId}`);
    const product = { id: row.id, version: row.version, shape: shapeOf(row) };
    if (this.byId.size >= LIMIT) this.byId.delete(this.byId.keys().next().value!);
    this.byId.set(key, product);
    return work({ ...product, confirmed: true });
  }

  forget(t: Tenant, productId: number): void {
    this.byId.delete(`${t.orgId}:${productId}`);
  }
}

/**
 * The first statement of an issue's or renewal's transaction, in one round trip: the tally clock
 * taken shared (and `customerLock` exclusively), the clock read, and what the request took from
 * caches confirmed. Throws StaleCache when any of it changed.
 */
export async function openWrite(ctx: Ctx, t: Tenant, products: ProductCache, product: IssueProduct, customerLock?: string): Promise<HeldClock> {
  const token = ctx.cached?.token;
  const row = await openingRow(ctx.database.dialect, t, product.id, token?.id ?? '', clockLock(t.orgId), customerLock);
  if (!row) throw new Error(`no organisation ${t.orgId}`);
  if (row.product_version !== product.version) {
    products.forget(t, product.id);
    throw new StaleCache();
  }
  product.confirmed = true;
  if (ctx.cached) {
    const orgChanged = JSON.stringify(toOrganisation(row)) !== JSON.stringify(ctx.org);
    const fields = row as unknown as Record<string, unknown>;
    if (orgChanged || TOKEN_COLUMNS.some((c) => fields[`token_${c}`] !== token![c])) {
      ctx.cached.forget();
      throw new StaleCache();
    }
  }
  if (row.as_of === null) return holdClock(ctx.database, t, ctx.now);
  // SQLite's writer holds the database from BEGIN IMMEDIATE: the clock was read under that lock.
  return { asOf: Number(row.as_of), confirmed: ctx.database.dialect !== 'postgres' };
}
