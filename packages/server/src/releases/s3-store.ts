import { finished } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Settings } from '../config.js';
import { ApiError } from '../core/errors.js';
import { type ArtifactStore, contentDisposition, HashingCounter, hashOf, type StoredObject } from './store.js';

const STORE_UNREACHABLE = 'the artifact store cannot be reached just now; try again shortly';

/** Whether the SDK's error says the object is not there (GetObject's NoSuchKey, HeadObject's bare 404). */
const isMissing = (err: unknown) =>
  (err as { name?: string }).name === 'NoSuchKey' || (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404;

/**
 * DESIGN.md 20's S3 store: objects at `{prefix}/{key}` in one bucket, uploaded by lib-storage
 * (one PUT, or a multipart upload it aborts on failure), delivered by presigned GETs. Checksums
 * only where S3 requires them: S3-compatible stores differ in the ones they accept, and the
 * service hashes every byte itself.
 */
export class S3ArtifactStore implements ArtifactStore {
  readonly backend = 's3' as const;
  private readonly client: S3Client;
  constructor(
    private readonly bucket: string,
    private readonly prefix: string,
    settings: S3Settings,
  ) {
    this.client = new S3Client({
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      ...(settings.credentials ? { credentials: settings.credentials } : {}),
    });
  }

  private object(key: string) {
    return { Bucket: this.bucket, Key: this.prefix === '' ? key : `${this.prefix}/${key}` };
  }

  async put(key: string, body: NodeJS.ReadableStream, maxBytes: number, contentType: string): Promise<StoredObject> {
    const counter = new HashingCounter(maxBytes);
    // pipe, not pipeline: a failed upload stops reading without destroying the request, which still
    // carries the 503. A body that breaks off (an error, or closed before its end) fails the upload.
    finished(body, (error) => {
      if (error) counter.destroy(error);
    });
    body.pipe(counter);
    try {
      await new Upload({ client: this.client, params: { ...this.object(key), Body: counter, ContentType: contentType } }).done();
    } catch (err) {
      // The body's own failure (over the bound, the client gone) wins over what the store said of it:
      // an abort the store refuses must not turn a 413 into a 503.
      if (counter.errored) throw counter.errored;
      throw err instanceof ApiError ? err : new ApiError(503, STORE_UNREACHABLE);
    }
    try {
      return counter.result();
    } catch (err) {
      await this.delete(key).catch(() => undefined);
      throw err;
    }
  }

  read(): NodeJS.ReadableStream | null {
    return null;
  }

  /** After a HEAD of the object, so a store down or an object lost is the service's 503, not a redirect to an error. */
  async presign(key: string, expiresSeconds: number, contentType: string, filename: string): Promise<string | null> {
    await this.client.send(new HeadObjectCommand(this.object(key)));
    const get = new GetObjectCommand({ ...this.object(key), ResponseContentType: contentType, ResponseContentDisposition: contentDisposition(filename) });
    return getSignedUrl(this.client, get, { expiresIn: expiresSeconds });
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand(this.object(key)));
  }

  async hash(key: string): Promise<StoredObject | null> {
    try {
      const answer = await this.client.send(new GetObjectCommand(this.object(key)));
      return await hashOf(answer.Body as NodeJS.ReadableStream);
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  /** Nothing: a crash's incomplete multipart uploads go by the bucket's lifecycle rule (README). */
  async sweep(): Promise<void> {}

  async up(): Promise<boolean> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      return true;
    } catch {
      return false;
    }
  }
}
