/**
 * bench:check's control: a bare node:http server, in its own process as the service's worker is,
 * doing per request only what no check can do without (one sign of a receipt with the request's
 * nonce, a check's only signature work once its licence string's verdict is remembered, and,
 * given a PostgreSQL URL, one round trip on a pool of 10 before the signing), so the same paced
 * run against it shows what this machine allows a check's p99 at that minute. Reads
 * `{ algorithm, databaseUrl? }` from argv[2]; prints its port.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { signBytes, type Algorithm } from '@licensor/protocol';
import { benchKeyPair } from './support.js';

const { algorithm, databaseUrl } = JSON.parse(process.argv[2]!) as { algorithm: Algorithm; databaseUrl?: string };
const { privateKey } = benchKeyPair(algorithm);
const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 10 }) : null;

async function answer(nonce: string): Promise<string> {
  if (pool) await pool.query({ name: 'floor', text: 'select $1::text as nonce', values: [nonce] });
  const at = new Date().toISOString();
  const receipt = signBytes(privateKey, Buffer.from(`SVCR1\x1f${randomUUID()}\x1fACTIVE\x1f${nonce}\x1f${at}\x1f${at}\x1f${'a'.repeat(32)}`));
  return JSON.stringify({ status: 'ACTIVE', nonce, checkedAt: at, signature: receipt.toString('base64url') });
}

// Warm, as the service is before its paced run: every connection of the pool open, the code compiled.
for (let round = 0; round < 200; round++) await Promise.all(Array.from({ length: 10 }, () => answer('warm-up')));

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', async () => {
    const body = await answer((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { nonce: string }).nonce);
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
