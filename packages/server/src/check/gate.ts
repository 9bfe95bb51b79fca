import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { ApiError, forbidden, notFound, tooManyRequests, unauthorized } from '../core/errors.js';
import type { Keyring } from '../keys/keyring.js';
import type { OrganisationCache } from '../orgs/repo.js';
import type { Organisation } from '../core/context.js';
import type { CheckWrites } from './counters.js';
import { borrowLease, fetchLicence, releaseOwnSeat } from './own-seat.js';
import { CheckProductCache, StaleProduct, type CheckProduct } from './product-cache.js';
import type { UsageCounters } from '../http/metrics.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { LicenceReads } from './licence-reads.js';
import { ReadFingerprints, TokenDigests, VerifiedLicences } from './remembered.js';
import type { CheckRoute } from './schemas.js';
import { CHECKS, checkLicence, type CheckScope } from './service.js';
import { UsageCommits } from '../usage/commits.js';
import { recordUsage } from './usage.js';
import { startTrial, type TrialOutcome, type TrialRequest } from './trial.js';
import type { DownloadDeps } from '../downloads/service.js';
import { downloadWork } from './downloads.js';

const CHECK_TOKEN = /^Bearer svcc_([a-z0-9]{12,32})_([0-9a-f]{64})$/;

const isJson = (contentType: string | undefined) => contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';

/** A request to the licence check API as its gate reads it, whichever HTTP layer carried it (routes.ts, lean.ts). */
export interface Asked {
  /** The organisation the URL's slug selected. */
  org: Organisation;
  checkId: string;
  /** The client's address, as config.trustProxy has it. */
  ip: string;
  authorization: string | undefined;
  contentType: string | undefined;
}

export interface GateDeps {
  database: Database;
  keyring: Keyring;
  config: Pick<Config, 'checkRateAddress' | 'checkRateProduct' | 'usageRateLicence' | 'usageIdsPerPeriod'>;
  limiter: RateLimiter;
  organisations: OrganisationCache;
  writes: CheckWrites;
  usageCounters: UsageCounters;
  /** Counts a trial request by its outcome (`licensor_trial_requests_total`). */
  countTrial: (outcome: TrialOutcome) => void;
  /** DESIGN.md 20: what download grants and feed tokens are made with. */
  downloads: DownloadDeps;
}

/** The gates beside the check routes': the trial's (DESIGN.md 18) and the download grant's and feed token's (DESIGN.md 20). */
export type GateName = CheckRoute | 'trial' | 'download' | 'feed-token';

/** A route of the check API without its HTTP plumbing: the refusals before the body, then the work on the body. */
export interface CheckGate {
  /** The refusals of DESIGN.md 5 that come before the body, in their order; the scope of the work once none applies. */
  admit(asked: Asked): Promise<CheckScope>;
  /** The route's work on the validated body, judged again on a fresh product read when the cached one proved stale. */
  serve(asked: Asked, scope: CheckScope, body: never): Promise<unknown>;
}

/**
 * The check API's gates, one per route, sharing one product cache and one memory of verified
 * tokens and licences and of read fingerprints. The product comes from the cache; when the
 * route's work finds the product changed, the request is judged again on the product read afresh
 * and the work runs once more.
 */
export function checkGates({
  database,
  keyring,
  config,
  limiter,
  organisations,
  writes,
  usageCounters,
  countTrial,
  downloads,
}: GateDeps): Record<GateName, CheckGate> {
  const products = new CheckProductCache(keyring);
  const tokens = new TokenDigests();
  const verified = new VerifiedLicences();
  const fingerprints = new ReadFingerprints();
  const reads = new LicenceReads(database.dialect === 'postgres');
  const { grant, feedToken } = downloadWork(downloads);

  /** The product, on the organisation as it is now: a cached one whose slug leads elsewhere is read again (404 if gone). */
  const productOf = async (asked: Asked, fresh: boolean) => {
    let { org } = asked;
    let t = tenant(database.db, org.id);
    let product = await products.find(t, asked.checkId, org.slug, fresh);
    if (!product) {
      organisations.forget(org.slug);
      const found = await organisations.find(database.db, org.slug);
      if (!found) throw notFound(`no organisation "${org.slug}"`);
      if (found.id !== org.id) {
        org = found;
        t = tenant(database.db, org.id);
        product = await products.find(t, asked.checkId, org.slug, true);
      }
    }
    return { org, t, product };
  };

  const gate = (route: GateName, work: (scope: CheckScope, body: never, asked: Asked) => Promise<unknown>): CheckGate => {
    /** What refuses this request on this product, without the rate limit: 401, then 403, then 404 for fetch. */
    const refusalOf = (product: CheckProduct | undefined, secret: string): ApiError | null => {
      if (!product?.tokenHash || !tokens.matches(product.tokenHash, secret)) return unauthorized('unknown or replaced check token');
      if (!product.active) return forbidden('the product is inactive');
      if (route === 'fetch' && !product.fetchEnabled) return notFound('licence fetch is not enabled for this product');
      return null;
    };

    /**
     * The product's refusals in their order (the per-product limit counted on the first pass only),
     * each given on the product as it is: one found on a cached product is judged again on a fresh read.
     */
    const admitOn = async (asked: Asked, secret: string, now: number, firstPass: boolean): Promise<CheckScope> => {
      let fresh = !firstPass;
      let { org, t, product } = await productOf(asked, fresh);
      let refusal = refusalOf(product, secret);
      if (refusal && !fresh) {
        ({ org, t, product } = await productOf(asked, (fresh = true)));
        refusal = refusalOf(product, secret);
      }
      if (refusal?.status === 401) throw refusal;
      if (firstPass) {
        // Counted only once the token verified, so nobody without it can exhaust the product's limit.
        const perProduct = await limiter.hit(`product:${product!.id}`, config.checkRateProduct, now);
        if (!perProduct.allowed) throw tooManyRequests('too many checks for this product', perProduct.retryAfterSeconds);
      }
      if (refusal) throw refusal;
      return { database, org, tenant: t, product: product!, confirmed: fresh, actor: CHECKS, now, writes, verified, fingerprints, reads };
    };

    return {
      async admit(asked) {
        const now = Date.now();
        const perAddress = await limiter.hit(`address:${asked.ip}`, config.checkRateAddress, now);
        if (!perAddress.allowed) throw tooManyRequests('too many checks from this address', perAddress.retryAfterSeconds);
        const match = CHECK_TOKEN.exec(asked.authorization ?? '');
        if (!match || match[1] !== asked.checkId) throw unauthorized(`send this product's check token: Authorization: Bearer svcc_${asked.checkId}_<secret>`);
        const scope = await admitOn(asked, match[2]!, now, true);
        if (!isJson(asked.contentType)) throw new ApiError(415, 'unsupported content type: send application/json');
        return scope;
      },
      async serve(asked, scope, body) {
        try {
          return await work(scope, body, asked);
        } catch (err) {
          if (!(err instanceof StaleProduct)) throw err;
          const again = await admitOn({ ...asked, org: scope.org }, CHECK_TOKEN.exec(asked.authorization!)![2]!, scope.now, false);
          return work(again, body, asked);
        }
      },
    };
  };

  return {
    check: gate('check', async (scope, body) => {
      const answer = await checkLicence(scope, body);
      writes.count(scope.org.id, scope.now);
      return answer;
    }),
    fetch: gate('fetch', fetchLicence),
    release: gate('release', releaseOwnSeat),
    borrow: gate('borrow', borrowLease),
    // Never counted among the checks per day (DESIGN.md 19).
    usage: gate(
      'usage',
      recordUsage(
        { limiter, ratePerLicence: config.usageRateLicence, idsPerPeriod: config.usageIdsPerPeriod, counters: usageCounters },
        new UsageCommits(database.dialect),
      ),
    ),
    // DESIGN.md 18: trial requests count towards the check's rate limits, as checks.
    trial: gate('trial', (scope, body: TrialRequest, asked) => startTrial(scope, body, asked.ip, keyring, countTrial)),
    // DESIGN.md 20: the check's credential and refusals, counting towards its rate limits.
    download: gate('download', grant),
    'feed-token': gate('feed-token', feedToken),
  };
}
