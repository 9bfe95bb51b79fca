import { createHash } from 'node:crypto';
import { isUniqueViolation } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import { badRequest, conflict } from '../core/errors.js';
import { findIdempotentAnswer, keepIdempotentAnswer } from './repo.js';

/** A request made under an `Idempotency-Key`: the key and a digest of what was asked. */
export interface IdempotentRequest {
  key: string;
  hash: string;
}

const KEY = /^[\x20-\x7e]{1,255}$/;
const WINDOW_MS = 24 * 60 * 60 * 1000;

/** JSON with object keys sorted, so the same body written in another key order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function idempotentRequest(header: string | string[] | undefined, route: string, body: unknown): IdempotentRequest | null {
  if (header === undefined) return null;
  if (typeof header !== 'string' || !KEY.test(header)) throw badRequest('Idempotency-Key must be 1 to 255 printable characters');
  return {
    key: header,
    hash: createHash('sha256')
      .update(`${route}\n${canonical(body)}`)
      .digest('hex'),
  };
}

/** The first answer given to this key, replayed as it was. */
export class Replay extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super('replay');
  }
}

async function storedAnswer(t: Tenant, request: IdempotentRequest, now: number): Promise<Replay | null> {
  const row = await findIdempotentAnswer(t, request.key, now - WINDOW_MS);
  if (!row) return null;
  if (row.request_hash !== request.hash) throw conflict('this Idempotency-Key was used for a different request');
  return new Replay(row.status_code, JSON.parse(row.body));
}

/**
 * Inside the change's own transaction: replays an earlier answer to the key (by throwing
 * Replay), or records this answer so that a retry gets it and changes nothing.
 */
export async function rememberAnswer(t: Tenant, request: IdempotentRequest | null, now: number, status: number, body: unknown) {
  if (!request) return;
  const earlier = await storedAnswer(t, request, now);
  if (earlier) throw earlier;
  // A key older than the window may be reused: the old answer makes way.
  await keepIdempotentAnswer(t, { key: request.key, request_hash: request.hash, status_code: status, body: JSON.stringify(body), created_at: now });
}

/**
 * Runs an idempotent change. A concurrent twin that lost the race on the key's unique index
 * (PostgreSQL) reads the winner's answer once it has committed.
 */
export async function idempotently<T>(t: Tenant, request: IdempotentRequest | null, now: number, change: () => Promise<T>): Promise<T | Replay> {
  if (request) {
    const earlier = await storedAnswer(t, request, now);
    if (earlier) return earlier;
  }
  try {
    return await change();
  } catch (err) {
    if (err instanceof Replay) return err;
    if (request && isUniqueViolation(err)) {
      const earlier = await storedAnswer(t, request, now);
      if (earlier) return earlier;
    }
    throw err;
  }
}
