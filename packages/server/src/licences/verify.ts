import {
  ALGORITHM_INFO,
  MalformedError,
  calendarStatus,
  graceEndsAt,
  parseLicence,
  verifyLicence,
  type Algorithm,
  type ParsedLicence,
} from '@licensor/protocol';
import type { Ctx } from '../core/context.js';
import { iso } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { findProductByKey } from '../products/repo.js';
import { statusOf } from '../listings/repos/views.js';
import { licenceByLid } from './repo.js';

const unchecked = { signature: 'UNCHECKED', signatureAlgorithm: null, expiry: null } as const;

/** ASCII whitespace (WHATWG's: tab, line feed, form feed, carriage return, space) and the vertical tab. */
const ASCII_WHITESPACE = /[\t\n\v\f\r ]/g;

/**
 * Judges a licence string the way a customer's application would: signature and calendar
 * only. The ledger is context beside the verdict and never changes it. A person pastes what a
 * customer sent, often wrapped by an email client: whitespace, which a signed string never
 * contains, is removed first and the answer says so (the SDKs' `verify` stays strict).
 */
export async function verifyLicenceString(ctx: Ctx, keyring: Keyring, pasted: string) {
  const text = pasted.replace(ASCII_WHITESPACE, '');
  return { whitespaceRemoved: text !== pasted, ...(await judge(ctx, keyring, text)) };
}

async function judge(ctx: Ctx, keyring: Keyring, text: string) {
  let parsed: ParsedLicence;
  try {
    parsed = parseLicence(text);
  } catch (err) {
    if (!(err instanceof MalformedError)) throw err;
    return { valid: false, reason: 'MALFORMED', claims: null, product: null, ...unchecked, ledger: { known: false } };
  }
  const claims = parsed.claims as Record<string, unknown> & typeof parsed.claims;
  const ledger = await ledgerFor(ctx, claims.lid, text);
  const product = await findProductByKey(ctx.tenant, claims.prd);
  if (!product) return { valid: false, reason: 'UNKNOWN_PRODUCT', claims, product: null, ...unchecked, ledger };

  const keys = await keyring.keysFor(ctx.tenant, product.id);
  const verified =
    verifyLicence(
      parsed,
      keys.map((k) => k.publicKey),
    ) !== null;
  const status = calendarStatus(claims, Math.floor(ctx.now / 1000));
  const graceEnd = graceEndsAt(claims.exp, claims.grace);
  const reason = !verified ? 'BAD_SIGNATURE' : status === 'PENDING' ? 'NOT_YET_VALID' : status === 'EXPIRED' ? 'EXPIRED' : null;
  return {
    valid: reason === null,
    reason,
    claims,
    product: { id: product.id, productKey: product.product_key, name: product.name },
    signature: verified ? 'VALID' : 'INVALID',
    signatureAlgorithm: ALGORITHM_INFO[product.algorithm as Algorithm].signatureAlgorithm,
    expiry: {
      expiresAt: claims.exp === undefined ? null : iso(claims.exp * 1000),
      graceEndsAt: graceEnd === null ? null : iso(graceEnd * 1000),
      status,
    },
    ledger,
  };
}

/** A term is identified by its payload part (DESIGN.md 2). */
const payloadPart = (licenceString: string) => licenceString.slice(0, licenceString.indexOf('.'));

async function ledgerFor(ctx: Ctx, lid: string, text: string) {
  const row = await licenceByLid(ctx.tenant, lid);
  if (!row) return { known: false };
  const superseded = payloadPart(row.licence_string) !== payloadPart(text);
  return {
    known: true,
    lid: row.lid,
    licensee: row.licensee,
    customerId: row.customer_id,
    status: statusOf(row, ctx.now),
    revoked: row.revoked === 1,
    archived: row.archived === 1,
    superseded,
    ...(superseded ? { currentExpiresAt: iso(row.expires_at) } : {}),
  };
}
