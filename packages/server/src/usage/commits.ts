import type { Ctx } from '../core/context.js';
import { transactionEndingIn } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { applyEvents, type Applied, type UsageRequest } from './service.js';

type Scope = Pick<Ctx, 'database' | 'org'>;

interface Waiting {
  scope: Scope;
  request: UsageRequest;
  resolve: (applied: Applied) => void;
  reject: (err: unknown) => void;
}

interface Organisation {
  waiting: Waiting[];
  /** The licences of the batches being committed. */
  busy: Set<number>;
  running: number;
  scheduled: boolean;
}

/** Batches of one organisation committing at once on PostgreSQL. */
const PARALLEL = 4;

/** Requests one transaction takes at most: its statements' JSON parameters stay small. */
const MOST = 64;

/**
 * Group commit of the usage route's writes (docs/benchmarks.md, bench:usage): the requests of one
 * organisation that arrive together go to the database as one transaction (one lock statement,
 * one read, one INSERT and count upsert sent with the commit, for all), where each request's own
 * transaction had cost it as much as its events. A licence is in one batch at a time: a later
 * request of it waits for the batch holding it to commit, so it sees the earlier one's results,
 * in the order they arrived. A batch that fails is tried again one request at a time, so one
 * request's failure is its own. `parallel` batches of an organisation commit at once (on
 * PostgreSQL, so its round trips overlap; SQLite has one writer); their licences never overlap,
 * and on any number of instances the licence-row locks, taken in id order, serialise batches as
 * they did single requests.
 */
export class UsageCommits {
  private readonly orgs = new Map<number, Organisation>();

  private readonly parallel: number;

  /**
   * Each organisation's timezone as the last batch found it stored: the check path's cached
   * organisation keeps the one it was read with, and a batch reads its counts for the period keys
   * of the timezone it expects (applyEvents).
   */
  private readonly timezones = new Map<number, string>();

  constructor(dialect: Ctx['database']['dialect']) {
    this.parallel = dialect === 'postgres' ? PARALLEL : 1;
  }

  /** The requests' events applied in one transaction, their writes sent with its COMMIT. */
  private commit(scope: Scope, requests: readonly UsageRequest[]): Promise<Applied[]> {
    return transactionEndingIn(scope.database, async (db) => {
      const expected = this.timezones.get(scope.org.id) ?? scope.org.timezone;
      const { applied, writes, timeZone } = await applyEvents(tenant(db, scope.org.id), requests, expected);
      if (timeZone !== expected) this.timezones.set(scope.org.id, timeZone);
      return { result: applied, last: writes };
    });
  }

  apply(scope: Scope, request: UsageRequest): Promise<Applied> {
    return new Promise((resolve, reject) => {
      let org = this.orgs.get(scope.org.id);
      if (!org) this.orgs.set(scope.org.id, (org = { waiting: [], busy: new Set(), running: 0, scheduled: false }));
      org.waiting.push({ scope, request, resolve, reject });
      this.schedule(scope.org.id, org);
    });
  }

  /** A batch is cut in the next turn, so the requests arriving in this one join it. */
  private schedule(orgId: number, org: Organisation): void {
    if (org.scheduled || org.running >= this.parallel || org.waiting.length === 0) return;
    org.scheduled = true;
    setImmediate(() => {
      org.scheduled = false;
      void this.send(orgId, org);
    });
  }

  private async send(orgId: number, org: Organisation): Promise<void> {
    const batch: Waiting[] = [];
    const later: Waiting[] = [];
    const held = new Set(org.busy);
    for (const item of org.waiting) {
      if (batch.length < MOST && !held.has(item.request.licence.id)) batch.push(item);
      else later.push(item);
      held.add(item.request.licence.id);
    }
    org.waiting = later;
    if (batch.length === 0) return;
    for (const item of batch) org.busy.add(item.request.licence.id);
    org.running++;
    this.schedule(orgId, org);
    try {
      const applied = await this.commit(
        batch[0]!.scope,
        batch.map((item) => item.request),
      );
      for (const [i, item] of batch.entries()) item.resolve(applied[i]!);
    } catch (err) {
      if (batch.length === 1) batch[0]!.reject(err);
      else await Promise.all(batch.map((item) => this.commit(item.scope, [item.request]).then(([applied]) => item.resolve(applied!), item.reject)));
    }
    for (const item of batch) org.busy.delete(item.request.licence.id);
    org.running--;
    if (org.running === 0 && org.waiting.length === 0) this.orgs.delete(orgId);
    else this.schedule(orgId, org);
  }
}
