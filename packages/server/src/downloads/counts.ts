import { type Database, transaction } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { addDownloadCount } from './repo.js';

const FLUSH_MS = 1_000;

interface Pending {
  orgId: number;
  artifactId: number;
  day: string;
  count: number;
}

/**
 * Downloads as DESIGN.md 20 counts them (a grant or `files/` GET answered 200, 303, or 206 from byte 0),
 * gathered in memory per artifact and local date and written every second, as CheckWrites does for
 * checks: a download costs no write of its own. A failed write keeps its counts for the next.
 */
export class DownloadCounts {
  private counts = new Map<string, Pending>();
  private writing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  /** Counted downloads since start, for /metrics. */
  total = 0;

  constructor(
    private readonly database: Database,
    private readonly onError: (err: unknown) => void,
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS).unref();
  }

  /** One download of the artifact on the organisation's local date `day` (YYYY-MM-DD). */
  count(orgId: number, artifactId: number, day: string): void {
    this.total++;
    this.add({ orgId, artifactId, day, count: 1 });
  }

  private add(entry: Pending): void {
    const key = `${entry.artifactId}:${entry.day}`;
    const had = this.counts.get(key);
    if (had) had.count += entry.count;
    else this.counts.set(key, { ...entry });
  }

  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  /** Returns once everything gathered so far is written. */
  settle(): Promise<void> {
    return this.counts.size > 0 ? this.flush() : this.writing;
  }

  private async write(): Promise<void> {
    if (this.counts.size === 0) return;
    const batch = [...this.counts.values()].sort((a, b) => a.orgId - b.orgId || a.artifactId - b.artifactId || (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
    this.counts = new Map();
    for (let i = 0; i < batch.length; i++) {
      if (i > 0) await new Promise(setImmediate);
      const entry = batch[i] as Pending;
      try {
        await transaction(this.database, (trx) => addDownloadCount(tenant(trx, entry.orgId), entry.artifactId, entry.day, entry.count));
      } catch (err) {
        this.onError(err);
        for (const kept of batch.slice(i)) this.add(kept);
        return;
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
