/**
 * ECDSA signatures in their two encodings: raw r‖s (PKCS#11 tokens, WebCrypto) and the DER
 * SEQUENCE of two INTEGERs (node:crypto, the JDK, licence strings and receipts).
 */

function derLength(length: number): Buffer {
  return length < 0x80 ? Buffer.from([length]) : Buffer.from([0x81, length]);
}

function derInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  let value = bytes.subarray(start);
  // A set high bit would read as negative.
  if (value[0]! & 0x80) value = Buffer.concat([Buffer.from([0]), value]);
  return Buffer.concat([Buffer.from([0x02]), derLength(value.length), value]);
}

export function rawToDer(raw: Buffer): Buffer {
  const half = raw.length / 2;
  const body = Buffer.concat([derInteger(raw.subarray(0, half)), derInteger(raw.subarray(half))]);
  return Buffer.concat([Buffer.from([0x30]), derLength(body.length), body]);
}

/** The raw r‖s of a DER signature whose integers are `size` bytes long (32 for P-256, 48 for P-384). */
export function derToRaw(der: Buffer, size: number): Buffer {
  let offset = der[1]! & 0x80 ? 2 + (der[1]! & 0x7f) : 2;
  const raw = Buffer.alloc(2 * size);
  for (let i = 0; i < 2; i++) {
    const length = der[offset + 1]!;
    const value = der.subarray(offset + 2, offset + 2 + length);
    const trimmed = value.length > size ? value.subarray(value.length - size) : value;
    trimmed.copy(raw, (i + 1) * size - trimmed.length);
    offset += 2 + length;
  }
  return raw;
}
