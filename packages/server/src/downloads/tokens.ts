import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Path tokens of DESIGN section 20: the download grant (SVCG1) and the feed token (SVCF1).
 * `SVCx1.<B64U(JSON)>.<B64U(HMAC-SHA256(K, ASCII of the first two parts))>` with
 * K = HKDF-SHA256(master key bytes, empty salt, info, 32 bytes). The MAC is checked in constant time
 * before anything else is looked at, and the JSON must be byte-equal to its exact form.
 */

export interface Grant {
  art: number;
  lid: string;
  exp: number;
}

export interface FeedToken {
  lid: string;
  mid: number | null;
  gen: number;
}

const GRANT_INFO = 'licensor download grant v1';
const FEED_INFO = 'licensor feed token v1';
const GRANT_PREFIX = 'SVCG1';
const FEED_PREFIX = 'SVCF1';
/** A path segment longer than this is no token of ours (the JSON is < 200 bytes). */
const MAX_TOKEN_LENGTH = 512;
const B64U = /^[A-Za-z0-9_-]+$/;
const LID = /^[A-Za-z0-9-]{1,64}$/;

export function tokenKey(masterKey: Buffer, kind: 'grant' | 'feed'): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), kind === 'grant' ? GRANT_INFO : FEED_INFO, 32));
}

function mac(key: Buffer, signed: string): Buffer {
  return createHmac('sha256', key).update(signed, 'ascii').digest();
}

function make(key: Buffer, prefix: string, json: string): string {
  const signed = `${prefix}.${Buffer.from(json, 'utf8').toString('base64url')}`;
  return `${signed}.${mac(key, signed).toString('base64url')}`;
}

/** The JSON text of a verified token, or null: wrong shape, wrong prefix or a MAC that does not verify. */
function open(key: Buffer, prefix: string, token: string): string | null {
  if (token.length > MAX_TOKEN_LENGTH) return null;
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== prefix) return null;
  const [, body, tag] = parts as [string, string, string];
  if (!B64U.test(body) || !B64U.test(tag)) return null;
  const expected = mac(key, `${prefix}.${body}`);
  const given = Buffer.from(tag, 'base64url');
  // Constant time over the MAC; a tag of another length fails the same way.
  const same = given.length === expected.length && timingSafeEqual(given, expected);
  if (!same || given.toString('base64url') !== tag) return null;
  const bytes = Buffer.from(body, 'base64url');
  if (bytes.toString('base64url') !== body) return null;
  const json = bytes.toString('utf8');
  return Buffer.from(json, 'utf8').equals(bytes) ? json : null;
}

function safeInteger(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

export function grantJson(grant: Grant): string {
  return `{"art":${grant.art},"lid":${JSON.stringify(grant.lid)},"exp":${grant.exp}}`;
}

export function feedJson(feed: FeedToken): string {
  return `{"lid":${JSON.stringify(feed.lid)},"mid":${feed.mid === null ? 'null' : feed.mid},"gen":${feed.gen}}`;
}

export function makeGrant(key: Buffer, grant: Grant): string {
  return make(key, GRANT_PREFIX, grantJson(grant));
}

export function makeFeedToken(key: Buffer, feed: FeedToken): string {
  return make(key, FEED_PREFIX, feedJson(feed));
}

function parse(json: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export type GrantRefusal = 'BAD_TOKEN' | 'EXPIRED';

/** A verified grant, or why not: a bad MAC or non-canonical JSON, or past `exp` (both 403 before any lookup). */
export function readGrant(key: Buffer, token: string, nowSeconds: number): Grant | GrantRefusal {
  const json = open(key, GRANT_PREFIX, token);
  if (json === null) return 'BAD_TOKEN';
  const value = parse(json);
  if (!value || !safeInteger(value.art, 1) || typeof value.lid !== 'string' || !LID.test(value.lid) || !safeInteger(value.exp, 0)) return 'BAD_TOKEN';
  const grant: Grant = { art: value.art, lid: value.lid, exp: value.exp };
  if (grantJson(grant) !== json) return 'BAD_TOKEN';
  return nowSeconds > grant.exp ? 'EXPIRED' : grant;
}

/** A verified feed token, or null (bad MAC or non-canonical JSON: 403 before any lookup). */
export function readFeedToken(key: Buffer, token: string): FeedToken | null {
  const json = open(key, FEED_PREFIX, token);
  if (json === null) return null;
  const value = parse(json);
  if (!value || typeof value.lid !== 'string' || !LID.test(value.lid) || !(value.mid === null || safeInteger(value.mid, 1)) || !safeInteger(value.gen, 1)) {
    return null;
  }
  const feed: FeedToken = { lid: value.lid, mid: value.mid, gen: value.gen };
  return feedJson(feed) === json ? feed : null;
}
