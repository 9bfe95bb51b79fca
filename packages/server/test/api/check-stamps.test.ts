// The stamps answered checks gather (check/counters.ts CheckWrites): written a chunk of rows to a
// statement, every organisation's to its own rows only, a licence's at most once a minute.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckWrites } from '../../src/check/counters.js';
import { startHarness, type Harness } from '../harness.js';
import { createProduct, fingerprint, issueOk } from '../licence-helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

/** An organisation's licences, each with its one at-issue seat. */
async function licencesOf(slug: string, caller: Harness['admin'], count: number) {
  const productId = (await createProduct(caller)).id;
  for (let i = 0; i < count; i++) await issueOk(caller, { productId, licensee: `Stamped ${slug} ${i}`, fingerprint: fingerprint(`${slug}-${i}`) });
  const { id: orgId } = await h.database.db.selectFrom('organisations').select('id').where('slug', '=', slug).executeTakeFirstOrThrow();
  const rows = await h.database.db
    .selectFrom('licences as l')
    .innerJoin('machine_bindings as b', 'b.licence_id', 'l.id')
    .select(['l.id as licenceId', 'b.id as seatId'])
    .where('l.org_id', '=', orgId)
    .where('l.product_id', '=', productId)
    .orderBy('l.id')
    .execute();
  return { orgId, rows };
}

describe('gathered check stamps', () => {
  it('writes every stamp past a chunk, each organisation on its own rows, a licence stamped within the minute left as it is', async () => {
    const a = await licencesOf(h.slug, h.admin, 130);
    const other = await h.otherOrg();
    const b = await licencesOf(other.slug, other.admin, 3);
    const at = Date.now();
    const recent = a.rows[7]!.licenceId;
    await h.database.db
      .updateTable('licence_stamps')
      .set({ last_checked_at: at - 1_000 })
      .where('licence_id', '=', recent)
      .execute();

    const errors: unknown[] = [];
    const writes = new CheckWrites(h.database, (err) => errors.push(err));
    a.rows.forEach(({ licenceId, seatId }, i) => {
      writes.stampLicence(a.orgId, licenceId, at);
      writes.stampSeat(a.orgId, seatId, i % 2 === 0 ? { seenAt: at } : { label: `Machine ${i}` });
    });
    for (const { licenceId, seatId } of b.rows) {
      writes.stampLicence(b.orgId, licenceId, at + 5);
      writes.stampSeat(b.orgId, seatId, { seenAt: at + 5, label: 'Theirs' });
    }
    await writes.close();
    // Named under the wrong organisation: written nowhere.
    const misdirected = new CheckWrites(h.database, (err) => errors.push(err));
    misdirected.stampLicence(a.orgId, b.rows[0]!.licenceId, at + 120_000);
    misdirected.stampSeat(b.orgId, a.rows[0]!.seatId, { seenAt: at + 120_000, label: 'Not theirs' });
    await misdirected.close();
    expect(errors).toEqual([]);

    const licences = new Map(
      (await h.database.db.selectFrom('licence_stamps').select(['licence_id', 'last_checked_at']).execute()).map((r) => [r.licence_id, r.last_checked_at]),
    );
    const seats = new Map((await h.database.db.selectFrom('machine_bindings').select(['id', 'last_seen_at', 'label']).execute()).map((r) => [r.id, r]));
    a.rows.forEach(({ licenceId, seatId }, i) => {
      expect(licences.get(licenceId)).toBe(licenceId === recent ? at - 1_000 : at);
      expect(seats.get(seatId)).toMatchObject(i % 2 === 0 ? { last_seen_at: at, label: null } : { last_seen_at: null, label: `Machine ${i}` });
    });
    for (const { licenceId, seatId } of b.rows) {
      expect(licences.get(licenceId)).toBe(at + 5);
      expect(seats.get(seatId)).toMatchObject({ last_seen_at: at + 5, label: 'Theirs' });
    }
  });
});
