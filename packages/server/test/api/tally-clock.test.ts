// Issue 34: an issue reads the tally clock in its first statement, the one that takes the clock's
// lock, and that statement's snapshot may predate the lock's grant. A clock moved past the new
// licence's start while the issue waited for the lock must be found, and the licence judged at it.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tenant } from '../../src/db/tenant.js';
import { STATUSES } from '../../src/listings/filter.js';
import { tallies } from '../../src/listings/repos/tallies.js';
import { findOrganisationBySlug } from '../../src/orgs/repo.js';
import { backend, startHarness, type Harness } from '../harness.js';
import { addDays, createProduct, issueOk, startUtc, todayUtc } from '../licence-helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

/** An organisation of the test's own with a product, a token and one licence issued. */
async function organisation() {
  // Advisory locks belong to the database, shared by the test schemas: an organisation id of its own.
  const orgId = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
  await sql`alter table organisations alter column id restart with ${sql.lit(orgId)}`.execute(h.database.db);
  const org = await h.otherOrg();
  const call = h.as({ token: await h.createToken(['licenses:write', 'licenses:read'], org.slug) }, org.slug);
  const productId = (await createProduct(org.admin)).id;
  await issueOk(call, { productId, licensee: 'Before', validityMonths: 12 });
  return { orgId, slug: org.slug, call, productId };
}

/**
 * Backends waiting for a lock `client` holds, or for one held by such a backend. `client` is inside
 * its transaction, where PostgreSQL keeps the first pg_stat_activity it read until the end: cleared
 * first, so a backend connected since (a pool's new connection) is seen.
 */
const blocked = async (client: pg.Client) => {
  await client.query('select pg_stat_clear_snapshot()');
  return (
    await client.query(`
      with direct as (select pid from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid)))
      select pid from direct union select pid from pg_stat_activity where pg_blocking_pids(pid) && array(select pid from direct)`)
  ).rowCount;
};

/** The organisation's tallies of a product that hold any licence. */
const talliesOf = async (orgId: number, productId: number) =>
  (
    await h.database.db
      .selectFrom('licence_tallies')
      .select(['status', 'n'])
      .where('org_id', '=', orgId)
      .where('product_id', '=', productId)
      .where('n', '<>', 0)
      .orderBy('status')
      .execute()
  ).map((t) => [t.status, Number(t.n)]);

// SQLite's writer holds the whole database from BEGIN IMMEDIATE: no clock moves under it.
describe.runIf(backend === 'postgres')('the tally clock an issue reads before its lock is granted', () => {
  it('is read again when it moved past the licence’s start meanwhile, and the licence judged at it', async () => {
    const { orgId, call, productId } = await organisation();
    const tomorrow = addDays(todayUtc(), 1);
    const movedTo = Date.parse(startUtc(tomorrow)) + 3_600_000;

    // What an advance does, held open: the clock's lock taken exclusively, the clock moved on.
    const mover = new pg.Client({ connectionString: h.config.databaseUrl! });
    await mover.connect();
    try {
      await mover.query('begin');
      await mover.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`licence tally clock ${orgId}`]);
      await mover.query('update licence_tally_clocks set as_of = $1 where org_id = $2', [movedTo, orgId]);
      const issuing = call('POST', '/licenses', { productId, licensee: 'Starts tomorrow', startsOn: tomorrow });
      // The issue's first statement has begun (its snapshot taken) and waits for the lock.
      await vi.waitFor(async () => expect(await blocked(mover)).toBe(1), { timeout: 10_000 });
      await mover.query('commit');
      const issued = await issuing;
      expect(issued.statusCode, issued.body).toBe(201);

      // PENDING at the clock the issue read first; ACTIVE at the clock it holds.
      const row = await h.database.db.selectFrom('licences').select('status_rank').where('lid', '=', issued.data.lid).executeTakeFirstOrThrow();
      expect(STATUSES[row.status_rank!]).toBe('ACTIVE');
      expect(await talliesOf(orgId, productId)).toEqual([['ACTIVE', 2]]);
    } finally {
      await mover.end();
    }
    // Read now, before the licence starts: the totals follow the clock back.
    expect((await call('GET', `/licenses/page?status=PENDING&productId=${productId}&limit=1`)).data.total).toBe(1);
    expect((await call('GET', `/licenses/page?status=ACTIVE&productId=${productId}&limit=1`)).data.total).toBe(1);
  });
  it('is read again by a renewal that moves no tally at the clock it read first, and the licence judged at the clock moved on', async () => {
    const { orgId, slug, call, productId } = await organisation();
    const tomorrow = addDays(todayUtc(), 1);
    // PENDING now, EXPIRED two months on; renewed by a year, still PENDING now but ACTIVE then.
    const { lid } = await issueOk(call, { productId, licensee: 'Renewed', startsOn: tomorrow, validityMonths: 1, graceDays: 0 });
    const later = Date.parse(startUtc(addDays(tomorrow, 61)));
    const org = (await findOrganisationBySlug(h.database.db, slug))!;

    // A read at `later` moves the clock there (listings/repos/tallies.ts advance), held at its last
    // step by a lock on the clock row, so it holds the clock's own lock meanwhile.
    const holder = new pg.Client({ connectionString: h.config.databaseUrl! });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select as_of from licence_tally_clocks where org_id = $1 for update', [orgId]);
      const reading = tallies({ database: h.database, org, tenant: tenant(h.database.db, orgId), now: later });
      await vi.waitFor(async () => expect(await blocked(holder)).toBe(1), { timeout: 10_000 });
      const renewing = call('POST', `/licenses/${lid}/renew`, { validityMonths: 12 });
      await vi.waitFor(async () => expect(await blocked(holder)).toBe(2), { timeout: 10_000 });
      await holder.query('commit');
      await reading;
      const renewed = await renewing;
      expect(renewed.statusCode, renewed.body).toBe(200);
    } finally {
      await holder.end();
    }
    const row = await h.database.db.selectFrom('licences').select('status_rank').where('lid', '=', lid).executeTakeFirstOrThrow();
    expect(STATUSES[row.status_rank!]).toBe('ACTIVE');
    expect(await talliesOf(orgId, productId)).toEqual([['ACTIVE', 2]]);
  });
});
