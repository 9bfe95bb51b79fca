import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError } from '../core/errors.js';

/** DESIGN.md 20: what the store reports of an object once written (digests lowercase hex). */
export interface StoredObject {
  size: number;
  sha256: string;
  sha512: string;
}

/** Where artifact bytes live: a directory (disk) or an S3 bucket (releases/s3-store.ts). */
export interface ArtifactStore {
  readonly backend: 'disk' | 's3';
  /** Streams `body` into a new object at `key`, hashing as it goes; over `maxBytes` rejects with ApiError 413, empty with 400; on any failure leaves nothing behind. */
  put(key: string, body: NodeJS.ReadableStream, maxBytes: number, contentType: string): Promise<StoredObject>;
  /** Disk: an open read of [start, end] inclusive; s3: null (the caller presigns instead). */
  read(key: string, start?: number, end?: number): NodeJS.ReadableStream | null;
  /** s3: a presigned GET URL carrying type and disposition; disk: null. */
  presign(key: string, expiresSeconds: number, contentType: string, filename: string): Promise<string | null>;
  delete(key: string): Promise<void>;
  /** Re-hash for `licensor artifacts verify`: null when missing. */
  hash(key: string): Promise<StoredObject | null>;
  /** Remove leftovers (disk: `.tmp/` files older than an hour) at start. */
  sweep(): Promise<void>;
  up(): Promise<boolean>;
}

export const TOO_LARGE = 'the file is larger than this service accepts';
const EMPTY = 'the file is empty';
const SWEEP_AGE_MS = 3_600_000;
const READ_CHUNK = 256 * 1024;

/** A pass-through that hashes and counts, failing with 413 once more than `maxBytes` went by. */
export class HashingCounter extends Transform {
  size = 0;
  private readonly h256 = createHash('sha256');
  private readonly h512 = createHash('sha512');
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null, data?: Buffer) => void): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      callback(new ApiError(413, TOO_LARGE));
      return;
    }
    this.h256.update(chunk);
    this.h512.update(chunk);
    callback(null, chunk);
  }
  result(): StoredObject {
    if (this.size === 0) throw new ApiError(400, EMPTY);
    return { size: this.size, sha256: this.h256.digest('hex'), sha512: this.h512.digest('hex') };
  }
}

/** What a stored object's bytes measure now, an empty one included (`licensor artifacts verify`). */
export async function hashOf(stream: NodeJS.ReadableStream): Promise<StoredObject> {
  const h256 = createHash('sha256');
  const h512 = createHash('sha512');
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    h256.update(chunk);
    h512.update(chunk);
  }
  return { size, sha256: h256.digest('hex'), sha512: h512.digest('hex') };
}

/** `Content-Disposition` of a delivered file, from disk or in a presigned S3 URL. */
export function contentDisposition(filename: string): string {
  return `attachment; filename="${filename}"`;
}

/** Keys are `{orgId}/{releaseId}/{32 hex}/{filename}`; anything else never reaches the disk. */
function safeKey(key: string): string {
  const parts = key.split('/');
  if (parts.length !== 4 || parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('.') || p.includes('\\') || p.includes('\0'))) {
    throw new Error('invalid artifact key');
  }
  return parts.join(path.sep);
}

export class DiskArtifactStore implements ArtifactStore {
  readonly backend = 'disk' as const;
  private readonly tmpDir: string;
  constructor(readonly dir: string) {
    this.tmpDir = path.join(dir, '.tmp');
  }

  private file(key: string): string {
    return path.join(this.dir, safeKey(key));
  }

  async put(key: string, body: NodeJS.ReadableStream, maxBytes: number, _contentType: string): Promise<StoredObject> {
    const target = this.file(key);
    await fs.mkdir(this.tmpDir, { recursive: true });
    const tmp = path.join(this.tmpDir, `${randomBytes(16).toString('hex')}.part`);
    const counter = new HashingCounter(maxBytes);
    try {
      await pipeline(body, counter, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
      const stored = counter.result();
      const handle = await fs.open(tmp, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.rename(tmp, target);
      await syncDir(path.dirname(target));
      return stored;
    } catch (error) {
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      throw error;
    }
  }

  read(key: string, start?: number, end?: number): NodeJS.ReadableStream | null {
    // 256 KiB reads (Node's default is 64 KiB): a quarter of the reads and socket writes per file,
    // for a buffer per download that stays small beside the socket's own.
    return createReadStream(this.file(key), { start, end, highWaterMark: READ_CHUNK });
  }

  async presign(): Promise<string | null> {
    return null;
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key);
    await fs.rm(file, { force: true });
    // The per-artifact directory ({orgId}/{releaseId}/{hex}) holds only this file.
    await fs.rmdir(path.dirname(file)).catch(() => undefined);
  }

  async hash(key: string): Promise<StoredObject | null> {
    const file = this.file(key);
    try {
      await fs.access(file);
    } catch {
      return null;
    }
    return hashOf(createReadStream(file));
  }

  async sweep(): Promise<void> {
    let names: string[];
    try {
      names = await fs.readdir(this.tmpDir);
    } catch {
      return;
    }
    const cutoff = Date.now() - SWEEP_AGE_MS;
    for (const name of names) {
      const file = path.join(this.tmpDir, name);
      try {
        const stat = await fs.stat(file);
        if (stat.isFile() && stat.mtimeMs < cutoff) await fs.rm(file, { force: true });
      } catch {
        // Gone meanwhile (another instance sweeping): nothing to do.
      }
    }
  }

  async up(): Promise<boolean> {
    try {
      await fs.mkdir(this.tmpDir, { recursive: true });
      await fs.access(this.tmpDir, fs.constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }
}

async function syncDir(dir: string): Promise<void> {
  try {
    const handle = await fs.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some file systems cannot fsync a directory; the rename has happened either way.
  }
}
