import { createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALGORITHM_INFO, buildFingerprint, fpDigest, receiptMessage, signLicence, type Algorithm } from '@licensor/protocol';
import { startHarness, type Harness } from '../harness.js';
import { addDays, addMonths, fingerprint, insertCheckBinding, ISO_MS, licenceRow, todayUtc } from '../licence-helpers.js';
import { checkBody, checkedProduct, nonce, receiptVerifies, type CheckedProduct } from '../check-helpers.js';
import { javaAvailable, javaVerify } from '../../../protocol/test/java-verifier.js';
import { dashboardMetrics } from '../../src/dashboard/service.js';
import { operatorCtx } from '../../src/orgs/service.js';

let h: Harness;
let p: CheckedProduct;

beforeAll(async () => {
  h = await startHarness();
  p = await checkedProduct(h);
});
afterAll(() => h?.close());

const liveSeats = async (lid: string) => {
  const licence = await licenceRow(h, lid);
  return h.database.db.selectFrom('machine_bindings').selectAll().where('licence_id', '=', licence.id).where('released_at', 'is', null).execute();
};
const audits = async (lid: string, action: string) => (await h.admin('GET', `/licenses/${lid}/activity`)).data.items.filter((e: any) => e.action === action);

describe('a valid check', () => {
  it('binds the first machine, answers every field, and its receipt carries the verdict', async () => {
    const licence = await p.issue();
    const body = checkBody(licence.licenseString, 'first');
    const response = await p.check(body);
    expect(response.statusCode).toBe(200);
    const a = response.data;
    expect(a).toMatchObject({ status: 'ACTIVE', valid: true, lid: licence.lid, nonce: body.nonce, checkEverySeconds: 86400, checkMaxSeconds: 604800 });
    expect(a.boundAt).toMatch(ISO_MS);
    expect(a.checkedAt).toMatch(ISO_MS);
    expect(a.serverTime).toBe(a.checkedAt);
    expect(a.expiresAt).toBe(licence.expiresAt);
    expect(a.graceEndsAt).toBe(licence.expiresAt);
    for (const absent of ['reason', 'renewed', 'revokedAt', 'revokedReason']) expect(a).not.toHaveProperty(absent);
    expect(receiptVerifies(a, body.fingerprint, p.publicKeyPem)).toBe(true);
    // The receipt covers exactly the answer's strings: another nonce or status does not verify.
    expect(receiptVerifies({ ...a, nonce: nonce() }, body.fingerprint, p.publicKeyPem)).toBe(false);
    expect(receiptVerifies({ ...a, status: 'GRACE' }, body.fingerprint, p.publicKeyPem)).toBe(false);
    expect(receiptVerifies(a, fingerprint('other'), p.publicKeyPem)).toBe(false);

    const bound = await audits(licence.lid, 'machine.bound');
    expect(bound).toHaveLength(1);
    expect(bound[0].actor).toBe('check');
    const detail = (await h.admin('GET', `/licenses/${licence.lid}`)).data;
    expect(detail).toMatchObject({ activated: true, seatsUsed: 1, boundAt: a.boundAt, checkHealth: 'OK' });
    expect(detail.lastCheckedAt).toBe(a.checkedAt);

    // The same machine again: same seat, nothing new written.
    const again = (await p.check({ ...body, nonce: nonce() })).data;
    expect(again).toMatchObject({ valid: true, boundAt: a.boundAt });
    expect(await liveSeats(licence.lid)).toHaveLength(1);
    expect(await audits(licence.lid, 'machine.bound')).toHaveLength(1);
  });

  it('recognises a machine by fingerprintNeed components: the most equal seat, then the oldest', async () => {
    const own = await checkedProduct(h, { fingerprintNeed: 3 });
    const licence = await own.issue({ maxMachines: 2 });
    const fp = (machine: string, host: string, mac: string, cpu: string, disk: string) => buildFingerprint({ machine, host, mac, cpu, disk });
    const run = async (f: string) => (await own.check({ license: licence.licenseString, fingerprint: f, nonce: nonce() })).data;
    const first = await run(fp('a', 'h', 'm', 'c1', 'd1'));
    const second = await run(fp('b', 'h2', 'm', 'c2', 'd2'));
    expect(first.valid && second.valid).toBe(true);
    // Three equal components with each seat: the oldest wins.
    expect(await run(fp('a', 'h', 'm', 'c2', 'd2'))).toMatchObject({ valid: true, boundAt: first.boundAt });
    // Four with the second, one with the first.
    expect(await run(fp('b', 'h2', 'm', 'c2', 'd9'))).toMatchObject({ valid: true, boundAt: second.boundAt });
    // Two with each: a third machine, and no seat is left.
    expect(await run(fp('a', 'h', 'x', 'c2', 'd2'))).toMatchObject({ valid: false, reason: 'SEATS_FULL' });
    expect(await liveSeats(licence.lid)).toHaveLength(2);
  });

  it('stamps lastCheckedAt at most once a minute, and not for an invalid check', async () => {
    const licence = await p.issue();
    const body = checkBody(licence.licenseString, 'stamp');
    const lastCheckedAt = async () => (await h.admin('GET', `/licenses/${licence.lid}`)).data.lastCheckedAt;
    const first = (await p.check(body)).data;
    expect(await lastCheckedAt()).toBe(first.checkedAt);
    await p.check({ ...body, nonce: nonce() });
    expect(await lastCheckedAt()).toBe(first.checkedAt);
    const longAgo = Date.now() - 61_000;
    await h.database.db.updateTable('licence_stamps').set({ last_checked_at: longAgo }).where('lid', '=', licence.lid).execute();
    await p.check(checkBody(licence.licenseString, 'someone else'));
    expect(await lastCheckedAt()).toBe(new Date(longAgo).toISOString());
    // Gathered with other checks' stamps and written together, before the next Management API read.
    const later = (await p.check({ ...body, nonce: nonce() })).data;
    expect(await lastCheckedAt()).toBe(later.checkedAt);
    expect(
      (await h.database.db.selectFrom('licence_stamps').select('last_checked_at').where('lid', '=', licence.lid).executeTakeFirstOrThrow()).last_checked_at,
    ).toBe(Date.parse(later.checkedAt));
  });

  it('writes every stamp gathered in a second, however many transactions they take', async () => {
    const licences: any[] = [];
    for (let i = 0; i < 130; i++) licences.push(await p.issue());
    const answers: any[] = [];
    for (const [i, licence] of licences.entries()) answers.push((await p.check(checkBody(licence.licenseString, `many ${i}`))).data);
    // One Management API read waits for all of them.
    await h.admin('GET', `/licenses/${licences[0].lid}`);
    const stored = await h.database.db
      .selectFrom('licence_stamps')
      .select(['lid', 'last_checked_at'])
      .where(
        'lid',
        'in',
        licences.map((l) => l.lid),
      )
      .execute();
    const stamped = new Map(stored.map((row) => [row.lid, row.last_checked_at]));
    expect(licences.map((l, i) => stamped.get(l.lid) === Date.parse(answers[i].checkedAt))).not.toContain(false);
  });

  it("stores the machine's label and when its seat was last seen, both shown with the machines", async () => {
    const licence = await p.issue({ maxMachines: 2 });
    const body = checkBody(licence.licenseString, 'labelled');
    const first = (await p.check({ ...body, machineLabel: 'Ada’s laptop' })).data;
    expect(first.valid).toBe(true);
    const machines = async () => (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect((await machines())[0]).toMatchObject({ label: 'Ada’s laptop', lastSeenAt: first.checkedAt });
    // Within the minute: a new label is stored, the seen time stays.
    await p.check({ ...body, nonce: nonce(), machineLabel: 'ADA-PC' });
    expect((await machines())[0]).toMatchObject({ label: 'ADA-PC', lastSeenAt: first.checkedAt });
    // Without a label the stored one stays; a minute on, the seen time moves.
    await h.database.db
      .updateTable('machine_bindings')
      .set({ last_seen_at: Date.now() - 61_000 })
      .where('label', '=', 'ADA-PC')
      .execute();
    const later = (await p.check({ ...body, nonce: nonce() })).data;
    expect((await machines())[0]).toMatchObject({ label: 'ADA-PC', lastSeenAt: later.checkedAt });
    for (const machineLabel of ['', 'x'.repeat(65), 'tab\there', 'nul\u0000']) {
      const refused = await p.check({ ...body, nonce: nonce(), machineLabel });
      expect(refused.statusCode).toBe(400);
      expect(refused.data.error).toMatch(/^Machine label\b/);
    }
  });

  it('counts a HYBRID licence activated offline like any other: its at-issue machines hold seats', async () => {
    const fp = fingerprint('hybrid-box');
    const licence = await p.issue({ licenceType: 'HYBRID', activation: 'OFFLINE', fingerprint: fp });
    const a = (await p.check({ license: licence.licenseString, fingerprint: fp, nonce: nonce() })).data;
    expect(a).toMatchObject({ valid: true, status: 'ACTIVE', boundAt: licence.boundAt });
    const other = (await p.check(checkBody(licence.licenseString, 'hybrid-other'))).data;
    expect(other).toMatchObject({ valid: false, reason: 'FINGERPRINT_MISMATCH' });
    expect(await audits(licence.lid, 'machine.bound')).toHaveLength(0);
  });
});

describe('receipts', () => {
  const algorithms: Algorithm[] = ['ED25519', 'EC_P256', 'EC_P384', 'RSA_2048'];
  const signed: Array<{ algorithm: Algorithm; answer: any; fp: string; pem: string }> = [];

  it.each(algorithms)('verify with the product public key (%s)', async (algorithm) => {
    const own = await checkedProduct(h, { algorithm });
    const licence = await own.issue();
    const body = checkBody(licence.licenseString, `algo-${algorithm}`);
    const a = (await own.check(body)).data;
    expect(a.valid).toBe(true);
    expect(receiptVerifies(a, body.fingerprint, own.publicKeyPem)).toBe(true);
    signed.push({ algorithm, answer: a, fp: body.fingerprint, pem: own.publicKeyPem });
  });

  it('are signed with the key that signed the presented licence, after a key rotation too', async () => {
    const own = await checkedProduct(h);
    const old = await own.issue();
    const rotated = await h.admin('PUT', `/products/${own.id}`, { regenerateKey: true });
    expect(rotated.statusCode).toBe(200);
    const fresh = await own.issue();
    const oldAnswer = (await own.check(checkBody(old.licenseString, 'rot-1'))).data;
    expect(oldAnswer.valid).toBe(true);
    expect(receiptVerifies(oldAnswer, fingerprint('rot-1'), own.publicKeyPem)).toBe(true);
    expect(receiptVerifies(oldAnswer, fingerprint('rot-1'), rotated.data.publicKeyPem)).toBe(false);
    const newAnswer = (await own.check(checkBody(fresh.licenseString, 'rot-2'))).data;
    expect(receiptVerifies(newAnswer, fingerprint('rot-2'), rotated.data.publicKeyPem)).toBe(true);
  });

  it.skipIf(!javaAvailable())('verify with the Java verifier', async () => {
    expect(signed.length).toBe(algorithms.length);
    const results = await javaVerify(
      signed.map(({ algorithm, answer, fp, pem }) => ({
        algorithm: ALGORITHM_INFO[algorithm].signatureAlgorithm,
        publicKey: createPublicKey(pem),
        message: receiptMessage({
          lid: answer.lid,
          status: answer.status,
          nonce: answer.nonce,
          checkedAt: answer.checkedAt,
          boundAt: answer.boundAt,
          fpDigest: fpDigest(fp),
        }),
        signature: Buffer.from(answer.receipt, 'base64url'),
      })),
    );
    expect(results).toEqual(signed.map(() => true));
  });
  if (!javaAvailable()) it('Java verifier skipped: no javac/java on this machine', () => {});
});

describe('reasons, in precedence', () => {
  it('UNKNOWN_LICENCE for a correctly signed licence with no record: no status, no seat, no optional fields', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const own = await checkedProduct(h, { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) });
    const product = (await h.admin('GET', `/products/${own.id}`)).data;
    const lid = randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const license = signLicence(
      { lid, prd: product.productKey, org: h.slug, typ: 'ONLINE', iat: now, exp: now + 86400, grace: 0, mm: 1, chk: 3600, max: 7200 },
      privateKey,
    );
    const body = checkBody(license, 'unknown');
    const a = (await own.check(body)).data;
    expect(Object.keys(a).sort()).toEqual(['checkedAt', 'lid', 'nonce', 'reason', 'receipt', 'serverTime', 'valid']);
    expect(a).toMatchObject({ valid: false, reason: 'UNKNOWN_LICENCE', lid });
    expect(receiptVerifies(a, body.fingerprint, own.publicKeyPem)).toBe(true);
  });

  it('REVOKED at once, with revokedAt and revokedReason, before SUPERSEDED', async () => {
    const licence = await p.issue();
    const body = checkBody(licence.licenseString, 'rev');
    const before = (await p.check(body)).data;
    await h.admin('POST', `/licenses/${licence.lid}/renew`, {});
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, { reason: 'chargeback' });
    const a = (await p.check({ ...body, nonce: nonce() })).data;
    expect(a).toMatchObject({ status: 'REVOKED', valid: false, reason: 'REVOKED', revokedReason: 'chargeback', renewed: true, boundAt: before.boundAt });
    expect(a.revokedAt).toMatch(ISO_MS);
    expect(receiptVerifies(a, body.fingerprint, p.publicKeyPem)).toBe(true);
    await h.admin('POST', `/licenses/${licence.lid}/reinstate`);
    expect((await p.check({ ...body, nonce: nonce() })).data.reason).toBe('SUPERSEDED');
  });

  it('SUPERSEDED for a renewed term: its own status and seat signed, never the new string, and it does not bind', async () => {
    const licence = await p.issue();
    const body = checkBody(licence.licenseString, 'sup');
    const bound = (await p.check(body)).data;
    const renewed = (await h.admin('POST', `/licenses/${licence.lid}/renew`, {})).data;
    const response = await p.check({ ...body, nonce: nonce() });
    const a = response.data;
    expect(a).toMatchObject({ status: 'ACTIVE', valid: false, reason: 'SUPERSEDED', renewed: true, boundAt: bound.boundAt, expiresAt: licence.expiresAt });
    expect(response.body).not.toContain(renewed.licenseString.split('.')[0]);
    expect(receiptVerifies(a, body.fingerprint, p.publicKeyPem)).toBe(true);
    const unbound = (await p.check(checkBody(licence.licenseString, 'sup-new-machine'))).data;
    expect(unbound).toMatchObject({ reason: 'SUPERSEDED', status: 'ACTIVE' });
    expect(unbound).not.toHaveProperty('boundAt');
    expect(await liveSeats(licence.lid)).toHaveLength(1);
    // The current string answers normally.
    expect((await p.check({ ...body, license: renewed.licenseString, nonce: nonce() })).data).toMatchObject({ valid: true, boundAt: bound.boundAt });
  });

  it('SUPERSEDED before EXPIRED: an expired term that was renewed signs EXPIRED', async () => {
    const licence = await p.issue({ issueDate: addMonths(todayUtc(), -3), validityMonths: 1 });
    await h.admin('POST', `/licenses/${licence.lid}/renew`, {});
    const a = (await p.check(checkBody(licence.licenseString, 'sup-exp'))).data;
    expect(a).toMatchObject({ status: 'EXPIRED', valid: false, reason: 'SUPERSEDED', renewed: true });
  });

  it('NOT_YET_VALID for a pending term, which binds nothing', async () => {
    const licence = await p.issue({ issueDate: addDays(todayUtc(), 5) });
    const a = (await p.check(checkBody(licence.licenseString, 'pending'))).data;
    expect(a).toMatchObject({ status: 'PENDING', valid: false, reason: 'NOT_YET_VALID' });
    expect(a).not.toHaveProperty('boundAt');
    expect(await liveSeats(licence.lid)).toHaveLength(0);
  });

  it('EXPIRED before FINGERPRINT_MISMATCH; GRACE is valid', async () => {
    const expired = await p.issue({ issueDate: addMonths(todayUtc(), -3), validityMonths: 1 });
    await insertCheckBinding(h, expired.lid, 'exp-holder');
    const a = (await p.check(checkBody(expired.licenseString, 'exp-other'))).data;
    expect(a).toMatchObject({ status: 'EXPIRED', valid: false, reason: 'EXPIRED' });
    const held = (await p.check(checkBody(expired.licenseString, 'exp-holder'))).data;
    expect(held).toMatchObject({ status: 'EXPIRED', valid: false, reason: 'EXPIRED' });
    expect(held.boundAt).toMatch(ISO_MS);

    const grace = await p.issue({ issueDate: addMonths(todayUtc(), -1), validityMonths: 1, graceDays: 30 });
    const g = (await p.check(checkBody(grace.licenseString, 'grace'))).data;
    expect(grace.status).toBe('GRACE');
    expect(g).toMatchObject({ status: 'GRACE', valid: true, graceEndsAt: addDaysIso(grace.expiresAt, 30) });
  });

  it('FINGERPRINT_MISMATCH on a single seat, SEATS_FULL beyond several: bindings stay as they were', async () => {
    const single = await p.issue();
    await p.check(checkBody(single.licenseString, 'one'));
    const body = checkBody(single.licenseString, 'two');
    const mismatch = (await p.check(body)).data;
    expect(mismatch).toMatchObject({ status: 'ACTIVE', valid: false, reason: 'FINGERPRINT_MISMATCH' });
    expect(mismatch).not.toHaveProperty('boundAt');
    expect(receiptVerifies(mismatch, body.fingerprint, p.publicKeyPem)).toBe(true);
    expect(await liveSeats(single.lid)).toHaveLength(1);

    const multi = await p.issue({ maxMachines: 2 });
    for (const m of ['m1', 'm2']) expect((await p.check(checkBody(multi.licenseString, m))).data.valid).toBe(true);
    expect((await p.check(checkBody(multi.licenseString, 'm3'))).data).toMatchObject({ valid: false, reason: 'SEATS_FULL' });
    expect(await liveSeats(multi.lid)).toHaveLength(2);
    // A released seat is free again.
    await h.admin('POST', `/licenses/${multi.lid}/release-binding`, {});
    expect((await p.check(checkBody(multi.licenseString, 'm3'))).data.valid).toBe(true);
  });
});

const addDaysIso = (iso: string, days: number) => new Date(Date.parse(iso) + days * 86_400_000).toISOString();

describe('changes take effect on the next check', () => {
  it('a rotated check token stops working at once', async () => {
    const own = await checkedProduct(h);
    const licence = await own.issue();
    expect((await own.check(checkBody(licence.licenseString, 'tok'))).statusCode).toBe(200);
    const rotated = await h.admin('POST', `/products/${own.id}/check-token`);
    expect((await own.check(checkBody(licence.licenseString, 'tok'))).statusCode).toBe(401);
    const fresh = await h.as({ token: rotated.data.checkToken })('POST', `/public/license/${own.checkId}/check`, checkBody(licence.licenseString, 'tok'));
    expect(fresh.statusCode).toBe(200);
  });
});

describe('checks per day', () => {
  it('are counted in memory and written together, in time for the dashboard to read them', async () => {
    const own = await startHarness();
    try {
      const product = await checkedProduct(own);
      const licence = await product.issue();
      await Promise.all(Array.from({ length: 20 }, () => product.check(checkBody(licence.licenseString, 'count'))));
      expect((await own.admin('GET', '/dashboard/metrics')).data.series.checks.at(-1).count).toBe(20);
      // One row per organisation and quarter hour, however many checks (a flush between checks adds to it).
      expect((await own.database.db.selectFrom('check_counts').select('count').execute()).map((r) => Number(r.count))).toEqual([20]);
      await Promise.all(Array.from({ length: 5 }, () => product.check(checkBody(licence.licenseString, 'count'))));
      // ...and what is gathered when the app closes is written then.
      await own.app.close();
      expect((await dashboardMetrics(await operatorCtx(own.database, own.slug))).series.checks.at(-1)!.count).toBe(25);
    } finally {
      await own.close();
    }
  });
});
