/**
 * The load generator of bench:check, run as its own process so it does not share a core's
 * event loop with the service: autocannon against the check endpoint (or a paced run at a fixed
 * rate), a fresh nonce per request. Reads its job as JSON from argv[2]; prints a summary as JSON.
 */
import fs from 'node:fs';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';

interface Job {
  url: string;
  token: string;
  /** JSON file of `[license, fingerprint]` pairs, one per bound licence. */
  bodiesFile: string;
  connections: number;
  seconds: number;
  /** Requests per second across all connections, paced evenly; absent means as fast as the service answers. */
  rate?: number;
  /** As fast as it answers, but this many requests (each pair once, in order) rather than for `seconds`. */
  amount?: number;
}

const job = JSON.parse(process.argv[2]!) as Job;
const pairs = JSON.parse(fs.readFileSync(job.bodiesFile, 'utf8')) as Array<[string, string]>;
let next = 0;
let firstFailure: string | null = null;

const nextBody = () => {
  const [license, fingerprint] = pairs[next++ % pairs.length]!;
  return JSON.stringify({ license, fingerprint, nonce: randomBytes(18).toString('base64url') });
};
const headers = { authorization: `Bearer ${job.token}`, 'content-type': 'application/json' };

/**
 * A paced run: request i is due at start + i/rate, spread evenly (autocannon's rates send each
 * second's quota in a burst), on `connections` keep-alive connections. Latency counts from when
 * a request was due, so a service falling behind is charged for the queue it causes. Bodies are
 * made before the clock starts and answers are not kept, so that this process's own work and
 * garbage, which would count as the service's latency, stay small.
 */
async function paced(rate: number): Promise<{ rps: number; p50: number; p99: number; non2xx: number; errors: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.connections });
  const total = Math.round(rate * job.seconds);
  const bodies = Array.from({ length: total }, nextBody);
  const latencies = new Float64Array(total);
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  const start = performance.now();
  const inFlight: Array<Promise<void>> = [];
  const fire = (i: number) =>
    new Promise<void>((resolve) => {
      const due = start + (i * 1000) / rate;
      const request = http.request(job.url, { method: 'POST', agent, headers }, (response) => {
        let body = '';
        if (response.statusCode === 200) response.resume();
        else response.on('data', (d) => (body += d));
        response.on('end', () => {
          latencies[answered++] = performance.now() - due;
          if (response.statusCode !== 200) {
            non2xx++;
            firstFailure ??= `${response.statusCode} ${body}`;
          }
          resolve();
        });
      });
      request.on('error', (err) => {
        errors++;
        firstFailure ??= err.message;
        resolve();
      });
      request.end(bodies[i]);
    });
  let sent = 0;
  await new Promise<void>((done) => {
    const tick = setInterval(() => {
      const now = performance.now();
      while (sent < total && start + (sent * 1000) / rate <= now) inFlight.push(fire(sent++));
      if (sent >= total) {
        clearInterval(tick);
        done();
      }
    }, 1);
  });
  await Promise.all(inFlight);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  const sorted = latencies.subarray(0, answered).sort();
  const at = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]! * 10) / 10;
  return { rps: answered / elapsed, p50: at(0.5), p99: at(0.99), non2xx, errors };
}

if (job.rate) {
  process.stdout.write(JSON.stringify({ ...(await paced(job.rate)), firstFailure }));
  process.exit(0);
}

const result = await autocannon({
  url: job.url,
  method: 'POST',
  connections: job.connections,
  ...(job.amount ? { amount: job.amount } : { duration: job.seconds }),
  headers,
  requests: [
    {
      setupRequest: (request) => ({ ...request, body: nextBody() }),
      onResponse: (status, body) => {
        if (status !== 200) firstFailure ??= `${status} ${body}`;
      },
    },
  ],
});
process.stdout.write(
  JSON.stringify({
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    firstFailure,
  }),
);
