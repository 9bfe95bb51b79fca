import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { ArtifactRow } from './repo.js';
import { type ArtifactStore, contentDisposition } from './store.js';
import { type ByteRange, contentRange, multipart, planRanges } from './ranges.js';

/** What Delivery needs of an artifact row. */
export type DeliveredArtifact = Pick<ArtifactRow, 'filename' | 'size' | 'sha256' | 'content_type' | 'storage_key'>;

export interface Delivered {
  /** A download as section 20 counts one: GET answered 200, 303, or 206 from byte 0. */
  counted: boolean;
  /** Bytes the service streams itself (the S3 redirect streams none). */
  bytes: number;
}

export const STORE_DOWN = 'the artifact store cannot be read just now; try again shortly';

/** Waits until a disk stream has opened its file; false when it cannot (missing, unreadable). */
async function opened(stream: NodeJS.ReadableStream): Promise<boolean> {
  return new Promise((resolve) => {
    const emitter = stream as Readable;
    const ok = () => {
      emitter.off('error', bad);
      resolve(true);
    };
    const bad = () => {
      emitter.off('ready', ok);
      resolve(false);
    };
    emitter.once('ready', ok);
    emitter.once('error', bad);
  });
}

/**
 * Answers a GET or HEAD for one artifact as section 20's Delivery does: from disk 200 with the
 * headers, one range 206, unsatisfiable 416, 2 to 1,000 ranges 206 multipart/byteranges, any other
 * Range the whole file; from S3 303 to a presigned GET expiring in `presignSeconds`. Streamed, never
 * buffered whole; unreadable bytes 503. It calls `reply.send` (the route returns `reply`) and says what it answered.
 */
export async function deliver(
  reply: FastifyReply,
  store: ArtifactStore,
  artifact: DeliveredArtifact,
  request: { method: string; range: string | undefined },
  presignSeconds: number,
): Promise<Delivered> {
  const head = request.method === 'HEAD';
  reply.header('Cache-Control', 'no-store');
  if (store.backend === 's3') {
    let url: string | null;
    try {
      url = await store.presign(artifact.storage_key, presignSeconds, artifact.content_type, artifact.filename);
    } catch {
      url = null;
    }
    if (url === null) {
      reply.code(503).send({ error: STORE_DOWN });
      return { counted: false, bytes: 0 };
    }
    reply.code(303).header('Location', url).send();
    return { counted: !head, bytes: 0 };
  }

  const size = Number(artifact.size);
  reply.header('Accept-Ranges', 'bytes').header('ETag', `"${artifact.sha256}"`).header('Content-Disposition', contentDisposition(artifact.filename));
  const plan = planRanges(request.range, size);
  if (plan.kind === 'unsatisfiable') {
    reply.code(416).header('Content-Range', `bytes */${size}`).send({ error: 'the range asked for lies outside the file' });
    return { counted: false, bytes: 0 };
  }

  const open = (range: ByteRange | null): NodeJS.ReadableStream | null => {
    try {
      return store.read(artifact.storage_key, range?.start, range?.end);
    } catch {
      return null;
    }
  };
  const first: ByteRange | null =
    plan.kind === 'single' ? plan.range : plan.kind === 'multi' ? (plan.ranges[0] as ByteRange) : size === 0 ? null : { start: 0, end: size - 1 };
  // Open the first stretch before any header goes out, so a missing file is a 503 and not a broken 200.
  const stream = head ? null : open(first);
  if (!head && (stream === null || !(await opened(stream)))) {
    (stream as Readable | null)?.destroy();
    reply.removeHeader('Accept-Ranges').removeHeader('ETag').removeHeader('Content-Disposition');
    reply.code(503).send({ error: STORE_DOWN });
    return { counted: false, bytes: 0 };
  }

  if (plan.kind === 'multi') {
    const mp = multipart(plan.ranges, size, artifact.content_type);
    reply.code(206).header('Content-Type', mp.contentType).header('Content-Length', mp.length);
    if (head) {
      reply.send();
      return { counted: false, bytes: 0 };
    }
    let used = false;
    const body = mp.body((range) => {
      if (!used) {
        used = true;
        return stream as Readable;
      }
      return open(range) as Readable;
    });
    reply.send(body);
    return { counted: (plan.ranges[0] as ByteRange).start === 0, bytes: mp.length };
  }

  const range = plan.kind === 'single' ? plan.range : null;
  const length = range ? range.end - range.start + 1 : size;
  reply
    .code(range ? 206 : 200)
    .header('Content-Type', artifact.content_type)
    .header('Content-Length', length);
  if (range) reply.header('Content-Range', contentRange(range, size));
  if (head) {
    reply.send();
    return { counted: false, bytes: 0 };
  }
  reply.send(stream);
  return { counted: range === null || range.start === 0, bytes: length };
}
