/**
 * The load generator of bench:check, run as its own process so it does not share a core's
 * event loop with the service: autocannon against the check endpoint, a fresh nonce per
 * request. Reads its job as JSON from argv[2]; prints autocannon's summary as JSON.
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';

interface Job {
  url: string;
  token: string;
  /** JSON file of `[license, fingerprint]` pairs, one per bound licence. */
  bodiesFile: string;
  connections: number;
  seconds: number;
  /** Requests per second across all connections; absent means as fast as the service answers. */
  rate?: number;
}

const job = JSON.parse(process.argv[2]!) as Job;
const pairs = JSON.parse(fs.readFileSync(job.bodiesFile, 'utf8')) as Array<[string, string]>;
let next = 0;
let firstFailure: string | null = null;

const result = await autocannon({
  url: job.url,
  method: 'POST',
  connections: job.connections,
  duration: job.seconds,
  ...(job.rate ? { overallRate: job.rate } : {}),
  headers: { authorization: `Bearer ${job.token}`, 'content-type': 'application/json' },
  requests: [
    {
      setupRequest: (request) => {
        const [license, fingerprint] = pairs[next++ % pairs.length]!;
        return { ...request, body: JSON.stringify({ license, fingerprint, nonce: randomBytes(18).toString('base64url') }) };
      },
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
