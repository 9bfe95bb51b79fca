import { createHmac, timingSafeEqual } from 'node:crypto';

/** The payment providers a connection can belong to (DESIGN 22). */
export type Provider = 'stripe' | 'paddle';

/** How far a signed timestamp may be from the service's clock, either way. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** The header each provider signs its deliveries with (lowercase, as Node presents headers). */
export const SIGNATURE_HEADER: Record<Provider, string> = {
  stripe: 'stripe-signature',
  paddle: 'paddle-signature',
};

/** Why a delivery's signature was refused: `lastFailure` on the connection (DESIGN 22). */
export type SignatureFailure = 'SIGNATURE' | 'TIMESTAMP';

export type SignatureVerdict = { ok: true; timestamp: number } | { ok: false; failure: SignatureFailure; reason: string };

/** Each scheme: the header's separator between parts, its timestamp and signature keys, and the
 * character between the timestamp and the body in the signed text. */
const SCHEMES: Record<Provider, { separator: string; timestampKey: string; signatureKey: string; joiner: string }> = {
  stripe: { separator: ',', timestampKey: 't', signatureKey: 'v1', joiner: '.' },
  paddle: { separator: ';', timestampKey: 'ts', signatureKey: 'h1', joiner: ':' },
};

const HEX_SHA256 = /^[0-9a-f]{64}$/;
const UNIX_SECONDS = /^[0-9]{1,12}$/;

/**
 * Checks a provider's signature header against the raw body, as DESIGN 22 says, with one verifier
 * for both schemes: Stripe `t=<s>,v1=<hex>[,v1=…]` over `t.body`, Paddle `ts=<s>;h1=<hex>[;h1=…]`
 * over `ts:body`; HMAC-SHA256 keyed with the UTF-8 bytes of the whole secret; any listed signature
 * may match (a secret being rolled); compared in constant time; other schemes ignored; the
 * timestamp within 300 s of `nowSeconds` either way. The reasons never carry the secret or a digest.
 */
export function verifySignature(provider: Provider, header: string | undefined, rawBody: Buffer, secret: string, nowSeconds: number): SignatureVerdict {
  const scheme = SCHEMES[provider];
  if (header === undefined || header.length === 0 || header.length > 4096) {
    return { ok: false, failure: 'SIGNATURE', reason: 'the signature header is missing' };
  }
  let timestamp: string | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(scheme.separator)) {
    const at = part.indexOf('=');
    if (at <= 0) return { ok: false, failure: 'SIGNATURE', reason: 'the signature header is malformed' };
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === scheme.timestampKey) {
      if (timestamp !== undefined || !UNIX_SECONDS.test(value)) return { ok: false, failure: 'SIGNATURE', reason: 'the signature header is malformed' };
      timestamp = value;
    } else if (key === scheme.signatureKey) {
      // A signature that is not lowercase hex of 32 bytes cannot match; it is skipped, not fatal.
      if (HEX_SHA256.test(value)) signatures.push(Buffer.from(value, 'hex'));
    }
  }
  if (timestamp === undefined) return { ok: false, failure: 'SIGNATURE', reason: 'the signature header has no timestamp' };
  if (signatures.length === 0) return { ok: false, failure: 'SIGNATURE', reason: 'the signature header has no signature in a known scheme' };

  const expected = createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.from(`${timestamp}${scheme.joiner}`, 'ascii'))
    .update(rawBody)
    .digest();
  let matched = false;
  // Every listed signature is compared (no early exit), each in constant time.
  for (const signature of signatures) {
    if (timingSafeEqual(signature, expected)) matched = true;
  }
  if (!matched) return { ok: false, failure: 'SIGNATURE', reason: 'no signature matches the body' };

  const seconds = Number(timestamp);
  if (Math.abs(nowSeconds - seconds) > SIGNATURE_TOLERANCE_SECONDS) {
    return { ok: false, failure: 'TIMESTAMP', reason: 'the signature timestamp is more than 300 seconds from the service clock' };
  }
  return { ok: true, timestamp: seconds };
}
