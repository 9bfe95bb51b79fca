/**
 * The load generator of bench:check, run as its own process so it does not share a core's
 * event loop with the service: autocannon against the check endpoint (or a paced run at a fixed
 * rate), a fresh nonce per request. Reads its job as JSON from argv[2]; prints a summary as JSON.
 */
import fs from 'node:fs';
import net from 'node:net';
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
  /** The usage endpoint (bench:usage): each request carries this many events of `meter`, amount 1, with ids never sent before. */
  usage?: { meter: string; events: number };
  /** Paced GETs of `url` without a credential or body (bench:downloads' feeds); `token` and `bodiesFile` unused. */
  get?: boolean;
}

const job = JSON.parse(process.argv[2]!) as Job;
const pairs = (job.get ? [] : JSON.parse(fs.readFileSync(job.bodiesFile, 'utf8'))) as Array<[string, string]>;
let next = 0;
let firstFailure: string | null = null;

// Event ids unique across runs and processes: this process's random prefix, then a counter.
const idPrefix = randomBytes(9).toString('base64url');
let eventIds = 0;
const eventsOf = ({ meter, events }: NonNullable<Job['usage']>) =>
  Array.from({ length: events }, () => ({ id: `${idPrefix}-${++eventIds}`, meter, amount: 1 }));

const nextBody = () => {
  const [license, fingerprint] = pairs[next++ % pairs.length]!;
  const nonce = randomBytes(18).toString('base64url');
  return JSON.stringify(job.usage ? { license, fingerprint, nonce, events: eventsOf(job.usage) } : { license, fingerprint, nonce });
};
const headers = { authorization: `Bearer ${job.token}`, 'content-type': 'application/json' };

/**
 * A paced run: request i is due at start + i/rate, spread evenly (autocannon's rates send each
 * second's quota in a burst), on `connections` keep-alive connections, the next due request going
 * to an idle one. Latency counts from when a request was due, so a service falling behind
 * is charged for the queue it causes. This process's own delays count as the service's too, so it
 * does as little as it can: every request's bytes are made before the clock starts, written to a
 * bare socket, and an answer is read only for its status line and length (node:http's client cost
 * this process about 100 µs a request, a tenth of a core at this rate on a 2-core machine).
 */
async function paced(rate: number): Promise<{ rps: number; p50: number; p99: number; non2xx: number; errors: number }> {
  const url = new URL(job.url);
  const total = Math.round(rate * job.seconds);
  const head = `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: ${headers.authorization}\r\nContent-Type: ${headers['content-type']}\r\nContent-Length: `;
  const requests = Array.from({ length: total }, () => {
    if (job.get) return Buffer.from(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
    const body = nextBody();
    return Buffer.from(`${head}${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
  const latencies = new Float64Array(total);
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  const idle: Connection[] = [];
  let sent = 0;
  let start = 0;
  const due = (i: number) => start + (i * 1000) / rate;
  /** Sends the next request due, if any, on this connection; otherwise waits idle. */
  const sendNext = (connection: Connection) => {
    if (sent < total && due(sent) <= performance.now()) connection.send(sent++);
    else idle.push(connection);
  };
  class Connection {
    private readonly socket: net.Socket;
    private buffered: Buffer = Buffer.alloc(0);
    private current = -1;
    constructor(onReady: () => void) {
      this.socket = net.connect(Number(url.port), url.hostname, onReady);
      this.socket.setNoDelay(true);
      this.socket.on('data', (chunk: Buffer) => this.read(chunk));
      // A connection that fails is not used again; the request it carried counts as an error.
      this.socket.on('error', (err) => (firstFailure ??= err.message));
      this.socket.on('close', () => {
        live--;
        if (this.current >= 0) errors++;
        this.current = -1;
        const at = idle.indexOf(this);
        if (at >= 0) idle.splice(at, 1);
      });
    }
    send(i: number) {
      this.current = i;
      this.socket.write(requests[i]!);
    }
    /** One answer at a time per connection: its head up to the blank line, then Content-Length bytes. */
    private read(chunk: Buffer) {
      this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
      const end = this.buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.buffered.toString('latin1', 0, end);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (this.buffered.length < end + 4 + length) return;
      latencies[answered++] = performance.now() - due(this.current);
      const status = Number(head.slice(9, 12));
      if (status !== 200) {
        non2xx++;
        firstFailure ??= `${status} ${this.buffered.toString('utf8', end + 4, end + 4 + length)}`;
      }
      this.buffered = this.buffered.subarray(end + 4 + length);
      this.current = -1;
      sendNext(this);
    }
    close() {
      this.socket.destroy();
    }
  }
  let live = job.connections;
  const connections = await Promise.all(
    Array.from(
      { length: job.connections },
      () =>
        new Promise<Connection>((resolve) => {
          const c: Connection = new Connection(() => resolve(c));
        }),
    ),
  );
  idle.push(...connections);
  start = performance.now();
  await new Promise<void>((done) => {
    const tick = setInterval(() => {
      const now = performance.now();
      while (sent < total && due(sent) <= now && idle.length) idle.pop()!.send(sent++);
      if (answered + errors >= total || live === 0) {
        clearInterval(tick);
        done();
      }
    }, 1);
  });
  const elapsed = (performance.now() - start) / 1000;
  for (const connection of connections) connection.close();
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
