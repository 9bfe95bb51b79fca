import type { Tenant } from '../db/tenant.js';
import { ApiError, badRequest, invalid } from '../core/errors.js';
import { resolveParams, updatesMonthsOf } from '../licences/terms.js';
import { findProductRow } from '../products/repo.js';
import { licenceMeters, shapeOf } from '../products/shape.js';
import type { MappingInput } from './schemas.js';
import type { Provider } from './signature.js';

/** The ids a mapping's `match` may name, by provider (DESIGN.md 22). */
const MATCH: Record<Provider, RegExp> = {
  stripe: /^(price|plink)_[A-Za-z0-9]{1,250}$/,
  paddle: /^pri_[A-Za-z0-9]{1,250}$/,
};

/**
 * Judges a field as the issue would, naming it inside the mapping: an issue's refusal
 * "Parameters "seats" (params.seats): …" becomes "… (mappings[2].params.seats): …".
 */
function within<T>(field: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 400) throw err;
    const named = err.message.replace(/\(([A-Za-z][\w.[\]"-]*)\):/, `(${field}.$1):`);
    throw badRequest(named === err.message ? `${field}: ${err.message}` : named);
  }
}

/**
 * Checks every mapping as an issue would check it (DESIGN.md 22), a refusal naming
 * `mappings[i].<field>`; answers them as saved.
 */
export async function checkMappings(t: Tenant, provider: Provider, mappings: MappingInput[]): Promise<MappingInput[]> {
  const seen = new Set<string>();
  for (const [i, mapping] of mappings.entries()) {
    const at = `mappings[${i}]`;
    if (!MATCH[provider].test(mapping.match)) {
      const ids = provider === 'stripe' ? 'a Stripe price (price_…) or Payment Link (plink_…) id' : 'a Paddle price id (pri_…)';
      throw invalid(`${at}.match`, `must be ${ids}: the prefix then 1 to 250 letters and digits`);
    }
    if (seen.has(mapping.match)) throw invalid(`${at}.match`, `${mapping.match} is mapped twice`);
    seen.add(mapping.match);
    const row = await findProductRow(t, mapping.productId);
    if (!row) throw invalid(`${at}.productId`, `no product ${mapping.productId} in this organisation`);
    const shape = shapeOf(row);
    const licenceType = mapping.licenceType ?? shape.licenceType;
    if (!shape.allowedLicenceTypes.includes(licenceType)) {
      throw invalid(`${at}.licenceType`, `${licenceType} is not allowed for this product (allowed: ${shape.allowedLicenceTypes.join(', ')})`);
    }
    if (shape.seatModel === 'FLOATING' && licenceType !== 'ONLINE') throw invalid(`${at}.licenceType`, 'a FLOATING product issues ONLINE licences');
    if (mapping.match.startsWith('plink_') && (mapping.validityMonths ?? null) === null) {
      throw invalid(`${at}.validityMonths`, 'a Payment Link has no subscription to follow: give a number of months');
    }
    within(at, () => resolveParams(shape.params, mapping.params ?? {}));
    within(at, () => licenceMeters(shape.meters, [], mapping.meters ?? undefined, licenceType === 'OFFLINE'));
    if (mapping.updatesMonths !== undefined) within(at, () => updatesMonthsOf(mapping.updatesMonths, shape.updatesMonths, shape.params));
  }
  return mappings;
}
