// Shared by the webhooks*.test.ts API tests: a receiver on loopback and the endpoint calls.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Caller, Harness } from './harness.js';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** How the receiver answers: a status, and headers. */
export type Answer = (
  request: Received,
) => { status: number; headers?: Record<string, string> } | Promise<{ status: number; headers?: Record<string, string> }>;

export interface Receiver {
  url: string;
  received: Received[];
  answer: Answer;
  /** Stops listening (attempts are refused) until `open`. */
  close(): Promise<void>;
  open(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    received: [],
    answer: () => ({ status: 204 }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
    open: () => new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve())),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const received = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      receiver.received.push(received);
      const { status, headers } = await receiver.answer(received);
      res.writeHead(status, headers).end(status === 204 ? undefined : 'answer body');
    });
  });
  // Idle kept-alive connections close at once, so `close` leaves none open for the next attempt to reuse.
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${port}`;
  return receiver;
}

/** The parsed body when every signature header verifies with `secret` (Standard Webhooks' own library). */
export function verified(secret: string, received: Received): { type: string; timestamp: string; sequence: number | null; data: any } {
  return new Webhook(secret).verify(received.body, received.headers as Record<string, string>) as never;
}

export async function addEndpoint(caller: Caller, url: string, events: string[] = ['*']) {
  const response = await caller('POST', '/webhooks', { url, events });
  if (response.statusCode !== 201) throw new Error(`endpoint creation failed: ${response.statusCode} ${response.body}`);
  return response.data as { id: number; secret: string };
}

/** Runs the delivery loop until nothing is due (time does not move here). */
export const drain = (h: Harness) => h.app.webhooks!.drain();
