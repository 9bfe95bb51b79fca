import { Redis } from 'ioredis';

/** The answer for one request: allowed, or refused until the current window ends. */
export interface RateDecision {
  allowed: boolean;
  retryAfterSeconds: number;
}

/** Fixed one-minute windows: cheap, and exact enough for a limit stated per minute. */
export interface RateLimiter {
  /** Counts one request against `key`; `limit` 0 means no limit. */
  hit(key: string, limit: number, now?: number): Promise<RateDecision>;
  close(): Promise<void>;
}

const WINDOW_MS = 60_000;
const ALLOWED: RateDecision = { allowed: true, retryAfterSeconds: 0 };

function decide(count: number, limit: number, windowStart: number, now: number): RateDecision {
  if (count <= limit) return ALLOWED;
  return { allowed: false, retryAfterSeconds: (windowStart + WINDOW_MS - now) / 1000 };
}

/** One instance's own counts: the whole map is dropped when the window turns, so it never grows stale. */
export function memoryRateLimiter(): RateLimiter {
  let windowStart = 0;
  let counts = new Map<string, number>();
  return {
    async hit(key, limit, now = Date.now()) {
      if (limit === 0) return ALLOWED;
      const start = now - (now % WINDOW_MS);
      if (start !== windowStart) {
        windowStart = start;
        counts = new Map();
      }
      const count = (counts.get(key) ?? 0) + 1;
      counts.set(key, count);
      return decide(count, limit, start, now);
    },
    async close() {},
  };
}

/**
 * Counts shared by every instance: INCR on a key per window, expiring with it. When Redis
 * cannot answer, the request is allowed (DESIGN.md 1: checks are never refused for Redis).
 */
export function redisRateLimiter(url: string, prefix: string, onError: (err: Error) => void): RateLimiter {
  // Commands wait for a connection being made, but never long: an unreachable Redis fails a hit
  // within the command timeout (and at once while the connection is down), so checks go on.
  const redis = new Redis(url, { maxRetriesPerRequest: 0, commandTimeout: 250 });
  let lastError = 0;
  redis.on('error', (err: Error) => {
    // A down Redis reports on every reconnect attempt; say so at most once a minute.
    if (Date.now() - lastError >= WINDOW_MS) onError(err);
    lastError = Date.now();
  });
  return {
    async hit(key, limit, now = Date.now()) {
      if (limit === 0) return ALLOWED;
      const start = now - (now % WINDOW_MS);
      const name = `${prefix}${key}:${start}`;
      try {
        const results = await redis.multi().incr(name).pexpire(name, WINDOW_MS * 2).exec();
        return decide(Number(results?.[0]?.[1] ?? 0), limit, start, now);
      } catch {
        return ALLOWED;
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}
