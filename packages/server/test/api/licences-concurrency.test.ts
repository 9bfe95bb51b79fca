import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { addMonths, countRows, createProduct, insertCheckBinding, issueOk, planOrg, startUtc } from '../licence-helpers.js';

let h: Harness;
let product: any;

beforeAll(async () => {
  h = await startHarness();
  product = await createProduct(h.admin);
});
afterAll(() => h?.close());

const parallel = <T>(n: number, run: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => run(i)));
const licencesOf = async (productId: number) => (await h.admin('GET', `/licenses?productId=${productId}`)).data as Array<{ lid: string }>;

describe('Idempotency-Key on issue', () => {
  it('answers a repeat with the first status and body and creates nothing more', async () => {
    const own = await createProduct(h.admin);
    const body = { productId: own.id, customer: { name: 'Idem Ltd', email: 'idem@idem.example' } };
    const key = { 'idempotency-key': 'order-1001' };
    const first = await h.admin('POST', '/licenses', body, key);
    expect(first.statusCode).toBe(201);
    const customers = await countRows(h, 'customers');
    const repeat = await h.admin('POST', '/licenses', body, key);
    expect(repeat.statusCode).toBe(201);
    expect(repeat.data).toEqual(first.data);
    // The same body with its keys in another order is the same request.
    const reordered = await h.admin('POST', '/licenses', { customer: { email: 'idem@idem.example', name: 'Idem Ltd' }, productId: own.id }, key);
    expect(reordered.statusCode).toBe(201);
    expect(reordered.data.lid).toBe(first.data.lid);
    expect(await licencesOf(own.id)).toHaveLength(1);
    expect(await countRows(h, 'customers')).toBe(customers);
    const trail = (await h.admin('GET', `/licenses/${first.data.lid}/activity`)).data;
    expect(trail.total).toBe(1);
    // Without the key, or with another key, it is a new licence.
    expect((await h.admin('POST', '/licenses', body, { 'idempotency-key': 'order-1002' })).data.lid).not.toBe(first.data.lid);
    expect((await h.admin('POST', '/licenses', body)).statusCode).toBe(201);
    expect(await licencesOf(own.id)).toHaveLength(3);
  });

  it('refuses the same key with a different body (409), creating nothing', async () => {
    const own = await createProduct(h.admin);
    const key = { 'idempotency-key': 'order-2001' };
    expect((await h.admin('POST', '/licenses', { productId: own.id, licensee: 'A Ltd' }, key)).statusCode).toBe(201);
    const conflict = await h.admin('POST', '/licenses', { productId: own.id, licensee: 'B Ltd' }, key);
    expect(conflict.statusCode).toBe(409);
    expect(conflict.data).toEqual({ error: expect.any(String) });
    expect(await licencesOf(own.id)).toHaveLength(1);
  });

  it('keeps keys per organisation', async () => {
    const other = await h.otherOrg();
    const theirs = await createProduct(other.admin);
    const key = { 'idempotency-key': 'shared-key-1' };
    const ours = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Ours Ltd' }, key);
    const their = await other.admin('POST', '/licenses', { productId: theirs.id, licensee: 'Theirs Ltd' }, key);
    expect(ours.statusCode).toBe(201);
    expect(their.statusCode).toBe(201);
    expect(their.data.lid).not.toBe(ours.data.lid);
  });

  it('refuses a key that is empty or too long (400)', async () => {
    const own = await createProduct(h.admin);
    for (const key of ['', 'k'.repeat(256)]) {
      const response = await h.admin('POST', '/licenses', { productId: own.id, licensee: 'Key Ltd' }, { 'idempotency-key': key });
      expect(response.statusCode).toBe(400);
    }
    expect(await licencesOf(own.id)).toHaveLength(0);
    expect((await h.admin('POST', '/licenses', { productId: own.id, licensee: 'Key Ltd' }, { 'idempotency-key': 'k'.repeat(255) })).statusCode).toBe(201);
  });

  it('creates exactly one licence for parallel repeats', async () => {
    const own = await createProduct(h.admin);
    const body = { productId: own.id, customer: { name: 'Race Ltd', email: 'race@idem.example' } };
    const responses = await parallel(5, () => h.admin('POST', '/licenses', body, { 'idempotency-key': 'order-3001' }));
    expect(responses.map((r) => r.statusCode)).toEqual([201, 201, 201, 201, 201]);
    for (const r of responses) expect(r.data).toEqual(responses[0]!.data);
    expect(await licencesOf(own.id)).toHaveLength(1);
    const customers = (await h.admin('GET', '/customers')).data.filter((c: { email: string | null }) => c.email === 'race@idem.example');
    expect(customers).toHaveLength(1);
  });

  it('renews exactly once for parallel repeats of a renewal', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Race Renew Ltd' });
    const responses = await parallel(5, () =>
      h.admin('POST', `/licenses/${licence.lid}/renew`, { validityMonths: 1 }, { 'idempotency-key': `renew-race-${licence.lid}` }),
    );
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    for (const r of responses) expect(r.data).toEqual(responses[0]!.data);
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toHaveLength(1);
  });
});

describe('concurrent writes', () => {
  it('never lets parallel issues pass a plan limit', async () => {
    const org = await planOrg(h, 3);
    const own = await createProduct(org.admin);
    for (let i = 0; i < 2; i++) expect((await org.admin('POST', '/licenses', { productId: own.id, licensee: 'Plan Ltd' })).statusCode).toBe(201);
    const responses = await parallel(5, (i) => org.admin('POST', '/licenses', { productId: own.id, licensee: `Racer ${i}` }));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 403, 403, 403, 403]);
    expect((await org.admin('GET', '/licenses')).data).toHaveLength(3);
  });

  it('gives two concurrent renewals two consecutive terms', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Twice Ltd' });
    const responses = await parallel(2, () => h.admin('POST', `/licenses/${licence.lid}/renew`));
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200]);
    const e0 = licence.expiresAt.slice(0, 10);
    const [e1, e2] = [startUtc(addMonths(e0, 12)), startUtc(addMonths(addMonths(e0, 12), 12))];
    expect(responses.map((r) => r.data.expiresAt).sort()).toEqual([e1, e2]);
    const current = (await h.admin('GET', `/licenses/${licence.lid}`)).data;
    expect(current.expiresAt).toBe(e2);
    const versions = (await h.admin('GET', `/licenses/${licence.lid}/versions`)).data;
    expect(versions.map((v: { versionNo: number; expiresAt: string }) => [v.versionNo, v.expiresAt])).toEqual([
      [2, e1],
      [1, licence.expiresAt],
    ]);
  });

  it('revokes once when revokes race', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Race Revoke Ltd' });
    const responses = await parallel(5, (i) => h.admin('POST', `/licenses/${licence.lid}/revoke`, { reason: `reason ${i}` }));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 400, 400, 400, 400]);
    const trail = (await h.admin('GET', `/licenses/${licence.lid}/activity`)).data.items;
    expect(trail.filter((e: { action: string }) => e.action === 'licence.revoked')).toHaveLength(1);
  });

  it('counts every release when releases of different machines race', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Race Release Ltd', maxMachines: 4 });
    const ids: number[] = [];
    for (let i = 0; i < 4; i++) ids.push(await insertCheckBinding(h, licence.lid, `race-release-${i}`));
    const responses = await parallel(4, (i) => h.admin('POST', `/licenses/${licence.lid}/release-binding`, { machineId: ids[i] }));
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toMatchObject({ rebindCount: 4, seatsUsed: 0 });
  });

  it('releases each binding once when unnamed releases race', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Race Release All Ltd', maxMachines: 2 });
    await insertCheckBinding(h, licence.lid, 'race-all-1');
    await insertCheckBinding(h, licence.lid, 'race-all-2');
    const responses = await parallel(3, () => h.admin('POST', `/licenses/${licence.lid}/release-binding`));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 400, 400]);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toMatchObject({ rebindCount: 2, seatsUsed: 0 });
  });

  it('creates one customer when parallel issues name the same new email', async () => {
    const responses = await parallel(5, (i) =>
      h.admin('POST', '/licenses', { productId: product.id, customer: { name: `Same ${i}`, email: 'same@parallel.example' } }),
    );
    expect(responses.map((r) => r.statusCode)).toEqual([201, 201, 201, 201, 201]);
    const ids = new Set(responses.map((r) => r.data.customerId));
    expect(ids.size).toBe(1);
    // Every licence names the customer that was kept, as signed.
    const names = new Set(responses.map((r) => r.data.claims.lic));
    expect(names.size).toBe(1);
    expect(responses.map((r) => r.data.licensee)).toEqual(responses.map((r) => r.data.claims.lic));
    const customers = (await h.admin('GET', '/customers')).data.filter((c: { email: string | null }) => c.email === 'same@parallel.example');
    expect(customers).toHaveLength(1);
    expect(names).toEqual(new Set([customers[0].name]));
  });
});
