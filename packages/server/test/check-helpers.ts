// Shared by the check-*.test.ts API tests: a product with a check token, licences, and checks.
import { createPublicKey, randomBytes } from 'node:crypto';
import { fpDigest, verifyReceipt, type ReceiptTag } from '@licensor/protocol';
import type { Caller, Harness, Response } from './harness.js';
import { createProduct, fingerprint, issueOk } from './licence-helpers.js';

export interface CheckedProduct {
  id: number;
  checkId: string;
  token: string;
  publicKeyPem: string;
  algorithm: string;
  /** POSTs to `.../check` (or `.../fetch`) with this product's token. */
  check(body: unknown, headers?: Record<string, string>): Promise<Response>;
  fetch(body: unknown, headers?: Record<string, string>): Promise<Response>;
  /** POSTs to `.../release` and `.../borrow`. */
  release(body: unknown): Promise<Response>;
  borrow(body: unknown): Promise<Response>;
  /** POSTs to `.../usage` (DESIGN.md 19). */
  usage(body: unknown): Promise<Response>;
  /** Issues an ONLINE licence (one seat unless said otherwise) and returns it. */
  issue(body?: Record<string, unknown>): Promise<any>;
}

/** An ONLINE product (all types allowed) with its check token rotated in. */
export async function checkedProduct(h: Harness, body: Record<string, unknown> = {}, admin: Caller = h.admin, slug = h.slug): Promise<CheckedProduct> {
  const product = await createProduct(admin, { licenceType: 'ONLINE', allowedLicenceTypes: ['OFFLINE', 'ONLINE', 'HYBRID'], ...body });
  const rotated = await admin('POST', `/products/${product.id}/check-token`);
  if (rotated.statusCode !== 200) throw new Error(`rotation failed: ${rotated.body}`);
  const caller = h.as({ token: rotated.data.checkToken }, slug);
  return {
    id: product.id,
    checkId: product.checkId,
    token: rotated.data.checkToken,
    publicKeyPem: product.publicKeyPem,
    algorithm: product.algorithm,
    check: (b, headers) => caller('POST', `/public/license/${product.checkId}/check`, b, headers),
    fetch: (b, headers) => caller('POST', `/public/license/${product.checkId}/fetch`, b, headers),
    release: (b) => caller('POST', `/public/license/${product.checkId}/release`, b),
    borrow: (b) => caller('POST', `/public/license/${product.checkId}/borrow`, b),
    usage: (b) => caller('POST', `/public/license/${product.checkId}/usage`, b),
    issue: (b = {}) => issueOk(admin, { productId: product.id, licensee: 'Check Ltd', ...b }),
  };
}

export const nonce = () => randomBytes(18).toString('base64url');

/** A check body for a licence and a machine label. */
export const checkBody = (license: string, machine: string | number) => ({ license, fingerprint: fingerprint(machine), nonce: nonce() });

/** True when the answer's receipt verifies over its own fields with the given public key (SVCR2: `leaseEndsAt` too). */
export function receiptVerifies(answer: any, fingerprintSent: string, publicKeyPem: string, tag: ReceiptTag = 'SVCR1'): boolean {
  return verifyReceipt(
    {
      lid: answer.lid,
      status: answer.status ?? '',
      nonce: answer.nonce,
      checkedAt: answer.checkedAt,
      boundAt: answer.boundAt ?? '',
      fpDigest: fpDigest(fingerprintSent),
      ...(tag === 'SVCR2' ? { leaseEndsAt: answer.leaseEndsAt ?? '' } : {}),
    },
    answer.receipt,
    [createPublicKey(publicKeyPem)],
    tag,
  );
}
