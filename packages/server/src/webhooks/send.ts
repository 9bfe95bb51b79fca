import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { AddressRefused, checkTarget } from './address.js';

export const TIMEOUT_MS = 15_000;
const ANSWER_BYTES = 2048;
/** Idle kept-alive connections close sooner than a receiver's own idle timeout would (Node's is 5 s). */
const IDLE_MS = 4_000;
const AGENTS_KEPT = 256;

/**
 * Kept-alive connections, an agent per URL origin and the address checked for it: an attempt
 * reuses only a connection made to the address it checked itself, so no rebinding can slip in
 * through a pooled connection. At most AGENTS_KEPT agents; the oldest is closed past it.
 */
const agents = new Map<string, http.Agent>();

function agentFor(url: URL, address: string): http.Agent {
  const key = `${url.origin} ${address}`;
  let agent = agents.get(key);
  if (!agent) {
    if (agents.size >= AGENTS_KEPT) {
      const [oldest, old] = agents.entries().next().value!;
      agents.delete(oldest);
      old.destroy();
    }
    agent = new (url.protocol === 'https:' ? https.Agent : http.Agent)({ keepAlive: true, timeout: IDLE_MS });
    agents.set(key, agent);
  }
  return agent;
}

/** `v1,<base64 HMAC-SHA256>` over `id.timestamp.body` per secret (Standard Webhooks 1.0), space-separated. */
export function signatures(secrets: Buffer[], id: string, timestamp: number, body: string): string {
  return secrets.map((key) => `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`).join(' ');
}

export interface Outcome {
  at: number;
  httpStatus: number | null;
  durationMs: number;
  /** The first 2 KB of the answer's body. */
  response: string;
  error: string | null;
  /** Seconds, from the answer's Retry-After. */
  retryAfter: number | null;
}

function retryAfterSeconds(value: string | undefined, now: number): number | null {
  if (!value) return null;
  if (/^\d{1,10}$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.round((date - now) / 1000));
}

/**
 * One attempt: the address is checked, then connected to as checked (the `lookup` hands the
 * socket that address only), or a kept-alive connection to that address is reused. A reused
 * connection the receiver closed just as it was taken (a reset before any answer) is tried once
 * more on a new one: the receiver saw nothing, and an attempt may arrive twice anyway. No
 * redirect is followed (node:http never follows one), the whole attempt ends at 15 s, and only
 * the answer's first 2 KB are read.
 */
export async function attempt(rawUrl: string, allowed: net.BlockList, message: { id: string; body: string; secrets: Buffer[] }, now: number): Promise<Outcome> {
  const started = performance.now();
  const done = (partial: Partial<Outcome>): Outcome => ({
    at: now,
    httpStatus: null,
    durationMs: Math.round(performance.now() - started),
    response: '',
    error: null,
    retryAfter: null,
    ...partial,
  });
  let target: Awaited<ReturnType<typeof checkTarget>>;
  try {
    target = await checkTarget(rawUrl, allowed);
  } catch (err) {
    if (err instanceof AddressRefused) return done({ error: err.message });
    throw err;
  }
  const timestamp = Math.floor(now / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Licensor-Webhooks/1',
    'webhook-id': message.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures(message.secrets, message.id, timestamp, message.body),
  };
  const { address, family } = target;
  const lookup = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
    options.all ? callback(null, [{ address, family }]) : callback(null, address, family)) as unknown as net.LookupFunction;
  const client = target.url.protocol === 'https:' ? https : http;
  const agent = agentFor(target.url, address);
  const send = (reuse: boolean) =>
    new Promise<Outcome>((resolve) => {
      const request = client.request(target.url, { method: 'POST', headers, lookup, agent: reuse ? agent : false, timeout: TIMEOUT_MS }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = () => {
          clearTimeout(timer);
          resolve(
            done({
              httpStatus: res.statusCode ?? null,
              response: Buffer.concat(chunks).subarray(0, ANSWER_BYTES).toString('utf8'),
              retryAfter: retryAfterSeconds(res.headers['retry-after'], now),
            }),
          );
          res.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= ANSWER_BYTES) finish();
        });
        res.on('end', finish);
        res.on('error', finish);
      });
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
      request.on('timeout', () => request.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)));
      request.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (reuse && request.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) resolve(send(false));
        else resolve(done({ error: err.code ? `${err.code}: ${err.message}` : err.message }));
      });
      request.end(message.body);
    });
  return send(true);
}
