// Shared by the trials*.test.ts API tests: a product offering trials, and trial starts.
import { randomBytes } from 'node:crypto';
import { buildFingerprint, parseLicence } from '@licensor/protocol';
import type { Caller, Harness, Response } from './harness.js';
import { checkedProduct, nonce, type CheckedProduct } from './check-helpers.js';

export interface TrialProduct extends CheckedProduct {
  /** POSTs to `.../trial` with this product's token, from `address` (the harness trusts X-Forwarded-For). */
  start(body: Record<string, unknown>, address?: string): Promise<Response>;
}

/** An ONLINE product offering 14-day trials without limits unless `body` says otherwise, its check token rotated in. */
export async function trialProduct(h: Harness, body: Record<string, unknown> = {}, admin: Caller = h.admin, slug = h.slug): Promise<TrialProduct> {
  const product = await checkedProduct(h, { trialDays: 14, trialAddressDailyLimit: null, ...body }, admin, slug);
  const caller = h.as({ token: product.token }, slug);
  return {
    ...product,
    start: (b, address = '192.0.2.1') => caller('POST', `/public/license/${product.checkId}/trial`, b, { 'x-forwarded-for': address }),
  };
}

/** A machine's fingerprint from its five raw components (each `<name>-<label>` unless given). */
export const machine = (label: string, given: Partial<Record<'machine' | 'host' | 'mac' | 'cpu' | 'disk', string | null>> = {}) =>
  buildFingerprint({ machine: `machine-${label}`, host: `host-${label}`, mac: `mac-${label}`, cpu: `cpu-${label}`, disk: `disk-${label}`, ...given });

/** An installation's device key: base64url of 32 random bytes. */
export const deviceKey = () => randomBytes(32).toString('base64url');

/** A start body for a fingerprint, with a fresh nonce and device key. */
export const startBody = (fingerprint: string, extra: Record<string, unknown> = {}) => ({
  fingerprint,
  nonce: nonce(),
  devicePublicKey: deviceKey(),
  ...extra,
});

export const claimsOf = (license: string) => parseLicence(license).claims;
