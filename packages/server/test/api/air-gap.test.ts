import { createPublicKey } from 'node:crypto';
import { groupsOfFive, parseActivationResponse, verifyActivationResponse } from '@licensor/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { device } from '../air-gap-helpers.js';
import { checkBody, checkedProduct, type CheckedProduct } from '../check-helpers.js';
import { startHarness, type Harness } from '../harness.js';
import { addDays, fingerprint, licenceRow, todayUtc } from '../licence-helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const DAY = 86_400_000;
const activate = (lid: string, request: string) => h.admin('POST', `/licenses/${lid}/air-gap-activations`, { request });
const deactivate = (lid: string, code: string, force?: boolean) =>
  h.admin('POST', `/licenses/${lid}/air-gap-deactivations`, { code, ...(force === undefined ? {} : { force }) });
const machines = async (lid: string) => (await h.admin('GET', `/licenses/${lid}/machines`)).data;
const airGapProduct = (body: Record<string, unknown> = {}) => checkedProduct(h, { airGapActivation: true, ...body });

describe('air-gapped activation on the Management API (DESIGN 14)', () => {
  let product: CheckedProduct;
  beforeAll(async () => {
    product = await airGapProduct();
  });

  it('keeps the product fields: off and 90 days by default, days from 1 to 3650', async () => {
    const plain = await checkedProduct(h);
    expect((await h.admin('GET', `/products/${plain.id}`)).data).toMatchObject({ airGapActivation: false, airGapActivationDays: 90 });
    for (const days of [0, 3651, 1.5]) expect((await h.admin('PUT', `/products/${plain.id}`, { airGapActivationDays: days })).statusCode).toBe(400);
    expect((await h.admin('PUT', `/products/${plain.id}`, { airGapActivationDays: 30, airGapActivation: true })).data).toMatchObject({
      airGapActivation: true,
      airGapActivationDays: 30,
    });
  });

  it('is for node-locked products only: on with FLOATING is a 400 at save, and a licence issued floating cannot be activated', async () => {
    const both = await h.admin('POST', '/products', { productKey: 'air-floating', name: 'Air floating', seatModel: 'FLOATING', airGapActivation: true });
    expect(both.statusCode).toBe(400);
    expect(both.data.error).toMatch(/^Air gap activation \(airGapActivation\): /);
    expect((await h.admin('GET', '/products')).data.some((p: { productKey: string }) => p.productKey === 'air-floating')).toBe(false);
    const nodeLocked = await airGapProduct({ allowedLicenceTypes: ['ONLINE'] });
    const change = await h.admin('PUT', `/products/${nodeLocked.id}`, { seatModel: 'FLOATING' });
    expect(change.statusCode).toBe(400);
    expect((await h.admin('GET', `/products/${nodeLocked.id}`)).data).toMatchObject({ seatModel: 'NODE_LOCKED', airGapActivation: true });

    // A licence keeps the seat model it was issued with, whatever its product becomes.
    const floating = await checkedProduct(h, { seatModel: 'FLOATING', allowedLicenceTypes: ['ONLINE'] });
    const licence = await floating.issue();
    expect((await h.admin('PUT', `/products/${floating.id}`, { seatModel: 'NODE_LOCKED', airGapActivation: true })).statusCode).toBe(200);
    const refused = await activate(licence.lid, device().request(licence.lid, 'floating-ship'));
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(/floating/);
    expect(await machines(licence.lid)).toEqual([]);
  });

  it('activates: 201 with a response the product key signed for this device and machine, the seat listed as air-gapped until its end', async () => {
    const licence = await product.issue();
    const laptop = device();
    const request = laptop.request(licence.lid, 'ship');
    const before = Math.floor(Date.now() / 1000);
    const answer = await activate(licence.lid, groupsOfFive(request));
    expect(answer.statusCode, answer.body).toBe(201);
    expect(answer.data).toEqual({
      machineId: expect.any(Number),
      activationId: expect.stringMatching(/^\d+$/),
      until: expect.any(String),
      response: expect.stringMatching(/^SVCX1\./),
    });
    const parsed = parseActivationResponse(answer.data.response);
    expect(verifyActivationResponse(parsed, [createPublicKey(product.publicKeyPem)])).not.toBeNull();
    const { fields } = parsed;
    expect(fields).toMatchObject({ lid: licence.lid, aid: answer.data.activationId, fp: fingerprint('ship'), dpk: laptop.dpk, status: 'ACTIVE' });
    expect(fields.iat).toBeGreaterThanOrEqual(before);
    expect(fields.until).toBe(fields.iat + 90 * 86_400);
    expect(new Date(fields.until * 1000).toISOString()).toBe(answer.data.until);

    const [seat] = await machines(licence.lid);
    expect(seat).toMatchObject({
      id: answer.data.machineId,
      live: true,
      airGapped: true,
      activationId: answer.data.activationId,
      until: answer.data.until,
      atIssue: false,
    });
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(1);
    const [entry] = (await h.admin('GET', `/licenses/${licence.lid}/activity?action=machine.bound`)).data.items;
    expect(entry).toMatchObject({ actor: 'admin', details: { airGapped: true, activationId: answer.data.activationId } });
  });

  it('answers the same request again with 200 and the same response; another request with a used nonce is 409, even with every seat taken', async () => {
    const licence = await product.issue();
    const laptop = device();
    const request = laptop.request(licence.lid, 'lab', { nonce: 'the-same-nonce-0001' });
    const first = await activate(licence.lid, request);
    const again = await activate(licence.lid, request);
    expect([first.statusCode, again.statusCode]).toEqual([201, 200]);
    expect(again.data).toEqual(first.data);
    const other = await activate(licence.lid, device().request(licence.lid, 'elsewhere', { nonce: 'the-same-nonce-0001' }));
    expect([other.statusCode, other.data.error]).toEqual([409, expect.stringContaining('already used')]);
    expect(await machines(licence.lid)).toHaveLength(1);
  });

  it('refuses with 400 naming the problem: an edited or malformed request, another licence, the product setting, an old request, an OFFLINE licence', async () => {
    const licence = await product.issue();
    const other = await product.issue();
    const laptop = device();
    const good = laptop.request(licence.lid, 'x');
    const [tag, payload, signature] = good.split('.') as [string, string, string];
    const edited = `${tag}.${Buffer.from(Buffer.from(payload, 'base64url').toString().replace(fingerprint('x'), fingerprint('y'))).toString('base64url')}.${signature}`;
    const cases: Array<[string, string, RegExp]> = [
      [licence.lid, edited, /signature does not verify/],
      [licence.lid, `${good}=`, /^Request \(request\): /],
      [licence.lid, 'hello', /^Request \(request\): .*SVCA1/],
      [other.lid, good, /made for licence/],
      [licence.lid, laptop.request(licence.lid, 'x', { iat: Math.floor((Date.now() - 8 * DAY) / 1000) }), /more than 7 days/],
    ];
    for (const [lid, request, error] of cases) {
      const answer = await activate(lid, request);
      expect([answer.statusCode, answer.data.error]).toEqual([400, expect.stringMatching(error)]);
    }
    const off = await checkedProduct(h);
    const offLicence = await off.issue();
    expect((await activate(offLicence.lid, laptop.request(offLicence.lid, 'x'))).data.error).toMatch(/off for this licence's product/);
    const offline = await product.issue({ licenceType: 'OFFLINE' });
    expect((await activate(offline.lid, laptop.request(offline.lid, 'x'))).statusCode).toBe(400);
    expect((await activate('no-such-lid', laptop.request('no-such-lid', 'x'))).statusCode).toBe(404);
    expect(await machines(licence.lid)).toEqual([]);
  });

  it('refuses with 403 {error, reason}: seats full, revoked, expired, not yet valid', async () => {
    const licence = await product.issue();
    expect((await product.check(checkBody(licence.licenseString, 'online'))).data.valid).toBe(true);
    const full = await activate(licence.lid, device().request(licence.lid, 'offline'));
    expect([full.statusCode, full.data]).toEqual([403, { error: expect.any(String), reason: 'SEATS_FULL' }]);

    const revoked = await product.issue();
    await h.admin('POST', `/licenses/${revoked.lid}/revoke`, { reason: 'test' });
    expect((await activate(revoked.lid, device().request(revoked.lid, 'x'))).data.reason).toBe('REVOKED');
    const pending = await product.issue({ issueDate: addDays(todayUtc(), 3) });
    expect((await activate(pending.lid, device().request(pending.lid, 'x'))).data.reason).toBe('NOT_YET_VALID');
    const expired = await product.issue({ issueDate: addDays(todayUtc(), -40), validityMonths: 1 });
    expect((await activate(expired.lid, device().request(expired.lid, 'x'))).data.reason).toBe('EXPIRED');
  });

  it('takes seats race-free: concurrent activations never exceed maxMachines, and a request sent twice at once makes one activation', async () => {
    const licence = await product.issue({ maxMachines: 2 });
    const answers = await Promise.all([1, 2, 3, 4, 5].map((i) => activate(licence.lid, device().request(licence.lid, `racer-${i}`))));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 201, 403, 403, 403]);
    expect((await machines(licence.lid)).filter((m: any) => m.live)).toHaveLength(2);

    const other = await product.issue();
    const request = device().request(other.lid, 'twice');
    const twice = await Promise.all([activate(other.lid, request), activate(other.lid, request), activate(other.lid, request)]);
    expect(twice.map((a) => a.statusCode).sort()).toEqual([200, 200, 201]);
    expect(new Set(twice.map((a) => a.data.response)).size).toBe(1);
    expect(await machines(other.lid)).toHaveLength(1);
  });

  it('ends at the licence’s grace end when that comes first', async () => {
    const short = await product.issue({ validityMonths: 1, graceDays: 2 });
    const answer = await activate(short.lid, device().request(short.lid, 'x'));
    const row = await licenceRow(h, short.lid);
    expect(Date.parse(answer.data.until)).toBe(Math.floor(row.grace_ends_at! / 1000) * 1000);
  });

  it('reuses the live seat of an equal fingerprint; the same device key extends it, and a seat past its end frees itself', async () => {
    const licence = await product.issue({ maxMachines: 2 });
    const laptop = device();
    const first = await activate(licence.lid, laptop.request(licence.lid, 'rig'));
    const extended = await activate(licence.lid, laptop.request(licence.lid, 'rig'));
    expect(extended.statusCode).toBe(201);
    expect(extended.data.machineId).toBe(first.data.machineId);
    expect(extended.data.activationId).not.toBe(first.data.activationId);
    const [seat] = await machines(licence.lid);
    expect(seat).toMatchObject({ activationId: extended.data.activationId, live: true });
    // The replaced activation is over: its request is not answered again.
    expect((await activate(licence.lid, laptop.request(licence.lid, 'rig'))).statusCode).toBe(201);

    await h.database.db
      .updateTable('machine_bindings')
      .set({ lease_ends_at: Date.now() - 1000 })
      .where('id', '=', first.data.machineId)
      .execute();
    expect((await machines(licence.lid))[0]).toMatchObject({ live: false });
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(0);
    const anew = await activate(licence.lid, laptop.request(licence.lid, 'rig'));
    expect(anew.data.machineId).not.toBe(first.data.machineId);
  });

  it('deactivates: releases the seat it made, the same code again answers the same, counts towards selfReleaseLimit unless forced', async () => {
    const limited = await airGapProduct({ selfReleaseLimit: 1 });
    const licence = await limited.issue({ maxMachines: 3 });
    const [a, b, c] = [device(), device(), device()];
    const made = await Promise.all([a, b, c].map(async (d, i) => (await activate(licence.lid, d.request(licence.lid, `m${i}`))).data));

    const code = a.deactivation(licence.lid, made[0].activationId);
    const released = await deactivate(licence.lid, code);
    expect([released.statusCode, released.data]).toEqual([200, { machineId: made[0].machineId, releasedAt: expect.any(String), released: true }]);
    expect(await deactivate(licence.lid, code)).toMatchObject({ statusCode: 200, data: released.data });
    const over = await deactivate(licence.lid, b.deactivation(licence.lid, made[1].activationId));
    expect([over.statusCode, over.data.error]).toEqual([403, 'self-service release limit reached']);
    const forced = await deactivate(licence.lid, b.deactivation(licence.lid, made[1].activationId), true);
    expect(forced.data.released).toBe(true);
    const entries = (await h.admin('GET', `/licenses/${licence.lid}/activity?action=machine.released`)).data.items;
    expect(entries.map((e: any) => e.details)).toEqual([
      expect.objectContaining({ airGapped: true, force: true }),
      expect.objectContaining({ airGapped: true, released: true }),
    ]);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toMatchObject({ seatsUsed: 1, rebindCount: 2 });
    // A code another key signed, or one for another licence, is a 400 and changes nothing.
    expect((await deactivate(licence.lid, a.deactivation(licence.lid, made[2].activationId))).statusCode).toBe(400);
    expect((await deactivate(licence.lid, 'SVCD1.e30.AA')).statusCode).toBe(400);
    expect((await machines(licence.lid)).filter((m: any) => m.live)).toHaveLength(1);
  });

  it('keeps the seat when a check has made it an ordinary binding, or when the machine held one before', async () => {
    const licence = await product.issue({ maxMachines: 2 });
    const ship = device();
    const made = (await activate(licence.lid, ship.request(licence.lid, 'ship'))).data;
    expect((await product.check(checkBody(licence.licenseString, 'ship'))).data.valid).toBe(true);
    expect((await machines(licence.lid))[0]).toMatchObject({ live: true, until: made.until });
    await h.database.db
      .updateTable('air_gap_activations')
      .set({ until: Date.now() - 1000 })
      .where('id', '=', Number(made.activationId))
      .execute();
    expect((await deactivate(licence.lid, ship.deactivation(licence.lid, made.activationId))).data).toEqual({
      machineId: made.machineId,
      releasedAt: null,
      released: false,
    });
    expect((await machines(licence.lid))[0]).toMatchObject({ live: true, airGapped: false });

    expect((await product.check(checkBody(licence.licenseString, 'desk'))).data.valid).toBe(true);
    const desk = device();
    const onDesk = (await activate(licence.lid, desk.request(licence.lid, 'desk'))).data;
    expect((await deactivate(licence.lid, desk.deactivation(licence.lid, onDesk.activationId))).data.released).toBe(false);
    expect((await machines(licence.lid)).filter((m: any) => m.live)).toHaveLength(2);
  });
});

describe('air-gapped activation in the portal (DESIGN 12 and 14)', () => {
  const call = (method: string, path: string, cookie: string, body?: unknown) =>
    h.request(method, `/o/${h.slug}/api${path}`, { cookies: { svc_portal: cookie }, body });

  async function portalOf(customerId: number): Promise<string> {
    const link = await h.admin('POST', `/customers/${customerId}/portal-links`);
    const opened = await h.request('POST', `/o/${h.slug}/api/portal/session`, { body: { code: link.data.url.split('/portal/')[1] } });
    return opened.cookies.find((c) => c.name === 'svc_portal')!.value;
  }

  it('activates and deactivates the customer’s own licence within the limit; another customer’s licence is a 404', async () => {
    const product = await airGapProduct({ selfReleaseLimit: 1 });
    const mine = await product.issue({ licensee: 'Air Gap Customer', licenseeEmail: 'ops@airgap.example', maxMachines: 3 });
    const theirs = await product.issue({ licensee: 'Someone Else', licenseeEmail: 'x@else.example' });
    const cookie = await portalOf(mine.customerId);
    const [a, b] = [device(), device()];

    const stranger = await call('POST', `/portal/licenses/${theirs.lid}/air-gap-activations`, cookie, { request: a.request(theirs.lid, 'x') });
    expect(stranger.statusCode).toBe(404);
    const made = await call('POST', `/portal/licenses/${mine.lid}/air-gap-activations`, cookie, { request: a.request(mine.lid, 'x') });
    expect(made.statusCode, made.body).toBe(201);
    const second = (await call('POST', `/portal/licenses/${mine.lid}/air-gap-activations`, cookie, { request: b.request(mine.lid, 'y') })).data;
    const seen = (await call('GET', `/portal/licenses/${mine.lid}`, cookie)).data;
    expect(seen.machines).toContainEqual(expect.objectContaining({ id: made.data.machineId, airGapped: true, until: made.data.until }));
    const [entry] = (await h.admin('GET', `/licenses/${mine.lid}/activity?action=machine.bound`)).data.items;
    expect(entry.actor).toBe(`customer/${mine.customerId}`);

    expect(
      (await call('POST', `/portal/licenses/${theirs.lid}/air-gap-deactivations`, cookie, { code: a.deactivation(theirs.lid, made.data.activationId) }))
        .statusCode,
    ).toBe(404);
    const done = await call('POST', `/portal/licenses/${mine.lid}/air-gap-deactivations`, cookie, { code: a.deactivation(mine.lid, made.data.activationId) });
    expect(done.data).toMatchObject({ released: true });
    const over = await call('POST', `/portal/licenses/${mine.lid}/air-gap-deactivations`, cookie, { code: b.deactivation(mine.lid, second.activationId) });
    expect([over.statusCode, over.data.error]).toEqual([403, 'self-service release limit reached']);
    expect(
      (await call('POST', `/portal/licenses/${mine.lid}/air-gap-deactivations`, cookie, { code: b.deactivation(mine.lid, second.activationId), force: true }))
        .statusCode,
    ).toBe(400);
    expect((await call('GET', `/portal/licenses/${mine.lid}`, cookie)).data.releasesLeft).toBe(0);
  });
});
