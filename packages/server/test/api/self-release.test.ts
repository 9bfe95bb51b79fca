import { buildFingerprint } from '@licensor/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBody, checkedProduct, nonce, type CheckedProduct } from '../check-helpers.js';
import { startHarness, type Harness } from '../harness.js';
import { fingerprint, licenceRow } from '../licence-helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const DAY = 24 * 60 * 60 * 1000;
const release = (product: CheckedProduct, license: string, machine: string | number) =>
  h.as({ token: product.token })('POST', `/public/license/${product.checkId}/release`, { license, fingerprint: fingerprint(machine), nonce: nonce() });

/** A licence with a seat bound by a check from each machine. */
async function bound(product: CheckedProduct, machines: Array<string | number>, body: Record<string, unknown> = {}) {
  const licence = await product.issue({ maxMachines: Math.max(1, machines.length), ...body });
  for (const machine of machines) expect((await product.check(checkBody(licence.licenseString, machine))).data.valid).toBe(true);
  return licence;
}

describe('self-service release by the application (DESIGN 12)', () => {
  it('gives new products a limit of 3 and keeps null as no limit', async () => {
    const product = await checkedProduct(h);
    expect((await h.admin('GET', `/products/${product.id}`)).data.selfReleaseLimit).toBe(3);
    expect((await h.admin('PUT', `/products/${product.id}`, { selfReleaseLimit: null })).data.selfReleaseLimit).toBe(null);
    expect((await h.admin('PUT', `/products/${product.id}`, { selfReleaseLimit: 101 })).statusCode).toBe(400);
  });

  it('releases the seat of exactly this machine, audited as self, and another machine then binds', async () => {
    const product = await checkedProduct(h);
    const licence = await bound(product, ['first']);
    expect((await product.check(checkBody(licence.licenseString, 'second'))).data.reason).toBe('FINGERPRINT_MISMATCH');
    const sent = { license: licence.licenseString, fingerprint: fingerprint('first'), nonce: nonce() };
    const answer = await h.as({ token: product.token })('POST', `/public/license/${product.checkId}/release`, sent);
    expect(answer.statusCode).toBe(200);
    expect(answer.data).toEqual({ lid: licence.lid, released: true, releasedAt: expect.any(String), nonce: sent.nonce });
    expect((await product.check(checkBody(licence.licenseString, 'second'))).data.valid).toBe(true);
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines.find((m: { live: boolean }) => !m.live)).toMatchObject({ releasedBy: 'self' });
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.rebindCount).toBe(1);
    const activity = (await h.admin('GET', `/licenses/${licence.lid}/activity?action=machine.released`)).data.items;
    expect(activity).toMatchObject([{ actor: 'self', action: 'machine.released' }]);
  });

  it('answers NO_SEAT for a near match a check would accept, AT_ISSUE for a seat in the signature, and counts neither', async () => {
    const product = await checkedProduct(h, { selfReleaseLimit: 1 });
    const licence = await bound(product, ['near']);
    // Four of five components equal: a check accepts it (fpn 3), a release does not.
    const near = buildFingerprint({ machine: 'machine-near', host: 'host-near', mac: 'mac-near', cpu: 'cpu-near', disk: 'another disk' });
    expect((await product.check({ license: licence.licenseString, fingerprint: near, nonce: nonce() })).data.valid).toBe(true);
    const refused = await h.as({ token: product.token })('POST', `/public/license/${product.checkId}/release`, {
      license: licence.licenseString,
      fingerprint: near,
      nonce: nonce(),
    });
    expect(refused.data).toMatchObject({ released: false, reason: 'NO_SEAT' });

    const atIssue = await product.issue({ fingerprints: [fingerprint('signed')] });
    expect((await release(product, atIssue.licenseString, 'signed')).data).toMatchObject({ released: false, reason: 'AT_ISSUE' });
    expect((await release(product, licence.licenseString, 'near')).data.released).toBe(true);
  });

  it('holds the limit over 30 days, counted from release times, and lets a revoked licence release', async () => {
    const product = await checkedProduct(h, { selfReleaseLimit: 2 });
    const licence = await bound(product, ['a', 'b', 'c']);
    expect((await release(product, licence.licenseString, 'a')).data.released).toBe(true);
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, { reason: 'testing' });
    expect((await release(product, licence.licenseString, 'b')).data.released).toBe(true);
    const over = await release(product, licence.licenseString, 'c');
    expect([over.statusCode, over.data.error]).toEqual([403, 'self-service release limit reached']);
    // The first release moves out of the window: one more is allowed.
    const row = await licenceRow(h, licence.lid);
    await h.database.db
      .updateTable('machine_bindings')
      .set({ released_at: Date.now() - 31 * DAY })
      .where('licence_id', '=', row.id)
      .where('released_by', '=', 'self')
      .where('fingerprint', '=', fingerprint('a'))
      .execute();
    expect((await release(product, licence.licenseString, 'c')).data.released).toBe(true);
  });

  it('refuses every release when the limit is 0, and none when it is null', async () => {
    const off = await checkedProduct(h, { selfReleaseLimit: 0 });
    const licence = await bound(off, ['x']);
    expect((await release(off, licence.licenseString, 'x')).statusCode).toBe(403);
    const unlimited = await checkedProduct(h, { selfReleaseLimit: null });
    const many = await bound(unlimited, [1, 2, 3, 4, 5]);
    for (const machine of [1, 2, 3, 4, 5]) expect((await release(unlimited, many.licenseString, machine)).data.released).toBe(true);
  });

  it('lets exactly the allowed number of 20 parallel releases succeed', async () => {
    const product = await checkedProduct(h, { selfReleaseLimit: 3 });
    const machines = Array.from({ length: 20 }, (_, i) => `parallel-${i}`);
    const licence = await bound(product, machines);
    const answers = await Promise.all(machines.map((m) => release(product, licence.licenseString, m)));
    expect(answers.filter((a) => a.statusCode === 200 && a.data.released).length).toBe(3);
    expect(answers.filter((a) => a.statusCode === 403).length).toBe(17);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(17);
  });

  it('refuses a wrong check token before anything else', async () => {
    const product = await checkedProduct(h);
    const licence = await bound(product, ['t']);
    const wrong = await h.as({ token: `svcc_${product.checkId}_${'0'.repeat(64)}` })('POST', `/public/license/${product.checkId}/release`, {
      license: licence.licenseString,
      fingerprint: fingerprint('t'),
      nonce: nonce(),
    });
    expect(wrong.statusCode).toBe(401);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(1);
  });
});
