import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliver } from '../../src/releases/delivery.js';
import { type ArtifactStore, DiskArtifactStore } from '../../src/releases/store.js';

const bytes = randomBytes(10_000);
const key = `1/2/${'c'.repeat(32)}/App Setup 1.2.3.exe`;
let dir: string;
let app: FastifyInstance;
let last: { counted: boolean; bytes: number } | null = null;

function serve(store: ArtifactStore, storageKey = key) {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  return async (request: { method: string; headers: Record<string, string | string[] | undefined> }, reply: import('fastify').FastifyReply) => {
    const range = request.headers.range;
    last = await deliver(
      reply,
      store,
      { filename: 'App Setup 1.2.3.exe', size: bytes.length, sha256, content_type: 'application/x-msdownload', storage_key: storageKey },
      { method: request.method, range: typeof range === 'string' ? range : undefined },
      300,
    );
    return reply;
  };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'delivery-'));
  const disk = new DiskArtifactStore(dir);
  // The bytes where the disk store keeps them ({dir}/{orgId}/{releaseId}/{hex}/{filename}).
  await mkdir(path.join(dir, path.dirname(key)), { recursive: true });
  await writeFile(path.join(dir, key), bytes);
  const s3: ArtifactStore = {
    backend: 's3',
    put: () => Promise.reject(new Error('not used')),
    read: () => null,
    presign: async (k, seconds) => `https://bucket.example/${encodeURIComponent(k)}?X-Amz-Expires=${seconds}`,
    delete: async () => undefined,
    hash: async () => null,
    sweep: async () => undefined,
    up: async () => true,
  };
  app = Fastify();
  app.route({ method: ['GET', 'HEAD'], url: '/disk', handler: serve(disk) });
  app.route({ method: ['GET', 'HEAD'], url: '/missing', handler: serve(disk, `1/2/${'d'.repeat(32)}/gone.exe`) });
  app.route({ method: ['GET', 'HEAD'], url: '/s3', handler: serve(s3) });
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await rm(dir, { recursive: true, force: true });
});

describe('Delivery', () => {
  it('answers 200 with the headers and the whole file, counted', async () => {
    const res = await app.inject({ url: '/disk' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe('10000');
    expect(res.headers['content-type']).toBe('application/x-msdownload');
    expect(res.headers['content-disposition']).toBe('attachment; filename="App Setup 1.2.3.exe"');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers.etag).toBe(`"${createHash('sha256').update(bytes).digest('hex')}"`);
    expect(res.rawPayload.equals(bytes)).toBe(true);
    expect(last).toEqual({ counted: true, bytes: 10_000 });
  });

  it('answers one range 206, counted only from byte 0', async () => {
    const res = await app.inject({ url: '/disk', headers: { range: 'bytes=100-199' } });
    expect(res.statusCode).toBe(206);
    expect(res.headers['content-range']).toBe('bytes 100-199/10000');
    expect(res.rawPayload.equals(bytes.subarray(100, 200))).toBe(true);
    expect(last?.counted).toBe(false);
    await app.inject({ url: '/disk', headers: { range: 'bytes=0-0' } });
    expect(last?.counted).toBe(true);
  });

  it('answers 416 for an unsatisfiable range and 200 whole for a malformed one', async () => {
    const res = await app.inject({ url: '/disk', headers: { range: 'bytes=10000-' } });
    expect(res.statusCode).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */10000');
    const whole = await app.inject({ url: '/disk', headers: { range: 'bytes=50-10,x' } });
    expect(whole.statusCode).toBe(200);
    expect(whole.rawPayload.length).toBe(10_000);
  });

  it('answers several ranges as multipart/byteranges with the bytes of each', async () => {
    const res = await app.inject({ url: '/disk', headers: { range: 'bytes=0-9,5000-5009,-10' } });
    expect(res.statusCode).toBe(206);
    const boundary = /^multipart\/byteranges; boundary=(\w+)$/.exec(res.headers['content-type'] as string)?.[1];
    expect(boundary).toBeTruthy();
    expect(Number(res.headers['content-length'])).toBe(res.rawPayload.length);
    const parts = res.rawPayload.toString('latin1').split(`--${boundary}`);
    expect(parts).toHaveLength(5);
    expect(parts[2]).toBe(
      `\r\nContent-Type: application/x-msdownload\r\nContent-Range: bytes 5000-5009/10000\r\n\r\n${bytes.subarray(5000, 5010).toString('latin1')}\r\n`,
    );
    expect(parts[4]).toBe('--\r\n');
  });

  it('answers HEAD with the headers and no body, never counted', async () => {
    const res = await app.inject({ url: '/disk', method: 'HEAD' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe('10000');
    expect(res.rawPayload.length).toBe(0);
    expect(last?.counted).toBe(false);
  });

  it('answers 503 {error} when the bytes cannot be read, and 303 to a presigned URL from S3', async () => {
    const missing = await app.inject({ url: '/missing' });
    expect(missing.statusCode).toBe(503);
    expect(missing.json()).toEqual({ error: expect.stringMatching(/artifact store/) });
    expect(last?.counted).toBe(false);
    const s3 = await app.inject({ url: '/s3' });
    expect(s3.statusCode).toBe(303);
    expect(s3.headers.location).toMatch(/^https:\/\/bucket\.example\/.*X-Amz-Expires=300$/);
    expect(last).toEqual({ counted: true, bytes: 0 });
  });
});
