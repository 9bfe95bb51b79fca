import { lockExpression, type DialectName } from '../db/database.js';
import { preparedQuery, type Tenant } from '../db/tenant.js';
import { StaleCache, type Ctx } from '../core/context.js';
import { ApiError, notFound } from '../core/errors.js';
import { findProductRow } from '../products/repo.js';
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

// The columns of the API token a request may be admitted on (last_used_at is only a stamp).
const TOKEN_COLUMNS = ['id', 'org_id', 'name', 'scopes', 'secret_hash', 'created_at', 'created_by', 'expires_at', 'revoked_at'] as const;

/**
 * The statement, built once per dialect and lock (preparedQuery): the clock's lock taken shared
 * and, for an issue, the customer's exclusively (PostgreSQL; SQLite's writer holds the database).
 */
const opening = (dialect: DialectName, customer: boolean) =>
  preparedQuery((t, productId: number, tokenId: string, clockLock: string, customerLock: string) => {
    const locks = [lockExpression({ dialect }, clockLock, 'shared'), customer ? lockExpression({ dialect }, customerLock) : null];
    return t.db
      .selectFrom('organisations as o')
      .leftJoin('licence_tally_clocks as k', 'k.org_id', 'o.id')
      .leftJoin('products as p', (join) => join.onRef('p.org_id', '=', 'o.id').on('p.id', '=', productId))
      .leftJoin('api_tokens as a', (join) => join.onRef('a.org_id', '=', 'o.id').on('a.id', '=', tokenId))
      .select(['o.id', 'o.slug', 'o.name', 'o.plan_limit', 'o.timezone', 'o.settings_updated_at', 'o.settings_updated_by', 'o.suspended', 'o.created_at'])
      .select(TOKEN_COLUMNS.map((c) => `a.${c} as token_${c}` as const))
      .select(['p.version as product_version', 'k.as_of'])
      .select(locks.flatMap((lock, i) => (lock ? [lock.as(`lock_${i}`)] : [])))
      .where('o.id', '=', t.orgId);
  });
const OPENINGS = {
  sqlite: { issue: opening('sqlite', false), renew: opening('sqlite', false) },
  postgres: { issue: opening('postgres', true), renew: opening('postgres', false) },
};

/**
 * The first statement of an issue's or renewal's transaction, in one round trip: the tally clock
 * taken shared (and `customerLock` exclusively), the clock read, and what the request took from
 * caches confirmed. Throws StaleCache when any of it changed.
 */
export async function openWrite(ctx: Ctx, t: Tenant, products: ProductCache, product: IssueProduct, customerLock?: string): Promise<HeldClock> {
  const token = ctx.cached?.token;
  const query = OPENINGS[ctx.database.dialect][customerLock === undefined ? 'renew' : 'issue'];
  const [row] = await query(t, product.id, token?.id ?? '', clockLock(t.orgId), customerLock ?? '');
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
