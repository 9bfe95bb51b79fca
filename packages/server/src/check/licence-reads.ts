import type { Tenant } from '../db/tenant.js';
import { readLicenceRows, readLicenceRowsBatch } from './repo.js';

type Row = Awaited<ReturnType<typeof readLicenceRows>>[number];

interface Waiting {
  productId: number;
  lid: string;
  now: number;
  digest: string;
  resolve: (row: Row | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * The check path's licence reads outside a transaction. On PostgreSQL the reads of the checks
 * that arrive together (in one turn of the event loop) go to the database as one statement per
 * organisation: a round trip's socket write and the driver's work per statement were the larger
 * part of a check's cost beyond its signature (docs/benchmarks.md, bench:check:outside). Each
 * read is still made after its request arrived, so it sees every change committed before that:
 * nothing is remembered between turns. SQLite answers in process, one read at a time.
 */
export class LicenceReads {
  private readonly waiting = new Map<number, { t: Tenant; reads: Waiting[] }>();

  constructor(private readonly batched: boolean) {}

  read(t: Tenant, productId: number, lid: string, now: number, digest: string): Promise<Row | undefined> {
    if (!this.batched) return readLicenceRows(t, productId, lid, now, digest).then((rows) => rows[0]);
    return new Promise((resolve, reject) => {
      let group = this.waiting.get(t.orgId);
      if (!group) {
        this.waiting.set(t.orgId, (group = { t, reads: [] }));
        setImmediate(() => this.send(t.orgId));
      }
      group.reads.push({ productId, lid, now, digest, resolve, reject });
    });
  }

  private async send(orgId: number): Promise<void> {
    const { t, reads } = this.waiting.get(orgId)!;
    this.waiting.delete(orgId);
    try {
      if (reads.length === 1) {
        const [only] = reads as [Waiting];
        only.resolve((await readLicenceRows(t, only.productId, only.lid, only.now, only.digest))[0]);
        return;
      }
      const rows = await readLicenceRowsBatch(t, JSON.stringify(reads.map((r, i) => [i, r.productId, r.lid, r.now, r.digest])));
      const answered = new Map(rows.map(({ i, ...row }) => [i, row as Row]));
      for (const [i, read] of reads.entries()) read.resolve(answered.get(i));
    } catch (err) {
      for (const read of reads) read.reject(err);
    }
  }
}
