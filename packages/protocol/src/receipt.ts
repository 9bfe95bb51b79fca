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
}

const TAG = 'SVCR1';
const SEPARATOR = '\x1f';
const ORDER = ['lid', 'status', 'nonce', 'checkedAt', 'boundAt', 'fpDigest'] as const;

/**
 * UTF-8 of `SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest`; an absent field is the
 * empty string. A field holding the separator would make two field sets sign alike, so it throws.
 */
export function receiptMessage(fields: ReceiptFields): Buffer {
  let text = TAG;
  for (const name of ORDER) {
    const value = fields[name] ?? '';
    if (typeof value !== 'string') throw new TypeError(`receipt field "${name}" must be a string`);
    if (value.includes(SEPARATOR)) throw new TypeError(`receipt field "${name}" contains the separator 0x1F`);
    text += SEPARATOR + value;
  }
  return Buffer.from(text, 'utf8');
}

/** Base64url signature over the receipt message, with the key that signed the presented licence. */
export function signReceipt(fields: ReceiptFields, privateKey: KeyObject): string {
  return signBytes(privateKey, receiptMessage(fields)).toString('base64url');
}

/** True when one of the keys signed exactly these fields; false for anything malformed. */
export function verifyReceipt(fields: ReceiptFields, receipt: string, publicKeys: readonly KeyObject[]): boolean {
  let message: Buffer;
  let signature: Buffer;
  try {
    message = receiptMessage(fields);
    signature = b64uDecode(receipt, 'receipt');
  } catch {
    return false;
  }
  return publicKeys.some((key) => verifyBytes(key, message, signature));
}

/**
 * The verdict a client derives from signed fields alone (`valid` and `reason` are unsigned):
 * licensed on this machine exactly when the status is ACTIVE or GRACE and a seat is bound.
 */
export function receiptGrantsLicence(fields: Pick<ReceiptFields, 'status' | 'boundAt'>): boolean {
  return (fields.status === 'ACTIVE' || fields.status === 'GRACE') && typeof fields.boundAt === 'string' && fields.boundAt !== '';
}
