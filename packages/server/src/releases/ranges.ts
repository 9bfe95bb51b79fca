import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';

/**
 * Range delivery of DESIGN section 20: one satisfiable range 206, one unsatisfiable 416, 2 to 1,000
 * satisfiable ranges in ascending order without overlap 206 multipart/byteranges (electron-updater's
 * batch), any other Range header (malformed, more, overlapping, out of order) the whole file, as
 * RFC 9110 allows.
 */

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export type RangePlan = { kind: 'whole' } | { kind: 'unsatisfiable' } | { kind: 'single'; range: ByteRange } | { kind: 'multi'; ranges: ByteRange[] };

export const MAX_RANGES = 1000;
/** A Range header longer than this (1,000 ranges of two 16-digit numbers and a separator) is no batch we serve. */
const MAX_HEADER_LENGTH = 40_000;
const SPEC = /^(?:(\d{1,20})-(\d{0,20})|-(\d{1,20}))$/;

type Parsed = ByteRange | 'unsatisfiable';

function parseOne(spec: string, size: number): Parsed | null {
  const match = SPEC.exec(spec);
  if (!match) return null;
  const [, first, last, suffix] = match;
  if (suffix !== undefined) {
    const length = Number(suffix);
    if (length === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  if (last !== undefined && last !== '') {
    const end = Number(last);
    if (end < start) return null;
    if (start >= size) return 'unsatisfiable';
    return { start, end: Math.min(end, size - 1) };
  }
  if (start >= size) return 'unsatisfiable';
  return { start, end: size - 1 };
}

/** What to answer for a GET with this Range header (undefined: none) on a file of `size` bytes. */
export function planRanges(header: string | undefined, size: number): RangePlan {
  if (header === undefined || header.length > MAX_HEADER_LENGTH) return { kind: 'whole' };
  const eq = header.indexOf('=');
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== 'bytes') return { kind: 'whole' };
  const specs = header
    .slice(eq + 1)
    .split(',')
    .map((s) => s.trim());
  if (specs.length < 1 || specs.length > MAX_RANGES) return { kind: 'whole' };
  const parsed: Parsed[] = [];
  for (const spec of specs) {
    const one = parseOne(spec, size);
    if (one === null) return { kind: 'whole' };
    parsed.push(one);
  }
  if (parsed.length === 1) {
    const only = parsed[0] as Parsed;
    return only === 'unsatisfiable' ? { kind: 'unsatisfiable' } : { kind: 'single', range: only };
  }
  const ranges: ByteRange[] = [];
  for (const one of parsed) {
    if (one === 'unsatisfiable') return { kind: 'whole' };
    const before = ranges[ranges.length - 1];
    if (before && one.start <= before.end) return { kind: 'whole' };
    ranges.push(one);
  }
  return { kind: 'multi', ranges };
}

export function contentRange(range: ByteRange, size: number): string {
  return `bytes ${range.start}-${range.end}/${size}`;
}

/** Percent-encodes the UTF-8 bytes outside RFC 3986's unreserved set, in uppercase hex. */
export function encodeFilename(filename: string): string {
  let out = '';
  for (const byte of Buffer.from(filename, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9._~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The filename rule of section 20 admits no quote or backslash, so it goes into the header as it is. */
export interface Multipart {
  contentType: string;
  length: number;
  /** Streams the parts, reading each range with `read` one after another (never the whole file at once). */
  body(read: (range: ByteRange) => Readable): Readable;
}

export function multipart(ranges: ByteRange[], size: number, partType: string, boundary = randomBytes(16).toString('hex')): Multipart {
  const heads = ranges.map(
    (range, i) => `${i === 0 ? '' : '\r\n'}--${boundary}\r\nContent-Type: ${partType}\r\nContent-Range: ${contentRange(range, size)}\r\n\r\n`,
  );
  const tail = `\r\n--${boundary}--\r\n`;
  const length = heads.reduce((sum, head) => sum + Buffer.byteLength(head), 0) + ranges.reduce((sum, r) => sum + (r.end - r.start + 1), 0) + tail.length;
  return {
    contentType: `multipart/byteranges; boundary=${boundary}`,
    length,
    body(read) {
      const out = new PassThrough();
      (async () => {
        for (const [i, range] of ranges.entries()) {
          if (!out.write(heads[i])) await new Promise((resolve) => out.once('drain', resolve));
          for await (const chunk of read(range)) {
            if (!out.write(chunk)) await new Promise((resolve) => out.once('drain', resolve));
          }
        }
        out.end(tail);
      })().catch((error: unknown) => out.destroy(error instanceof Error ? error : new Error(String(error))));
      return out;
    },
  };
}
