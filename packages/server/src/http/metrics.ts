import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Request counts and latency by route, on a registry of this app's own. */
export function installMetrics(app: FastifyInstance): Registry {
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
  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      method: request.method,
      // The route pattern, never the raw URL, so label cardinality stays bounded.
      route: request.routeOptions.url ?? 'unmatched',
      status_code: String(reply.statusCode),
    };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
  });
  return registry;
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
