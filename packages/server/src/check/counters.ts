import { sql } from 'kysely';
import { transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { BUCKET_MS } from '../dashboard/service.js';

const FLUSH_MS = 1_000;
// lastCheckedAt and a seat's lastSeenAt move at most once a minute (DESIGN.md 5).
export const STAMP_INTERVAL_MS = 60_000;

interface SeatStamp {
  orgId: number;
  seenAt?: number;
  label?: string;
}

/**
 * What answered checks write, gathered in memory and written together every second in one
 * transaction: the dashboard's counts per (organisation, 15-minute bucket), `lastCheckedAt`
 * stamps and seats' `lastSeenAt` and label. A check then costs no write of its own. A Management
 * API request first waits for what this process has gathered (`settle`), so it reads every check
 * this process answered; another worker's or instance's stamps are at most a second behind.
 */
export class CheckWrites {
  private counts = new Map<string, { orgId: number; bucket: number; count: number }>();
  private licences = new Map<number, { orgId: number; at: number }>();
  private seats = new Map<number, SeatStamp>();
  private writing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly database: Database, private readonly onError: (err: unknown) => void) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS).unref();
  }

  /** Counts one check answered at `now`. */
  count(orgId: number, now: number): void {
    this.addCount(orgId, now - (now % BUCKET_MS), 1);
  }

  /** The licence was checked validly at `at` and its stamp is due. */
  stampLicence(orgId: number, licenceId: number, at: number): void {
    this.licences.set(licenceId, { orgId, at });
  }

  /** A seat was seen at `seenAt` (when due) or sent a new label. */
  stampSeat(orgId: number, seatId: number, change: { seenAt?: number; label?: string }): void {
    this.seats.set(seatId, { ...this.seats.get(seatId), orgId, ...change });
  }

  private addCount(orgId: number, bucket: number, count: number): void {
    const key = `${orgId}:${bucket}`;
    const entry = this.counts.get(key);
    if (entry) entry.count += count;
    else this.counts.set(key, { orgId, bucket, count });
  }

  private get pending(): boolean {
    return this.counts.size + this.licences.size + this.seats.size > 0;
  }

  /** Writes what was gathered, after any write already under way; a failed write keeps it for the next. */
  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  /** Returns once everything gathered so far is written (at once when nothing is). */
  settle(): Promise<void> {
    return this.pending ? this.flush() : this.writing;
  }

  private async write(): Promise<void> {
    if (!this.pending) return;
    const [counts, licences, seats] = [this.counts, this.licences, this.seats];
    this.counts = new Map();
    this.licences = new Map();
    this.seats = new Map();
    // Rows in one order everywhere (counts, then licences and seats by id), so that two workers'
    // writes wait for each other rather than deadlock.
    const byId = <T>(map: Map<number, T>) => [...map].sort(([a], [b]) => a - b);
    try {
      await transaction(this.database, async (trx) => {
        for (const { orgId, bucket, count } of [...counts.values()].sort((a, b) => a.orgId - b.orgId || a.bucket - b.bucket)) {
          await tenant(trx, orgId)
            .insertInto('check_counts', { bucket, count })
            .onConflict((oc) => oc.columns(['org_id', 'bucket']).doUpdateSet({ count: sql`check_counts.count + excluded.count` }))
            .execute();
        }
        // Conditional, so instances checking the same licence at once stamp it once.
        for (const [id, { orgId, at }] of byId(licences)) {
          await tenant(trx, orgId)
            .updateTable('licences')
            .set({ last_checked_at: at })
            .where('id', '=', id)
            .where((eb) => eb.or([eb('last_checked_at', 'is', null), eb('last_checked_at', '<=', at - STAMP_INTERVAL_MS)]))
            .execute();
        }
        for (const [id, { orgId, seenAt, label }] of byId(seats)) {
          await tenant(trx, orgId)
            .updateTable('machine_bindings')
            .set({ ...(seenAt === undefined ? {} : { last_seen_at: seenAt }), ...(label === undefined ? {} : { label }) })
            .where('id', '=', id)
            .execute();
        }
      });
    } catch (err) {
      this.onError(err);
      for (const { orgId, bucket, count } of counts.values()) this.addCount(orgId, bucket, count);
      for (const [id, stamp] of licences) if (!this.licences.has(id)) this.licences.set(id, stamp);
      for (const [id, stamp] of seats) this.seats.set(id, { ...stamp, ...this.seats.get(id) });
    }
  }

  /** Stops the timer and writes the rest (on app close). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
