// Floating licences (DESIGN.md 13): leases taken, renewed, lapsed, released and borrowed.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPublicKey } from 'node:crypto';
import { buildFingerprint, fpDigest, parseLicence } from '@licensor/protocol';
import { javaAvailable, javaVerify } from '../../../protocol/test/java-verifier.js';
import { startHarness, type Harness } from '../harness.js';
import { checkBody, checkedProduct, nonce, receiptVerifies, type CheckedProduct } from '../check-helpers.js';
import { createProduct, fingerprint, licenceRow } from '../licence-helpers.js';

let h: Harness;
let p: CheckedProduct;
const LEASE = 600;
const MIN = 60_000;

beforeAll(async () => {
  h = await startHarness();
  p = await floatingProduct({ maxBorrowSeconds: 86_400, maxMachines: 3, maxBorrowedSeats: 1 });
});
afterAll(() => h?.close());
afterEach(() => {
  vi.useRealTimers();
});

/** A FLOATING product with a check token, 600-second leases unless said otherwise. */
const floatingProduct = (body: Record<string, unknown> = {}) =>
  checkedProduct(h, { seatModel: 'FLOATING', allowedLicenceTypes: ['ONLINE'], leaseSeconds: LEASE, ...body });

/** The service's clock, moved by `ms` from where it stands (no sleeping). */
let clock = 0;
function startClock() {
  clock = Date.now();
  vi.useFakeTimers({ toFake: ['Date'], now: clock });
}
function advance(ms: number) {
  clock += ms;
  vi.setSystemTime(clock);
}

const leaseRows = async (lid: string) => {
  const licence = await licenceRow(h, lid);
  return h.database.db.selectFrom('machine_bindings').selectAll().where('licence_id', '=', licence.id).orderBy('id').execute();
};

describe('floating products', () => {
  it('default to node-locked with 900-second leases, no borrowing and every seat borrowable', async () => {
    const product = await createProduct(h.admin, { maxMachines: 4 });
    expect(product).toMatchObject({
      seatModel: 'NODE_LOCKED',
      leaseSeconds: 900,
      maxBorrowSeconds: 0,
      maxBorrowedSeats: 4,
      licenceFetchEnabled: false,
      licenceType: 'OFFLINE',
    });
    const edited = await h.admin('PUT', `/products/${product.id}`, { maxMachines: 6 });
    expect(edited.data.maxBorrowedSeats).toBe(6);
  });

  it('make a FLOATING product ONLINE with licence fetch unless told otherwise', async () => {
    const product = await createProduct(h.admin, { seatModel: 'FLOATING' });
    expect(product).toMatchObject({ seatModel: 'FLOATING', licenceType: 'ONLINE', allowedLicenceTypes: ['ONLINE'], licenceFetchEnabled: true });
    const off = await createProduct(h.admin, { seatModel: 'FLOATING', licenceFetchEnabled: false });
    expect(off.licenceFetchEnabled).toBe(false);
  });

  it.each([
    [{ seatModel: 'FLOATING', leaseSeconds: 59 }, /^Lease seconds \(leaseSeconds\): a whole number from 60 to 3,600$/],
    [{ seatModel: 'FLOATING', leaseSeconds: 3_601 }, /^Lease seconds \(leaseSeconds\): a whole number from 60 to 3,600$/],
    [{ seatModel: 'FLOATING', maxBorrowSeconds: 2_592_001 }, /^Max borrow seconds \(maxBorrowSeconds\): a whole number from 0 to 2,592,000$/],
    [{ seatModel: 'FLOATING', maxBorrowSeconds: -1 }, /^Max borrow seconds \(maxBorrowSeconds\): a whole number from 0 to 2,592,000$/],
    [{ seatModel: 'FLOATING', maxMachines: 2, maxBorrowedSeats: 3 }, /maxBorrowedSeats/],
    [{ seatModel: 'FLOATING', licenceType: 'OFFLINE' }, /ONLINE/],
    [{ seatModel: 'FLOATING', allowedLicenceTypes: ['ONLINE', 'HYBRID'], licenceType: 'ONLINE' }, /ONLINE/],
    [{ seatModel: 'FLOATING', params: [{ key: 'lse', type: 'STRING' }] }, /lse/],
    [{ seatModel: 'FLOATING', params: [{ key: 'brw', type: 'INTEGER' }] }, /brw/],
    [{ seatModel: 'LEASED' }, /^Seat model \(seatModel\): one of NODE_LOCKED or FLOATING$/],
  ])('refuses %j with a 400 naming the field', async (body, field) => {
    const before = (await h.admin('GET', '/products')).data.length;
    const refused = await h.admin('POST', '/products', { productKey: 'refused-floating', name: 'Refused', ...body });
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(field);
    expect((await h.admin('GET', '/products')).data).toHaveLength(before);
  });

  it('keeps lse and brw for node-locked products, which then cannot become FLOATING', async () => {
    const product = await createProduct(h.admin, { licenceType: 'ONLINE', params: [{ key: 'lse', type: 'STRING' }] });
    const refused = await h.admin('PUT', `/products/${product.id}`, { seatModel: 'FLOATING', allowedLicenceTypes: ['ONLINE'] });
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(/"lse".*cannot be FLOATING/);
    expect((await h.admin('GET', `/products/${product.id}`)).data.seatModel).toBe('NODE_LOCKED');
  });
});

describe('issuing a floating licence', () => {
  it('signs v 5 with lse and brw after max, and keeps its seat model when the product changes', async () => {
    const product = await floatingProduct({ maxBorrowSeconds: 3_600, params: [{ key: 'edition', type: 'STRING', defaultValue: 'pro' }] });
    const licence = await product.issue({ maxMachines: 5 });
    expect(licence.seatModel).toBe('FLOATING');
    const claims = parseLicence(licence.licenseString).claims;
    expect(claims).toMatchObject({ v: 5, typ: 'ONLINE', mm: 5, lse: LEASE, brw: 3_600 });
    expect(Object.keys(claims).slice(-4)).toEqual(['max', 'lse', 'brw', 'edition']);

    const switched = await h.admin('PUT', `/products/${product.id}`, { seatModel: 'NODE_LOCKED' });
    expect(switched.statusCode).toBe(200);
    const renewed = await h.admin('POST', `/licenses/${licence.lid}/renew`, {});
    expect(renewed.statusCode).toBe(200);
    expect(renewed.data.seatModel).toBe('FLOATING');
    expect(parseLicence(renewed.data.licenseString).claims.v).toBe(5);
    expect((await product.issue()).seatModel).toBe('NODE_LOCKED');
  });

  it('refuses at-issue fingerprints', async () => {
    const refused = await h.admin('POST', '/licenses', { productId: p.id, licensee: 'Nope', fingerprint: fingerprint('at-issue') });
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(/FLOATING.*at-issue/);
  });
});

describe('leases', () => {
  it('are taken, signed with SVCR2, renewed only past half a lease, and lapse by time alone', async () => {
    startClock();
    const licence = await p.issue({ maxMachines: 2 });
    const a = checkBody(licence.licenseString, 'lease-a');
    const taken = await p.check(a);
    expect(taken.data).toMatchObject({ valid: true, status: 'ACTIVE', boundAt: taken.data.checkedAt });
    expect(Date.parse(taken.data.leaseEndsAt)).toBe(Date.parse(taken.data.checkedAt) + LEASE * 1000);
    expect(receiptVerifies(taken.data, a.fingerprint, p.publicKeyPem, 'SVCR2')).toBe(true);
    expect(receiptVerifies({ ...taken.data, leaseEndsAt: new Date(clock + 3_600_000).toISOString() }, a.fingerprint, p.publicKeyPem, 'SVCR2')).toBe(false);
    expect(receiptVerifies(taken.data, a.fingerprint, p.publicKeyPem, 'SVCR1')).toBe(false);
    const firstEnd = taken.data.leaseEndsAt;

    // Less than half a lease gone: the stored end is signed and nothing is written.
    advance(4 * MIN);
    const kept = await p.check({ ...a, nonce: nonce() });
    expect(kept.data).toMatchObject({ valid: true, leaseEndsAt: firstEnd, boundAt: taken.data.boundAt });
    expect((await leaseRows(licence.lid))[0]!.lease_ends_at).toBe(Date.parse(firstEnd));

    // Past half a lease: extended to checkedAt + lse, committed before the answer.
    advance(2 * MIN);
    const renewed = await p.check({ ...a, nonce: nonce() });
    expect(Date.parse(renewed.data.leaseEndsAt)).toBe(clock + LEASE * 1000);
    expect(renewed.data.boundAt).toBe(taken.data.boundAt);
    expect((await leaseRows(licence.lid))[0]!.lease_ends_at).toBe(clock + LEASE * 1000);

    advance(MIN);
    const b = checkBody(licence.licenseString, 'lease-b');
    expect((await p.check(b)).data.valid).toBe(true);
    const c = checkBody(licence.licenseString, 'lease-c');
    const full = await p.check(c);
    expect(full.data).toMatchObject({ valid: false, reason: 'SEATS_FULL', status: 'ACTIVE' });
    expect(full.data.boundAt).toBeUndefined();
    expect(full.data.leaseEndsAt).toBeUndefined();
    expect(receiptVerifies(full.data, c.fingerprint, p.publicKeyPem, 'SVCR2')).toBe(true);
    // a's lease ends first, a minute sooner than b's.
    expect(full.data.retryAfterSeconds).toBe(LEASE - 60);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(2);

    // a stops checking: its lease lapses at its end, with no write, and c takes the seat.
    advance((LEASE - 60) * 1000 - 1);
    expect((await p.check({ ...c, nonce: nonce() })).data.retryAfterSeconds).toBe(1);
    advance(1);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(1);
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines[0]).toMatchObject({ live: false, releasedAt: null, leaseEndsAt: new Date(clock).toISOString() });
    const later = await p.check({ ...c, nonce: nonce() });
    expect(later.data).toMatchObject({ valid: true, boundAt: new Date(clock).toISOString() });

    // a comes back to a full licence, until b's lease lapses too; then it takes its old row back.
    expect((await p.check({ ...a, nonce: nonce() })).data).toMatchObject({ reason: 'SEATS_FULL', retryAfterSeconds: 60 });
    advance(60_000);
    expect((await p.check({ ...a, nonce: nonce() })).data).toMatchObject({ valid: true, boundAt: new Date(clock).toISOString() });
    const rows = await leaseRows(licence.lid);
    expect(rows).toHaveLength(3);
    expect(rows.map((r) => r.fp_digest)).toEqual([fpDigest(a.fingerprint), fpDigest(b.fingerprint), fpDigest(c.fingerprint)]);
    const bound = await h.database.db
      .selectFrom('audit_entries')
      .select('action')
      .where('lid', '=', licence.lid)
      .where('action', '=', 'machine.bound')
      .execute();
    expect(bound).toHaveLength(3);
  });

  it.skipIf(!javaAvailable())(
    "carry SVCR2 receipts a Java verifier accepts from the answer's fields",
    async () => {
      const licence = await p.issue();
      const a = checkBody(licence.licenseString, 'java');
      const { data } = await p.check(a);
      const fields = [data.lid, data.status, data.nonce, data.checkedAt, data.boundAt, fpDigest(a.fingerprint), data.leaseEndsAt];
      const item = { algorithm: 'Ed25519', publicKey: createPublicKey(p.publicKeyPem), signature: Buffer.from(data.receipt, 'base64url') };
      const moved = [...fields.slice(0, 6), new Date(Date.parse(data.leaseEndsAt) + 60_000).toISOString()];
      expect(
        await javaVerify([
          { ...item, message: { tag: 'SVCR2', fields } },
          { ...item, message: { tag: 'SVCR2', fields: moved } },
        ]),
      ).toEqual([true, false]);
    },
    60_000,
  );

  it('belong to the exact fingerprint: a near match takes a lease of its own', async () => {
    const licence = await p.issue({ maxMachines: 2 });
    await p.check(checkBody(licence.licenseString, 'exact'));
    // Four of five components equal: a node-locked check would take it for the same machine.
    const near = buildFingerprint({ machine: 'machine-exact', host: 'host-exact', mac: 'mac-exact', cpu: 'cpu-exact', disk: 'another-disk' });
    const second = await p.check({ license: licence.licenseString, fingerprint: near, nonce: nonce() });
    expect(second.data.valid).toBe(true);
    expect(await leaseRows(licence.lid)).toHaveLength(2);
    const released = await p.release({ license: licence.licenseString, fingerprint: near, nonce: nonce() });
    expect(released.data.released).toBe(true);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(1);
  });

  it('answer SEATS_FULL, not FINGERPRINT_MISMATCH, on one seat', async () => {
    const licence = await p.issue({ maxMachines: 1 });
    await p.check(checkBody(licence.licenseString, 'solo-a'));
    const other = await p.check(checkBody(licence.licenseString, 'solo-b'));
    expect(other.data).toMatchObject({ valid: false, reason: 'SEATS_FULL' });
    expect(other.data.retryAfterSeconds).toBeGreaterThan(LEASE - 5);
  });

  it("are renewed by a SUPERSEDED check before its term's grace end, and fetch needs a live lease", async () => {
    startClock();
    const licence = await p.issue({ maxMachines: 1 });
    const a = checkBody(licence.licenseString, 'superseded');
    const outsider = checkBody(licence.licenseString, 'outsider');
    expect((await p.fetch({ license: licence.licenseString, fingerprint: outsider.fingerprint })).statusCode).toBe(403);
    await p.check(a);
    await h.admin('POST', `/licenses/${licence.lid}/renew`, {});
    advance(LEASE * 600);
    const old = await p.check({ ...a, nonce: nonce() });
    expect(old.data).toMatchObject({ valid: false, reason: 'SUPERSEDED', renewed: true, status: 'ACTIVE' });
    expect(Date.parse(old.data.leaseEndsAt)).toBe(clock + LEASE * 1000);
    expect(receiptVerifies(old.data, a.fingerprint, p.publicKeyPem, 'SVCR2')).toBe(true);
    const fetched = await p.fetch({ license: licence.licenseString, fingerprint: a.fingerprint });
    expect(fetched.statusCode).toBe(200);
    const refused = await p.fetch({ license: licence.licenseString, fingerprint: outsider.fingerprint });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toMatch(/no live lease/);
  });

  it('are not signed for a revoked licence', async () => {
    const licence = await p.issue();
    const a = checkBody(licence.licenseString, 'revoked');
    await p.check(a);
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, { reason: 'test' });
    const answer = await p.check({ ...a, nonce: nonce() });
    expect(answer.data).toMatchObject({ valid: false, reason: 'REVOKED', status: 'REVOKED' });
    expect(answer.data.leaseEndsAt).toBeUndefined();
    expect(receiptVerifies(answer.data, a.fingerprint, p.publicKeyPem, 'SVCR2')).toBe(true);
  });

  it('count as seats in listings, the dashboard and the daily peak', async () => {
    startClock();
    const product = await floatingProduct();
    const licence = await product.issue({ maxMachines: 3 });
    for (const machine of ['peak-a', 'peak-b', 'peak-c']) await product.check(checkBody(licence.licenseString, machine));
    const before = (await h.admin('GET', '/dashboard/metrics')).data.seatsUsed;
    const page = await h.admin('GET', `/licenses/page?productId=${product.id}`);
    expect(page.data.items[0].seatsUsed).toBe(3);
    // The peak belongs to the day the leases were held, not the day they lapsed (near midnight UTC, the next).
    const day = new Date(clock).toISOString().slice(0, 10);
    advance(LEASE * 1000);
    expect((await h.admin('GET', `/licenses/page?productId=${product.id}`)).data.items[0].seatsUsed).toBe(0);
    // Leases of other tests may lapse at the same time; these three certainly do.
    expect((await h.admin('GET', '/dashboard/metrics')).data.seatsUsed).toBeLessThanOrEqual(before - 3);
    const peaks = (await h.admin('GET', `/licenses/${licence.lid}/lease-peaks`)).data;
    expect(peaks).toHaveLength(30);
    expect(peaks.at(-1).date).toBe(new Date(clock).toISOString().slice(0, 10));
    expect(peaks.find((entry: { date: string }) => entry.date === day)).toEqual({ date: day, peak: 3 });
    const csv = await h.admin('GET', `/licenses/export.csv?productId=${product.id}`);
    expect(csv.body.split('\n')[1]).toContain(licence.lid);
  });

  it('remove rows unseen for 90 days when a new machine takes a lease', async () => {
    const licence = await p.issue({ maxMachines: 2 });
    await p.check(checkBody(licence.licenseString, 'stale'));
    const [row] = await leaseRows(licence.lid);
    const long = Date.now() - 91 * 86_400_000;
    await h.database.db
      .updateTable('machine_bindings')
      .set({ bound_at: long, last_seen_at: long, lease_ends_at: long + LEASE * 1000 })
      .where('id', '=', row!.id)
      .execute();
    await p.check(checkBody(licence.licenseString, 'fresh'));
    const rows = await leaseRows(licence.lid);
    expect(rows.map((r) => r.fp_digest)).toEqual([fpDigest(fingerprint('fresh'))]);
  });
});

describe('releasing a lease', () => {
  it('ends it at once, frees the seat, and never counts towards the limit (even 0)', async () => {
    const product = await floatingProduct({ selfReleaseLimit: 0 });
    const licence = await product.issue({ maxMachines: 1 });
    const a = checkBody(licence.licenseString, 'release-a');
    for (let i = 0; i < 3; i++) {
      expect((await product.check({ ...a, nonce: nonce() })).data.valid).toBe(true);
      const released = await product.release({ ...a, nonce: nonce() });
      expect(released.data).toMatchObject({ lid: licence.lid, released: true });
    }
    expect((await product.release({ ...a, nonce: nonce() })).data).toMatchObject({ released: false, reason: 'NO_SEAT' });
    const b = checkBody(licence.licenseString, 'release-b');
    expect((await product.check(b)).data.valid).toBe(true);
    const [row] = await leaseRows(licence.lid);
    expect(row).toMatchObject({ released_by: 'self' });
    expect(row!.lease_ends_at).toBe(row!.released_at);
  });
});

describe('borrowing', () => {
  it('keeps a lease until `until`, within maxBorrowSeconds and maxBorrowedSeats, audited', async () => {
    startClock();
    const licence = await p.issue({ maxMachines: 3 });
    const a = checkBody(licence.licenseString, 'borrow-a');
    const b = checkBody(licence.licenseString, 'borrow-b');
    const until = new Date(clock + 3_600_000).toISOString();
    const noLease = await p.borrow({ ...a, until });
    expect(noLease).toMatchObject({ statusCode: 403 });
    expect(noLease.data.error).toMatch(/no live lease on this machine: check first/);

    await p.check(a);
    await p.check(b);
    const tooFar = await p.borrow({ ...a, nonce: nonce(), until: new Date(clock + 86_400_000 + 1000).toISOString() });
    expect(tooFar.statusCode).toBe(400);
    expect(tooFar.data.error).toMatch(/until/);
    expect((await p.borrow({ ...a, nonce: nonce(), until: 'tomorrow' })).statusCode).toBe(400);
    expect((await p.borrow({ ...a, nonce: nonce(), until: new Date(clock - 1000).toISOString() })).statusCode).toBe(400);

    const day = new Date(clock + 86_400_000).toISOString();
    const borrowed = await p.borrow({ ...a, nonce: nonce(), until: day });
    expect(borrowed.statusCode).toBe(200);
    expect(borrowed.data).toMatchObject({ valid: true, leaseEndsAt: day, status: 'ACTIVE' });
    expect(receiptVerifies(borrowed.data, a.fingerprint, p.publicKeyPem, 'SVCR2')).toBe(true);
    const audit = await h.database.db.selectFrom('audit_entries').selectAll().where('lid', '=', licence.lid).where('action', '=', 'machine.borrowed').execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]!.actor).toBe('check');

    // maxBorrowedSeats is 1.
    const second = await p.borrow({ ...b, nonce: nonce(), until: day });
    expect(second.statusCode).toBe(403);
    expect(second.data.error).toBe('all borrowable seats are borrowed');

    // The application cannot return a borrowed lease; checks keep its end.
    expect((await p.release({ ...a, nonce: nonce() })).data).toMatchObject({ released: false, reason: 'BORROWED' });
    advance(3 * 3_600_000);
    const checked = await p.check({ ...a, nonce: nonce() });
    expect(checked.data).toMatchObject({ valid: true, leaseEndsAt: day });
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(1);

    // An operator frees it at once.
    const [row] = await leaseRows(licence.lid);
    expect((await h.admin('POST', `/licenses/${licence.lid}/release-binding`, { machineId: row!.id })).statusCode).toBe(200);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(0);
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines[0]).toMatchObject({ live: false, borrowedUntil: day });
  });

  it('is refused when the product does not allow it', async () => {
    const product = await floatingProduct();
    const licence = await product.issue();
    const a = checkBody(licence.licenseString, 'no-borrow');
    await product.check(a);
    const refused = await product.borrow({ ...a, nonce: nonce(), until: new Date(Date.now() + 60_000).toISOString() });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toBe('borrowing is off');
  });
});

describe('a node-locked licence', () => {
  it('is unchanged: SVCR1, no lease, bound until released', async () => {
    startClock();
    const product = await checkedProduct(h);
    const licence = await product.issue({ maxMachines: 1 });
    expect(licence.seatModel).toBe('NODE_LOCKED');
    const a = checkBody(licence.licenseString, 'node');
    const answer = await product.check(a);
    expect(answer.data.valid).toBe(true);
    expect(answer.data.leaseEndsAt).toBeUndefined();
    expect(receiptVerifies(answer.data, a.fingerprint, product.publicKeyPem)).toBe(true);
    advance((30 * 86_400_000) / 60);
    expect((await product.check(checkBody(licence.licenseString, 'other'))).data.reason).toBe('FINGERPRINT_MISMATCH');
    const borrow = await product.borrow({ ...a, nonce: nonce(), until: new Date(clock + 60_000).toISOString() });
    expect(borrow.statusCode).toBe(400);
    expect(borrow.data.error).toMatch(/floating/);
  });
});
