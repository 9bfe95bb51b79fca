import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What answering one request adds to the metrics: its method, route pattern, status and latency. */
export type ObserveRequest = (method: string, route: string, statusCode: number, seconds: number) => void;

/**
 * Request counts and latency by route, on a registry of this app's own; `observe` counts a
 * request answered outside Fastify's routes (the check API's lean handler, check/lean.ts).
 */
export function installMetrics(app: FastifyInstance): { registry: Registry; observe: ObserveRequest } {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status_code'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const observe: ObserveRequest = (method, route, statusCode, seconds) => {
    const labels = { method, route, status_code: String(statusCode) };
    requests.inc(labels);
    latency.observe(labels, seconds);
  };
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL, so label cardinality stays bounded.
    observe(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
  });
  return { registry, observe };
}

/** `licensor_trial_requests_total{outcome}` (DESIGN.md 18): trial starts by outcome, 1 to 5. */
export function installTrialCounter(registry: Registry): (outcome: string) => void {
  const counter = new Counter({
    name: 'licensor_trial_requests_total',
    help: 'Trial requests answered, by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  return (outcome) => counter.inc({ outcome });
}

/**
 * DESIGN.md 20's download metrics: whether the configured artifact store answers, counted downloads
 * (`total` read from DownloadCounts), bytes the service streamed itself, and feed requests by feed.
 */
export function installDownloadMetrics(registry: Registry, downloads: () => number, storeUp: () => Promise<boolean>) {
  new Gauge({
    name: 'licensor_artifact_store_up',
    help: 'Whether the artifact store new uploads go to answers (1) or not (0)',
    registers: [registry],
    async collect() {
      this.set((await storeUp()) ? 1 : 0);
    },
  });
  new Counter({
    name: 'licensor_artifact_downloads_total',
    help: 'Artifact downloads counted (a grant or feed file GET answered 200, 303, or 206 from byte 0)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(downloads());
    },
  });
  const bytes = new Counter({ name: 'licensor_artifact_bytes_sent_total', help: 'Artifact bytes the service streamed itself', registers: [registry] });
  const feeds = new Counter({ name: 'licensor_feed_requests_total', help: 'Feed requests answered, by feed', labelNames: ['feed'], registers: [registry] });
  return { countBytes: (n: number) => bytes.inc(n), countFeed: (feed: string) => feeds.inc({ feed }) };
}

/** `licensor_redis_up`: 1 while Redis holds the rate-limit counts, 0 while this process counts without it. */
export function installRedisGauge(registry: Registry, up: () => boolean): void {
  new Gauge({
    name: 'licensor_redis_up',
    help: 'Whether Redis holds the rate-limit counts (1) or they are counted without it (0)',
    registers: [registry],
    collect() {
      this.set(up() ? 1 : 0);
    },
  });
}

/** What the usage endpoint counts (DESIGN.md 19): each event's result, and the requests refused by the per-licence limit. */
export interface UsageCounters {
  event(result: string, duplicate: boolean): void;
  rateLimited(): void;
}

/** `licensor_usage_events_total{result, duplicate}` and `licensor_usage_rate_limited_total`. */
export function usageMetrics(registry: Registry): UsageCounters {
  const events = new Counter({
    name: 'licensor_usage_events_total',
    help: 'Usage events answered, by result and whether the id was recorded before',
    labelNames: ['result', 'duplicate'] as const,
    registers: [registry],
  });
  const limited = new Counter({
    name: 'licensor_usage_rate_limited_total',
    help: 'Usage requests refused by LICENSOR_USAGE_RATE_LICENCE',
    registers: [registry],
  });
  return { event: (result, duplicate) => events.inc({ result, duplicate: String(duplicate) }), rateLimited: () => limited.inc() };
}
