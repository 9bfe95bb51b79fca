import cluster, { type Worker } from 'node:cluster';
import { Redis } from 'ioredis';

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts for every rate limit (checks, passkey sign-in, webhook tests), decorated by app.ts. */
    rateLimits: RateLimiter;
  }
}

/** The answer for one request: allowed, or refused until the current window ends. */
export interface RateDecision {
  allowed: boolean;
  retryAfterSeconds: number;
}

/** Fixed one-minute windows: cheap, and exact enough for a limit stated per minute. */
export interface RateLimiter {
  /** Counts one request against `key`; `limit` 0 means no limit. */
  hit(key: string, limit: number, now?: number): Promise<RateDecision>;
  /** With Redis configured: whether its counts are the ones in use now. */
  redisUp?(): boolean;
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

// While Redis is down, a reconnection is tried this often, so its return is noticed within a second.
const RECONNECT_MS = 500;

/** What a Redis-backed limiter reports: an outage (once) and the end of one. */
export interface RedisEvents {
  down(err: Error): void;
  up(): void;
}

/**
 * Counts shared by every instance: INCR on a key per window, expiring with it. While Redis cannot
 * answer, `fallback` counts instead (DESIGN.md 17): at once while the connection is known down (no
 * offline queue, so no command waits for a reconnection), and after a second when Redis stops
 * answering on an open connection (which is then made afresh). Its return is used at once. The
 * timeouts are not shorter because a busy machine's Redis (or this process's event loop, while
 * it starts) can be slow without Redis being gone, and a needless fallback splits the minute's
 * counts in two.
 */
export function redisRateLimiter(url: string, prefix: string, fallback: RateLimiter, events: RedisEvents): RateLimiter {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 0,
    commandTimeout: 1_000,
    connectTimeout: 5_000,
    enableOfflineQueue: false,
    retryStrategy: () => RECONNECT_MS,
  });
  let up = false;
  // The first hits wait for the first connection, made or failed, so that a service just started
  // does not count its first requests without Redis and the rest in it.
  let first: Promise<unknown> | null = new Promise((settle) => {
    redis.once('ready', settle);
    redis.once('error', settle);
  }).then(() => (first = null));
  let outage = false;
  let closing = false;
  const down = (err: Error) => {
    up = false;
    if (outage || closing) return;
    outage = true;
    events.down(err);
  };
  redis.on('ready', () => {
    up = true;
    if (!outage) return;
    outage = false;
    events.up();
  });
  // A down Redis reports on every reconnection attempt: one warning per outage.
  redis.on('error', down);
  redis.on('close', () => down(new Error('connection to Redis closed')));
  return {
    async hit(key, limit, now = Date.now()) {
      if (limit === 0) return ALLOWED;
      if (first) await first;
      if (!up) return fallback.hit(key, limit, now);
      const start = now - (now % WINDOW_MS);
      const name = `${prefix}${key}:${start}`;
      try {
        const results = await redis
          .multi()
          .incr(name)
          .pexpire(name, WINDOW_MS * 2)
          .exec();
        return decide(Number(results?.[0]?.[1] ?? 0), limit, start, now);
      } catch (err) {
        if (up) {
          down(err as Error);
          redis.disconnect(true);
        }
        return fallback.hit(key, limit, now);
      }
    },
    redisUp: () => up,
    async close() {
      closing = true;
      redis.disconnect();
      await fallback.close();
    },
  };
}

/** A worker's hits, sent to the primary in one message per turn of the event loop. */
interface HitsMessage {
  licensorRateHits: Array<{ id: number; key: string; limit: number }>;
}
interface DecisionsMessage {
  licensorRateDecisions: Array<{ id: number } & RateDecision>;
}
const isHits = (message: unknown): message is HitsMessage => typeof message === 'object' && message !== null && 'licensorRateHits' in message;
const isDecisions = (message: unknown): message is DecisionsMessage => typeof message === 'object' && message !== null && 'licensorRateDecisions' in message;

/**
 * A worker's view of the counts the primary holds (DESIGN.md 11: shared, never divided, since a
 * keep-alive client stays on one worker). Hits made in the same turn travel together. Should the
 * primary be gone, the request is allowed, as when Redis is.
 */
export function primaryRateLimiter(): RateLimiter {
  let nextId = 0;
  const waiting = new Map<number, (decision: RateDecision) => void>();
  let batch: HitsMessage['licensorRateHits'] = [];
  const allowWaiting = () => {
    for (const resolve of waiting.values()) resolve(ALLOWED);
    waiting.clear();
  };
  const send = () => {
    const hits = batch;
    batch = [];
    process.send!({ licensorRateHits: hits } satisfies HitsMessage, undefined, {}, (err) => err && allowWaiting());
  };
  const onMessage = (message: unknown) => {
    if (!isDecisions(message)) return;
    for (const { id, ...decision } of message.licensorRateDecisions) {
      waiting.get(id)?.(decision);
      waiting.delete(id);
    }
  };
  process.on('message', onMessage);
  process.on('disconnect', allowWaiting);
  return {
    hit(key, limit) {
      if (limit === 0 || !process.connected) return Promise.resolve(ALLOWED);
      return new Promise((resolve) => {
        const id = ++nextId;
        waiting.set(id, resolve);
        if (batch.length === 0) setImmediate(send);
        batch.push({ id, key, limit });
      });
    },
    async close() {
      process.off('message', onMessage);
      process.off('disconnect', allowWaiting);
      allowWaiting();
    },
  };
}

/** The primary's side: one set of counts for all its workers, on the primary's clock. */
export function answerRateHits(worker: Worker, counts: RateLimiter): void {
  worker.on('message', async (message: unknown) => {
    if (!isHits(message)) return;
    const now = Date.now();
    const decisions = await Promise.all(message.licensorRateHits.map(async ({ id, key, limit }) => ({ id, ...(await counts.hit(key, limit, now)) })));
    if (worker.isConnected()) worker.send({ licensorRateDecisions: decisions } satisfies DecisionsMessage);
  });
}

/**
 * The counts this process uses: Redis when configured, else (and while Redis is down) the
 * primary's when it is one of several workers, else its own (a single worker's are all there are).
 */
export function sharedRateLimiter(redis: { url: string; prefix: string } | null, workers: number, events: RedisEvents): RateLimiter {
  const local = cluster.isWorker && workers > 1 ? primaryRateLimiter() : memoryRateLimiter();
  return redis ? redisRateLimiter(redis.url, redis.prefix, local, events) : local;
}
