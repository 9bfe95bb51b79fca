import type { Config } from '../config.js';
import { ApiError } from '../core/errors.js';
import { S3ArtifactStore } from './s3-store.js';
import { type ArtifactStore, DiskArtifactStore } from './store.js';

/**
 * DESIGN.md 20: "each artifact keeps its backend". Uploads go to the configured store; an artifact
 * is read, hashed and deleted in the one its row names: the disk directory is always known, a
 * bucket only while `LICENSOR_ARTIFACT_STORE` names it.
 */
export class ArtifactStores {
  private readonly disk: DiskArtifactStore;
  readonly current: ArtifactStore;
  constructor(config: Pick<Config, 'artifactStore' | 'artifactDir'>) {
    this.disk = new DiskArtifactStore(config.artifactDir);
    const store = config.artifactStore;
    this.current = store.kind === 's3' ? new S3ArtifactStore(store.bucket, store.prefix, store) : this.disk;
  }

  /** The store an artifact of `backend` lives in; 503 when this service is not configured to reach it. */
  of(backend: string): ArtifactStore {
    if (backend === this.current.backend) return this.current;
    if (backend === 'disk') return this.disk;
    throw new ApiError(503, 'this file is kept in S3, and LICENSOR_ARTIFACT_STORE no longer names its bucket');
  }

  /** Removes an artifact's bytes after its row is gone; a failure leaves bytes nothing serves. */
  async discard(artifact: { backend: string; storage_key: string }): Promise<void> {
    try {
      await this.of(artifact.backend).delete(artifact.storage_key);
    } catch {
      // Unreferenced bytes are harmless; the operator's bucket or directory is theirs to tidy.
    }
  }
}
