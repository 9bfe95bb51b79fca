import type { KeyObject } from 'node:crypto';
import { b64uDecode } from './encoding.js';
import { signBytes, verifyBytes } from './signing.js';

/** One meter's signed balance in a usage answer (DESIGN.md 19); null for none. */
export interface UsageReceiptMeter {
  key: string;
  used: number;
  limit: number | null;
  overage: number | null;
  remaining: number | null;
  resetsAt: string | null;
}

/** The signed fields of a usage answer, as the exact strings and integers of the response. */
export interface UsageReceiptFields {
  lid: string;
  /** Empty for an unknown licence. */
  status: string;
  nonce: string;
  checkedAt: string;
  /** Empty when this machine holds no seat. */
  boundAt: string;
  fpDigest: string;
  events: ReadonlyArray<{ id: string; result: string }>;
  meters: readonly UsageReceiptMeter[];
}

const SEPARATOR = '\x1f';

function text(value: string | null, name: string): string {
  const field = value ?? '';
  if (typeof field !== 'string') throw new TypeError(`usage receipt field "${name}" must be a string`);
  // A separator inside a field would let two answers sign alike; every field is ASCII.
  if (!/^[\x20-\x7e]*$/.test(field)) throw new TypeError(`usage receipt field "${name}" must be printable ASCII`);
  return field;
}

/** An integer as the service writes it: decimal digits, no sign, fraction or exponent. */
function integer(value: number | null, name: string): string {
  if (value === null) return '';
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`usage receipt field "${name}" must be an integer of at least 0`);
  return String(value);
}

/**
 * UTF-8 of `SVCU1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest␟E␟(id␟result)×E␟M␟(key␟used␟limit␟
 * overage␟remaining␟resetsAt)×M` (DESIGN.md 19): n fields, n − 1 separators, so an empty last
 * field ends the text in 0x1F. Throws for a field that is not printable ASCII or a negative,
 * fractional or unsafe integer.
 */
export function usageReceiptMessage(fields: UsageReceiptFields): Buffer {
  const parts = [
    'SVCU1',
    ...(['lid', 'status', 'nonce', 'checkedAt', 'boundAt', 'fpDigest'] as const).map((name) => text(fields[name], name)),
    String(fields.events.length),
  ];
  for (const [i, event] of fields.events.entries()) parts.push(text(event.id, `events[${i}].id`), text(event.result, `events[${i}].result`));
  parts.push(String(fields.meters.length));
  for (const [i, meter] of fields.meters.entries()) {
    const at = `meters[${i}]`;
    parts.push(
      text(meter.key, `${at}.key`),
      integer(meter.used, `${at}.used`),
      integer(meter.limit, `${at}.limit`),
      integer(meter.overage, `${at}.overage`),
      integer(meter.remaining, `${at}.remaining`),
      text(meter.resetsAt, `${at}.resetsAt`),
    );
  }
  return Buffer.from(parts.join(SEPARATOR), 'utf8');
}

/** Base64url signature over the usage receipt message, with the key that signed the presented licence. */
export function signUsageReceipt(fields: UsageReceiptFields, privateKey: KeyObject): string {
  return signBytes(privateKey, usageReceiptMessage(fields)).toString('base64url');
}

/** True when one of the keys signed exactly these fields; false for anything malformed. */
export function verifyUsageReceipt(fields: UsageReceiptFields, receipt: string, publicKeys: readonly KeyObject[]): boolean {
  let message: Buffer;
  let signature: Buffer;
  try {
    message = usageReceiptMessage(fields);
    signature = b64uDecode(receipt, 'receipt');
  } catch {
    return false;
  }
  return publicKeys.some((key) => verifyBytes(key, message, signature));
}
