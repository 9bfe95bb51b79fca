import { transaction, type Database, type Trx } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { addCheckCount, stampLicences, stampSeats } from './repo.js';
import { BUCKET_MS } from '../dashboard/repo.js';

const FLUSH_MS = 1_000;
const FLUSH_CHUNK = 100;
// lastCheckedAt and a seat's lastSeenAt move at most once a minute (DESIGN.md 5).
export const STAMP_INTERVAL_MS = 60_000;

interface SeatStamp {
  orgId: number;
  seenAt?: number;
  label?: string;
}

/**
 * What answered checks write, gathered in memory and written together every second, in
 * statements of at most FLUSH_CHUNK rows: the dashboard's counts per (organisation, 15-minute bucket), `lastCheckedAt`
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

  constructor(
    private readonly database: Database,
    private readonly onError: (err: unknown) => void,
  ) {
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
    // Rows in one order everywhere (counts, then licences and seats by organisation and id), so
    // that two workers' writes wait for each other rather than deadlock.
    const chunks = <T extends { orgId: number }>(map: Map<number, T>) => {
      const sorted = [...map].sort(([a, x], [b, y]) => x.orgId - y.orgId || a - b);
      const out: Array<Array<[number, T]>> = [];
      for (const entry of sorted) {
        const last = out.at(-1);
        if (last && last.length < FLUSH_CHUNK && last[0]![1].orgId === entry[1].orgId) last.push(entry);
        else out.push([entry]);
      }
      return out;
    };
    const writes: Array<{ run: (trx: Trx) => Promise<unknown>; keep: () => void }> = [
      ...[...counts.values()]
        .sort((a, b) => a.orgId - b.orgId || a.bucket - b.bucket)
        .map(({ orgId, bucket, count }) => ({
          run: (trx: Trx) => addCheckCount(tenant(trx, orgId), bucket, count),
          keep: () => this.addCount(orgId, bucket, count),
        })),
      ...chunks(licences).map((chunk) => ({
        run: (trx: Trx) => stampLicences(tenant(trx, chunk[0]![1].orgId), JSON.stringify(chunk.map(([id, stamp]) => [id, stamp.at])), STAMP_INTERVAL_MS),
        keep: () => {
          for (const [id, stamp] of chunk) if (!this.licences.has(id)) this.licences.set(id, stamp);
        },
      })),
      ...chunks(seats).map((chunk) => ({
        run: (trx: Trx) =>
          stampSeats(tenant(trx, chunk[0]![1].orgId), JSON.stringify(chunk.map(([id, stamp]) => [id, stamp.seenAt ?? null, stamp.label ?? null]))),
        keep: () => {
          for (const [id, stamp] of chunk) this.seats.set(id, { ...stamp, ...this.seats.get(id) });
        },
      })),
    ];
    // One statement a transaction, with the event loop let go between them: better-sqlite3 never
    // yields, so a second's stamps in one go held every check back until all were written.
    for (let i = 0; i < writes.length; i++) {
      if (i > 0) await new Promise(setImmediate);
      try {
        await transaction(this.database, (trx) => writes[i]!.run(trx));
      } catch (err) {
        this.onError(err);
        for (const write of writes.slice(i)) write.keep();
        return;
      }
    }
  }

  /** Stops the timer and writes the rest (on app close). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
