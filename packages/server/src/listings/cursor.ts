import { createHash } from 'node:crypto';
import { badRequest } from '../core/errors.js';
import type { ListingFilter, Position } from './filter.js';

/*
 * Keyset cursors for the page listing (DESIGN.md 4): the last row's position and a digest of
 * the filters and sort it was made for, so a cursor is never applied to another listing.
 */

function filterDigest(filter: ListingFilter): string {
  const { search, status, window, productId, customerId, trial, sort, asc } = filter;
  const canonical = JSON.stringify([
    search?.q ?? null,
    status ? [...status].sort() : null,
    window,
    productId ?? null,
    customerId ?? null,
    trial ?? null,
    sort,
    asc,
  ]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

export function encodeCursor(filter: ListingFilter, position: Position): string {
  return Buffer.from(JSON.stringify({ f: filterDigest(filter), k: position.key, l: position.lid })).toString('base64url');
}

export function decodeCursor(filter: ListingFilter, cursor: string): Position {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badRequest('Query parameter "cursor": not a cursor this API gave');
  }
  const { f, k, l } = (parsed ?? {}) as { f?: unknown; k?: unknown; l?: unknown };
  if (typeof f !== 'string' || typeof l !== 'string' || !(k === null || typeof k === 'string' || Number.isFinite(k))) {
    throw badRequest('Query parameter "cursor": not a cursor this API gave');
  }
  if (f !== filterDigest(filter)) throw badRequest('Query parameter "cursor": made for other filters or another sort');
  return { key: k as Position['key'], lid: l };
}
