import type { KeyObject } from 'node:crypto';
import { b64uDecode } from './encoding.js';
import { signBytes, verifyBytes } from './signing.js';

/** The signed fields of a check answer, as the exact strings of the response. */
export interface ReceiptFields {
  lid?: string | null;
  status?: string | null;
  nonce?: string | null;
  checkedAt?: string | null;
  boundAt?: string | null;
  fpDigest?: string | null;
  /** Signed by SVCR2 only (floating licences, DESIGN.md 13). */
  leaseEndsAt?: string | null;
}

/** SVCR1 for a presented term of `v` 3 or 4; SVCR2 (which signs `leaseEndsAt`) for `v` 5. */
export type ReceiptTag = 'SVCR1' | 'SVCR2';

/**
 * The tag a receipt is signed and verified under: the presented term's `v` alone decides
 * (DESIGN.md 13), never the answer's fields, a cache entry or the product's seat model.
 */
export function receiptTagOf(claims: { readonly v: number }): ReceiptTag {
  return claims.v === 5 ? 'SVCR2' : 'SVCR1';
}

const SEPARATOR = '\x1f';
const ORDER = ['lid', 'status', 'nonce', 'checkedAt', 'boundAt', 'fpDigest'] as const;

function fieldText(fields: ReceiptFields, name: keyof ReceiptFields): string {
  const value = fields[name] ?? '';
  if (typeof value !== 'string') throw new TypeError(`receipt field "${name}" must be a string`);
  if (value.includes(SEPARATOR)) throw new TypeError(`receipt field "${name}" contains the separator 0x1F`);
  return value;
}

/**
 * UTF-8 of `SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest`, or for SVCR2 the same with
 * `␟leaseEndsAt` appended; an absent field is the empty string. A field holding the separator
 * would make two field sets sign alike, so it throws; so does a lease end under SVCR1, which
 * cannot vouch for it.
 */
export function receiptMessage(fields: ReceiptFields, tag: ReceiptTag = 'SVCR1'): Buffer {
  let text: string = tag;
  for (const name of ORDER) text += SEPARATOR + fieldText(fields, name);
  const leaseEndsAt = fieldText(fields, 'leaseEndsAt');
  if (tag === 'SVCR2') text += SEPARATOR + leaseEndsAt;
  else if (tag !== 'SVCR1') throw new TypeError(`unknown receipt tag "${String(tag)}"`);
  else if (leaseEndsAt !== '') throw new TypeError('an SVCR1 receipt does not sign "leaseEndsAt"');
  return Buffer.from(text, 'utf8');
}

/** Base64url signature over the receipt message, with the key that signed the presented licence. */
export function signReceipt(fields: ReceiptFields, privateKey: KeyObject, tag: ReceiptTag = 'SVCR1'): string {
  return signBytes(privateKey, receiptMessage(fields, tag)).toString('base64url');
}

/** True when one of the keys signed exactly these fields under this tag; false for anything malformed. */
export function verifyReceipt(fields: ReceiptFields, receipt: string, publicKeys: readonly KeyObject[], tag: ReceiptTag = 'SVCR1'): boolean {
  let message: Buffer;
  let signature: Buffer;
  try {
    message = receiptMessage(fields, tag);
    signature = b64uDecode(receipt, 'receipt');
  } catch {
    return false;
  }
  return publicKeys.some((key) => verifyBytes(key, message, signature));
}

/**
 * The verdict a client derives from signed fields alone (`valid` and `reason` are unsigned):
 * licensed on this machine exactly when the status is ACTIVE or GRACE and a seat is bound; under
 * SVCR2 a lease end must be signed too (and the lease counts only until then, which is the
 * caller's to judge against its clock).
 */
export function receiptGrantsLicence(fields: Pick<ReceiptFields, 'status' | 'boundAt' | 'leaseEndsAt'>, tag: ReceiptTag = 'SVCR1'): boolean {
  const filled = (value: string | null | undefined) => typeof value === 'string' && value !== '';
  return (fields.status === 'ACTIVE' || fields.status === 'GRACE') && filled(fields.boundAt) && (tag === 'SVCR1' || filled(fields.leaseEndsAt));
}

/** The fields SVCU1 signs for one usage event and one meter, as the usage answer gives them (DESIGN.md 19). */
export interface UsageReceiptFields {
  lid: string;
  status?: string | null;
  nonce: string;
  checkedAt: string;
  boundAt?: string | null;
  fpDigest: string;
  events: ReadonlyArray<{ id: string; result: string }>;
  meters: ReadonlyArray<{
    key: string;
    used: number | string;
    limit: number | string | null;
    overage: number | string | null;
    remaining: number | string | null;
    resetsAt: string | null;
  }>;
}

/** An integer field of SVCU1: the decimal digits of its JSON number as answered (a string is taken as those digits). */
const usageInteger = (value: number | string | null | undefined): string => {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' && !Number.isSafeInteger(value)) throw new TypeError('SVCU1 signs integers only');
  return String(value);
};

/**
 * UTF-8 of `SVCU1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest␟E␟(id␟result)…␟M␟(key␟used␟limit␟overage␟remaining␟resetsAt)…`,
 * E and M the counts, absent or null fields empty (DESIGN.md 19).
 */
export function usageReceiptMessage(fields: UsageReceiptFields): Buffer {
  const parts: string[] = ['SVCU1'];
  const text = (name: string, value: string | null | undefined) => {
    const v = value ?? '';
    if (typeof v !== 'string') throw new TypeError(`receipt field "${name}" must be a string`);
    if (v.includes(SEPARATOR)) throw new TypeError(`receipt field "${name}" contains the separator 0x1F`);
    parts.push(v);
  };
  text('lid', fields.lid);
  text('status', fields.status);
  text('nonce', fields.nonce);
  text('checkedAt', fields.checkedAt);
  text('boundAt', fields.boundAt);
  text('fpDigest', fields.fpDigest);
  parts.push(String(fields.events.length));
  for (const event of fields.events) {
    text('id', event.id);
    text('result', event.result);
  }
  parts.push(String(fields.meters.length));
  for (const meter of fields.meters) {
    text('key', meter.key);
    parts.push(usageInteger(meter.used), usageInteger(meter.limit), usageInteger(meter.overage), usageInteger(meter.remaining));
    text('resetsAt', meter.resetsAt);
  }
  return Buffer.from(parts.join(SEPARATOR), 'utf8');
}

/** True when one of the keys signed exactly these SVCU1 fields; false for anything malformed. */
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
