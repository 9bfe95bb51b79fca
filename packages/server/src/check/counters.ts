import { sql } from 'kysely';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { BUCKET_MS } from '../dashboard/service.js';

const FLUSH_MS = 5_000;

/**
 * Checks answered, counted per (organisation, 15-minute bucket) in memory and added to
 * `check_counts` every few seconds, so the dashboard's series costs no write per check.
 */
export class CheckCounter {
  private pending = new Map<string, { orgId: number; bucket: number; count: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly database: Database, private readonly onError: (err: unknown) => void) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS).unref();
  }

  /** Counts one check answered at `now`. */
  add(orgId: number, now: number): void {
    this.addTo(orgId, now - (now % BUCKET_MS), 1);
  }

  private addTo(orgId: number, bucket: number, count: number): void {
    const key = `${orgId}:${bucket}`;
    const entry = this.pending.get(key);
    if (entry) entry.count += count;
    else this.pending.set(key, { orgId, bucket, count });
  }

  /** Writes what was counted; a failed write keeps the counts for the next flush. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    for (const { orgId, bucket, count } of batch) {
      try {
        await tenant(this.database.db, orgId)
          .insertInto('check_counts', { bucket, count })
          .onConflict((oc) => oc.columns(['org_id', 'bucket']).doUpdateSet({ count: sql`check_counts.count + excluded.count` }))
          .execute();
      } catch (err) {
        this.onError(err);
        this.addTo(orgId, bucket, count);
      }
    }
  }

  /** Stops the timer and writes the rest (on app close). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
