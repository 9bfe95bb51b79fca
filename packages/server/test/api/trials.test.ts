import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFingerprint } from '@licensor/protocol';
import { startHarness, type Harness } from '../harness.js';
import { createProduct, licenceRow } from '../licence-helpers.js';
import { receiptVerifies } from '../check-helpers.js';
import { claimsOf, deviceKey, machine, startBody, trialProduct } from '../trial-helpers.js';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ LICENSOR_TRUST_PROXY: 'true' });
});
afterAll(() => h?.close());

const audits = (lid: string) => h.database.db.selectFrom('audit_entries').selectAll().where('lid', '=', lid).execute();
const count = async (table: 'licences' | 'trial_entries' | 'machine_bindings') =>
  Number(
    (
      await h.database.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('the product trial policy', () => {
  it('is off by default, with the documented defaults', async () => {
    const product = await createProduct(h.admin);
    expect(product).toMatchObject({ trialDays: 0, trialParams: {}, trialMeters: {}, trialDailyLimit: null, trialAddressDailyLimit: 20 });
  });

  it('takes every field on create and PUT, null meaning no limit', async () => {
    const product = await createProduct(h.admin, {
      licenceType: 'ONLINE',
      params: [{ key: 'edition', type: 'ENUM', options: ['basic', 'pro'], required: true }],
      trialDays: 30,
      trialParams: { edition: 'pro' },
      trialDailyLimit: 100,
      trialAddressDailyLimit: null,
    });
    expect(product).toMatchObject({ trialDays: 30, trialParams: { edition: 'pro' }, trialDailyLimit: 100, trialAddressDailyLimit: null });
    const edited = await h.admin('PUT', `/products/${product.id}`, { trialDays: 7, trialAddressDailyLimit: 5 });
    expect(edited.statusCode).toBe(200);
    expect(edited.data).toMatchObject({ trialDays: 7, trialParams: { edition: 'pro' }, trialDailyLimit: 100, trialAddressDailyLimit: 5 });
  });

  it('drops a removed parameter from trialParams in the same save', async () => {
    const product = await createProduct(h.admin, {
      params: [
        { key: 'seats', type: 'INTEGER' },
        { key: 'tier', type: 'STRING' },
      ],
      trialParams: { seats: 2, tier: 'x' },
    });
    const edited = await h.admin('PUT', `/products/${product.id}`, { params: [{ key: 'tier', type: 'STRING' }] });
    expect(edited.statusCode).toBe(200);
    expect(edited.data.trialParams).toEqual({ tier: 'x' });
  });

  it('takes trialMeters of the declared meters, checked as issue checks meters, and drops one whose meter is removed', async () => {
    const meters = [
      { key: 'exports', limit: 1000 },
      { key: 'seats', limit: 10, period: 'NONE' },
    ];
    const product = await createProduct(h.admin, { meters, trialMeters: { exports: { limit: 50 } } });
    expect(product.trialMeters).toEqual({ exports: { limit: 50 } });
    for (const [trialMeters, error] of [
      [{ renders: { limit: 5 } }, 'Meter "renders" (trialMeters.renders): not a meter of this product'],
      [{ exports: { limit: null, overage: 5 } }, 'Overage of exports (trialMeters.exports.overage): an unlimited meter has no overage'],
    ] as const) {
      const refused = await h.admin('PUT', `/products/${product.id}`, { trialMeters });
      expect([refused.statusCode, refused.data]).toEqual([400, { error }]);
    }
    expect((await h.admin('GET', `/products/${product.id}`)).data.trialMeters).toEqual({ exports: { limit: 50 } });
    const edited = await h.admin('PUT', `/products/${product.id}`, { meters: [meters[1]] });
    expect([edited.statusCode, edited.data.trialMeters]).toEqual([200, {}]);
  });

  it('refuses bad policies with a 400 naming the field, changing nothing', async () => {
    const product = await createProduct(h.admin, { params: [{ key: 'seats', type: 'INTEGER', required: true }] });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ trialDays: 91 }, /trial ?days/i],
      [{ trialDays: -1 }, /trial ?days/i],
      [{ trialDays: 1.5 }, /trial ?days/i],
      [{ trialDailyLimit: 0 }, /trial ?daily ?limit/i],
      [{ trialDailyLimit: 100_001 }, /trial ?daily ?limit/i],
      [{ trialAddressDailyLimit: 10_001 }, /trial ?address ?daily ?limit/i],
      [{ trialParams: { nope: 1 } }, /^Trial value "nope" \(trialParams\.nope\): /],
      [{ trialParams: { seats: 'two' } }, /^Trial value of [Ss]eats \(trialParams\.seats\): must be a whole number/],
      [{ trialDays: 14 }, /^Trial value of [Ss]eats \(trialParams\.seats\): required/],
      [{ trialMeters: { exports: { limit: 5 } } }, /^Meter "exports" \(trialMeters\.exports\): not a meter of this product$/],
      [{ trialMeters: { exports: { limit: 5, other: 1 } } }, /trial ?meters/i],
    ];
    for (const [body, error] of cases) {
      const response = await h.admin('PUT', `/products/${product.id}`, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.data.error).toMatch(error);
    }
    const floating = await h.admin('POST', '/products', { productKey: 'floating-trial', name: 'Floating', seatModel: 'FLOATING', trialDays: 14 });
    expect(floating.statusCode).toBe(400);
    expect(floating.data.error).toMatch(/^Trial days \(trialDays\): a FLOATING product/);
    expect((await h.admin('GET', `/products/${product.id}`)).data).toMatchObject({ trialDays: 0, trialParams: {} });
  });
});

describe('starting a trial', () => {
  it('starts a trial: an ONLINE term of trialDays exactly, this machine signed in, answered with its check', async () => {
    const p = await trialProduct(h, { params: [{ key: 'edition', type: 'STRING', defaultValue: 'basic' }], trialParams: { edition: 'trial' } });
    const fp = machine('first');
    const response = await p.start(startBody(fp, { email: 'ann@example.com', machineLabel: 'Ann’s laptop' }));
    expect(response.statusCode).toBe(201);
    const answer = response.data;
    expect(answer).toMatchObject({ valid: true, status: 'ACTIVE', checkEverySeconds: 86_400 });
    expect(answer.converted).toBeUndefined();
    expect(receiptVerifies(answer, fp, p.publicKeyPem)).toBe(true);
    const claims = claimsOf(answer.license);
    expect(Object.keys(claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'iat', 'exp', 'grace', 'fp', 'fpn', 'mm', 'chk', 'max', 'trl', 'edition']);
    expect(claims).toMatchObject({ v: 3, lid: answer.lid, typ: 'ONLINE', grace: 0, fp, fpn: 3, mm: 1, trl: true, edition: 'trial' });
    expect(claims.exp! - claims.iat).toBe(14 * 86_400);
    expect(answer.expiresAt).toBe(new Date(claims.exp! * 1000).toISOString());

    const row = await licenceRow(h, answer.lid);
    expect(row).toMatchObject({
      trial: 1,
      licensee: 'Trial',
      customer_id: null,
      licensee_email: 'ann@example.com',
      issued_by: 'trial',
      licence_type: 'ONLINE',
      max_machines: 1,
      grace_days: 0,
      trial_installations: 1,
    });
    expect(Number(row.trial_started_at)).toBe(claims.iat * 1000);
    const seats = await h.database.db.selectFrom('machine_bindings').selectAll().where('licence_id', '=', row.id).execute();
    expect(seats).toMatchObject([{ fingerprint: fp, at_issue: 1, label: 'Ann’s laptop' }]);
    const trail = await audits(answer.lid);
    expect(trail.map((a) => [a.action, a.actor])).toEqual([['licence.trial_started', 'trial']]);
    expect(trail[0]!.details).not.toMatch(/ann@example|laptop/);
  });

  it("signs a trial with the product's meters, trialMeters applied, and keeps them on its record", async () => {
    const p = await trialProduct(h, {
      meters: [
        { key: 'exports', label: 'Exports', limit: 1000, overage: 10 },
        { key: 'renders', limit: null },
      ],
      trialMeters: { exports: { limit: 20, overage: 0 } },
    });
    const response = await p.start(startBody(machine('metered')));
    expect(response.statusCode).toBe(201);
    const claims = claimsOf(response.data.license);
    expect(Object.keys(claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'iat', 'exp', 'grace', 'fp', 'fpn', 'mm', 'chk', 'max', 'mtr', 'trl']);
    expect(claims.mtr).toEqual([
      { k: 'exports', p: 'MONTH', l: 20, o: 0 },
      { k: 'renders', p: 'MONTH', l: null, o: 0 },
    ]);
    const licence = (await h.admin('GET', `/licenses/${response.data.lid}`)).data;
    expect(licence.meters).toEqual([
      { key: 'exports', label: 'Exports', period: 'MONTH', limit: 20, overage: 0 },
      { key: 'renders', label: 'renders', period: 'MONTH', limit: null, overage: 0 },
    ]);
  });

  it('gives the machine its own trial back: a retry, a reinstall, a changed part; a later email is ignored', async () => {
    const p = await trialProduct(h);
    const fp = machine('returning');
    const first = await p.start(startBody(fp));
    expect(first.statusCode).toBe(201);
    const retry = await p.start(startBody(fp, { email: 'later@example.com' }));
    expect(retry.statusCode).toBe(200);
    expect(retry.data).toMatchObject({ lid: first.data.lid, license: first.data.license, valid: true });
    // One component changed: four of five still equal the trial's, above its fpn of 3.
    const changed = machine('returning', { host: 'renamed' });
    const again = await p.start(startBody(changed));
    expect(again.statusCode).toBe(200);
    expect(again.data.lid).toBe(first.data.lid);
    expect(receiptVerifies(again.data, changed, p.publicKeyPem)).toBe(true);
    const row = await licenceRow(h, first.data.lid);
    expect(row.licensee_email).toBeNull();
    expect(row.trial_installations).toBe(3);
    // The machine's own trial, whatever became of it: revoked, and trials since turned off.
    expect((await h.admin('POST', `/licenses/${first.data.lid}/revoke`, {})).statusCode).toBe(200);
    expect((await h.admin('PUT', `/products/${p.id}`, { trialDays: 0 })).statusCode).toBe(200);
    const revoked = await p.start(startBody(fp));
    expect(revoked.statusCode).toBe(200);
    expect(revoked.data).toMatchObject({ lid: first.data.lid, valid: false, reason: 'REVOKED', status: 'REVOKED' });
  });

  it('records each device key once, the first 100 only', async () => {
    const p = await trialProduct(h);
    const fp = machine('installs');
    const key = deviceKey();
    const first = await p.start({ ...startBody(fp), devicePublicKey: key });
    await p.start({ ...startBody(fp), devicePublicKey: key });
    const row = await licenceRow(h, first.data.lid);
    expect(row.trial_installations).toBe(1);
  });

  it('answers TRIALS_OFF while trialDays is 0, or the organisation is suspended', async () => {
    const p = await trialProduct(h, { trialDays: 0 });
    const response = await p.start(startBody(machine('off')));
    expect(response.statusCode).toBe(403);
    expect(response.data).toEqual({ error: expect.stringMatching(/^trials are off/), reason: 'TRIALS_OFF' });
  });

  it('answers TRIALS_OFF once the organisation holds its trialLimit trials', async () => {
    const p = await trialProduct(h);
    const before = await h.database.db
      .selectFrom('licences')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('trial', '=', 1)
      .where('revoked', '=', 0)
      .executeTakeFirstOrThrow();
    await h.database.db
      .updateTable('organisations')
      .set({ trial_limit: Number(before.n) + 1 })
      .where('slug', '=', h.slug)
      .execute();
    try {
      expect((await p.start(startBody(machine('limit-a')))).statusCode).toBe(201);
      const refused = await p.start(startBody(machine('limit-b')));
      expect(refused.statusCode).toBe(403);
      expect(refused.data.reason).toBe('TRIALS_OFF');
    } finally {
      await h.database.db.updateTable('organisations').set({ trial_limit: null }).where('slug', '=', h.slug).execute();
    }
  });

  it('answers TRIAL_USED, naming what matched, once the product needs fewer components than the trial did', async () => {
    const p = await trialProduct(h, { fingerprintNeed: 4 });
    expect((await p.start(startBody(machine('used')))).statusCode).toBe(201);
    // Three components equal: below the trial's fpn of 4, so not its own trial; a new trial while the product needs 4.
    const like = machine('used', { host: 'other-host', cpu: 'other-cpu' });
    await h.admin('PUT', `/products/${p.id}`, { fingerprintNeed: 3 });
    const response = await p.start(startBody(like));
    expect(response.statusCode).toBe(403);
    expect(response.data).toEqual({ error: expect.any(String), reason: 'TRIAL_USED', matched: ['machine', 'mac', 'disk'] });
  });

  it('answers TRIAL_LIMIT with Retry-After: the product limit, then the address limit', async () => {
    const p = await trialProduct(h, { trialDailyLimit: 2, trialAddressDailyLimit: 1 });
    expect((await p.start(startBody(machine('lim-1')), '198.51.100.1')).statusCode).toBe(201);
    const sameAddress = await p.start(startBody(machine('lim-2')), '198.51.100.1');
    expect(sameAddress.statusCode).toBe(429);
    expect(sameAddress.data).toEqual({ error: expect.stringMatching(/address/), reason: 'TRIAL_LIMIT' });
    const after = Number(sameAddress.headers['retry-after']);
    expect(after).toBeGreaterThan(86_390);
    expect(after).toBeLessThanOrEqual(86_400);
    // An IPv4-mapped IPv6 address is its IPv4 address.
    expect((await p.start(startBody(machine('lim-2')), '::ffff:198.51.100.1')).statusCode).toBe(429);
    expect((await p.start(startBody(machine('lim-2')), '198.51.100.2')).statusCode).toBe(201);
    const product = await p.start(startBody(machine('lim-3')), '198.51.100.3');
    expect(product.statusCode).toBe(429);
    expect(product.data.error).toMatch(/product/);
  });

  it('counts IPv6 by its /64, and its /48 at five times the limit', async () => {
    const p = await trialProduct(h, { trialAddressDailyLimit: 1 });
    expect((await p.start(startBody(machine('v6-a')), '2001:db8:1:1::1')).statusCode).toBe(201);
    expect((await p.start(startBody(machine('v6-b')), '2001:db8:1:1:ffff::2')).statusCode).toBe(429);
    for (let i = 2; i <= 5; i++) expect((await p.start(startBody(machine(`v6-${i}`)), `2001:db8:1:${i}::1`)).statusCode).toBe(201);
    const network = await p.start(startBody(machine('v6-6')), '2001:db8:1:6::1');
    expect(network.statusCode).toBe(429);
    expect(network.data.error).toMatch(/network/);
  });

  it('refuses bad bodies with a 400 and changes nothing', async () => {
    const p = await trialProduct(h, { fingerprintNeed: 4 });
    const fp = machine('bad');
    const licences = await count('licences');
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...startBody(fp), extra: 1 }, /extra/i],
      [{ ...startBody(fp), nonce: 'short' }, /nonce/i],
      [{ ...startBody(fp), fingerprint: 'SVC1.nope.nope' }, /^Fingerprint \(fingerprint\): /],
      [{ ...startBody(fp), devicePublicKey: 'A'.repeat(42) }, /device ?public ?key/i],
      [{ ...startBody(fp), devicePublicKey: `${'A'.repeat(42)}B` }, /^Device public key \(devicePublicKey\): /],
      [{ ...startBody(fp), email: `${'a'.repeat(250)}@example.com` }, /email/i],
      [{ ...startBody(fp), email: 'not an email' }, /email/i],
      [{ ...startBody(fp), machineLabel: 'x'.repeat(65) }, /machine ?label/i],
      [{ fingerprint: fp, nonce: 'n'.repeat(20) }, /device ?public ?key/i],
      [
        startBody(machine('bad', { host: null, cpu: null })),
        /^Fingerprint \(fingerprint\): 3 of its components are present, and this product needs at least 4/,
      ],
    ];
    for (const [body, error] of cases) {
      const response = await p.start(body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.data.error).toMatch(error);
    }
    expect(await count('licences')).toBe(licences);
    const notJson = await h.as({ token: p.token })('POST', `/public/license/${p.checkId}/trial`, 'x', { 'content-type': 'text/plain' });
    expect(notJson.statusCode).toBe(415);
    const noToken = await h.anonymous('POST', `/public/license/${p.checkId}/trial`, startBody(fp));
    expect(noToken.statusCode).toBe(401);
  });

  it('keeps only keyed hashes in the ledger', async () => {
    const p = await trialProduct(h);
    const fp = machine('hashes');
    const started = await p.start(startBody(fp));
    const row = await licenceRow(h, started.data.lid);
    const entry = await h.database.db.selectFrom('trial_entries').selectAll().where('licence_id', '=', row.id).executeTakeFirstOrThrow();
    const parts = Object.values(parseFingerprint(fp));
    for (const name of ['machine', 'host', 'mac', 'cpu', 'disk', 'addr'] as const) {
      expect(entry[name]).toMatch(/^[0-9a-f]{32}$/);
      expect(parts.some((part) => entry[name]!.includes(part))).toBe(false);
    }
    expect(JSON.stringify(entry)).not.toContain('192.0.2.1');
  });

  it('answers a trial of a product in another product apart: other products keep their own ledger', async () => {
    const a = await trialProduct(h);
    const b = await trialProduct(h);
    const fp = machine('two-products');
    expect((await a.start(startBody(fp))).statusCode).toBe(201);
    expect((await b.start(startBody(fp))).statusCode).toBe(201);
  });
});

describe("a trial's resource and vendor actions", () => {
  it('answers the trial fields on every licence, and filters lists, pages and exports by trial', async () => {
    const p = await trialProduct(h);
    const started = await p.start(startBody(machine('fields')));
    const trial = (await h.admin('GET', `/licenses/${started.data.lid}`)).data;
    expect(trial).toMatchObject({
      trial: true,
      trialStartedAt: new Date(claimsOf(started.data.license).iat * 1000).toISOString(),
      trialConvertedTo: null,
      trialConvertedAt: null,
      trialLedgerResetAt: null,
      trialInstallations: 1,
      convertedFromTrial: null,
      licensee: 'Trial',
      customerId: null,
      issuedBy: 'trial',
    });
    const paid = await p.issue();
    expect(paid).toMatchObject({ trial: false, trialStartedAt: null, trialInstallations: null, convertedFromTrial: null });
    const trials = (await h.admin('GET', `/licenses?productId=${p.id}&trial=true`)).data;
    expect(trials.map((l: any) => l.lid)).toEqual([started.data.lid]);
    const others = (await h.admin('GET', `/licenses?productId=${p.id}&trial=false`)).data;
    expect(others.map((l: any) => l.lid)).toEqual([paid.lid]);
    const page = (await h.admin('GET', `/licenses/page?productId=${p.id}&trial=true`)).data;
    expect(page.items.map((l: any) => l.lid)).toEqual([started.data.lid]);
    expect(page.total).toBe(1);
    const csv = await h.admin('GET', `/licenses/export.csv?productId=${p.id}&trial=false`);
    expect(csv.body).toContain(paid.lid);
    expect(csv.body).not.toContain(started.data.lid);
    for (const path of ['/licenses?trial=maybe', '/licenses/page?trial=1x', '/licenses/export.csv?trial=yes']) {
      const bad = await h.admin('GET', path);
      expect(bad.statusCode, path).toBe(400);
      expect(bad.data.error).toMatch(/trial/);
    }
  });

  it('extends a trial with a new term; the old one checks SUPERSEDED and a start answers the new one', async () => {
    const p = await trialProduct(h);
    const fp = machine('extend');
    const started = await p.start(startBody(fp));
    const before = claimsOf(started.data.license);
    const extended = await h.admin('POST', `/licenses/${started.data.lid}/extend-trial`, { days: 10 }, { 'idempotency-key': 'extend-1' });
    expect(extended.statusCode).toBe(200);
    const after = claimsOf(extended.data.licenseString);
    expect(after.exp).toBe(before.exp! + 10 * 86_400);
    expect(after).toMatchObject({ trl: true, fp, fpn: 3, mm: 1, grace: 0, lid: started.data.lid });
    expect(extended.data.renewedAt).not.toBeNull();
    const replay = await h.admin('POST', `/licenses/${started.data.lid}/extend-trial`, { days: 10 }, { 'idempotency-key': 'extend-1' });
    expect(replay.data.licenseString).toBe(extended.data.licenseString);
    const old = await p.check({ license: started.data.license, fingerprint: fp, nonce: startBody(fp).nonce });
    expect(old.data).toMatchObject({ valid: false, reason: 'SUPERSEDED' });
    const again = await p.start(startBody(fp));
    expect(again.statusCode).toBe(200);
    expect(again.data.license).toBe(extended.data.licenseString);
    expect((await audits(started.data.lid)).map((a) => a.action)).toContain('licence.trial_extended');

    const at = new Date((after.exp! + 86_400) * 1000).toISOString();
    expect((await h.admin('POST', `/licenses/${started.data.lid}/extend-trial`, { expiresAt: at })).data.expiresAt).toBe(at);
    const refusals: Array<[unknown, RegExp]> = [
      [{}, /^Days \(days\): send the days to add or the new end, not both and not neither/],
      [{ days: 1, expiresAt: at }, /^Days \(days\): send the days to add or the new end, not both and not neither/],
      [{ days: 0 }, /days/i],
      [{ days: 366 }, /days/i],
      [{ days: 365 }, /^Days \(days\): a trial ends at most 365 days after it started/],
      [{ expiresAt: '2020-01-01T00:00:00.000Z' }, /^Expires at \(expiresAt\): must be later/],
      [{ expiresAt: new Date(Date.now() + 40 * 86_400_000 + 1).toISOString() }, /^Expires at \(expiresAt\): must be a time in whole seconds/],
    ];
    for (const [body, error] of refusals) {
      const response = await h.admin('POST', `/licenses/${started.data.lid}/extend-trial`, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.data.error).toMatch(error);
    }
    const paid = await p.issue();
    expect((await h.admin('POST', `/licenses/${paid.lid}/extend-trial`, { days: 1 })).statusCode).toBe(400);
    const renew = await h.admin('POST', `/licenses/${started.data.lid}/renew`, {});
    expect(renew.statusCode).toBe(400);
    expect(renew.data.error).toMatch(/extend-trial/);
  });

  it('resets the ledger entry (ORG_ADMIN and tokens only), so the machine may start a new trial', async () => {
    const p = await trialProduct(h);
    const fp = machine('reset');
    const started = await p.start(startBody(fp));
    const issuer = await h.createMember('ISSUER');
    const refused = await h.as({ cookie: issuer.cookie })('POST', `/licenses/${started.data.lid}/reset-trial-ledger`);
    expect(refused.statusCode).toBe(403);
    const reset = await h.admin('POST', `/licenses/${started.data.lid}/reset-trial-ledger`);
    expect(reset.statusCode).toBe(200);
    expect(reset.data.trialLedgerResetAt).not.toBeNull();
    expect((await h.admin('POST', `/licenses/${started.data.lid}/reset-trial-ledger`)).statusCode).toBe(400);
    expect((await audits(started.data.lid)).map((a) => a.action)).toContain('licence.trial_ledger_reset');
    const again = await p.start(startBody(fp));
    expect(again.statusCode).toBe(201);
    expect(again.data.lid).not.toBe(started.data.lid);
    const token = await h.createToken(['licenses:write']);
    expect((await h.as({ token })('POST', `/licenses/${again.data.lid}/reset-trial-ledger`)).statusCode).toBe(200);
    const paid = await p.issue();
    expect((await h.admin('POST', `/licenses/${paid.lid}/reset-trial-ledger`)).statusCode).toBe(400);
  });

  it('lists the installations, oldest first', async () => {
    const p = await trialProduct(h);
    const fp = machine('installations');
    const first = startBody(fp);
    const started = await p.start(first);
    const second = startBody(fp);
    await p.start(second);
    const listed = await h.admin('GET', `/licenses/${started.data.lid}/trial-installations`);
    expect(listed.statusCode).toBe(200);
    expect(listed.data.map((i: any) => i.devicePublicKey)).toEqual([first.devicePublicKey, second.devicePublicKey]);
    expect((await h.admin('GET', `/licenses/${(await p.issue()).lid}/trial-installations`)).statusCode).toBe(400);
  });
});

describe('converting a trial', () => {
  it('issues the paid licence under the trial product, marks the trial, and a start then says converted', async () => {
    const p = await trialProduct(h);
    const fp = machine('convert');
    const started = await p.start(startBody(fp, { machineLabel: 'Desk' }));
    const converted = await h.admin(
      'POST',
      `/licenses/${started.data.lid}/convert`,
      { customer: { name: 'Buyer Ltd', email: 'buyer@example.com' }, keepMachine: true },
      { 'idempotency-key': 'convert-1' },
    );
    expect(converted.statusCode).toBe(201);
    expect(converted.data).toMatchObject({ productId: p.id, licensee: 'Buyer Ltd', convertedFromTrial: started.data.lid, trial: false, seatsUsed: 1 });
    expect(converted.data.claims.trl).toBeUndefined();
    const replay = await h.admin(
      'POST',
      `/licenses/${started.data.lid}/convert`,
      { customer: { name: 'Buyer Ltd', email: 'buyer@example.com' }, keepMachine: true },
      { 'idempotency-key': 'convert-1' },
    );
    expect(replay.data.lid).toBe(converted.data.lid);
    const trial = (await h.admin('GET', `/licenses/${started.data.lid}`)).data;
    expect(trial).toMatchObject({ trialConvertedTo: converted.data.lid, status: 'ACTIVE' });
    expect(trial.trialConvertedAt).not.toBeNull();
    // The paid licence holds the trial's machine as a releasable seat with its label.
    const seats = (await h.admin('GET', `/licenses/${converted.data.lid}/machines`)).data;
    expect(seats).toMatchObject([{ label: 'Desk' }]);
    const check = await p.check({ license: converted.data.licenseString, fingerprint: fp, nonce: startBody(fp).nonce });
    expect(check.data.valid).toBe(true);
    const again = await h.admin('POST', `/licenses/${started.data.lid}/convert`, { customer: { name: 'Buyer Ltd', email: 'buyer@example.com' } });
    expect(again.statusCode).toBe(409);
    const start = await p.start(startBody(fp));
    expect(start.statusCode).toBe(200);
    expect(start.data).toMatchObject({ lid: started.data.lid, converted: true });
    const trialCheck = await p.check({ license: started.data.license, fingerprint: fp, nonce: startBody(fp).nonce });
    expect(trialCheck.data).toMatchObject({ valid: true, converted: true });
    expect(check.data.converted).toBeUndefined();
    expect((await audits(started.data.lid)).map((a) => a.action)).toContain('licence.trial_converted');
    const bound = (await audits(converted.data.lid)).filter((a) => a.action === 'machine.bound');
    expect(bound.map((a) => a.actor)).toEqual(['trial']);
  });

  it('signs the machine into an OFFLINE paid licence, first; refuses productId, a non-trial, and no customer', async () => {
    const p = await trialProduct(h);
    const fp = machine('convert-offline');
    const started = await p.start(startBody(fp));
    const offline = await h.admin('POST', `/licenses/${started.data.lid}/convert`, {
      licensee: 'Off Ltd',
      licenceType: 'OFFLINE',
      keepMachine: true,
      fingerprint: machine('other'),
    });
    expect(offline.statusCode).toBe(201);
    expect(offline.data.claims.fp).toEqual([fp, machine('other')]);
    const other = await p.start(startBody(machine('convert-bad')));
    const withProduct = await h.admin('POST', `/licenses/${other.data.lid}/convert`, { licensee: 'X', productId: p.id });
    expect(withProduct.statusCode).toBe(400);
    expect(withProduct.data.error).toMatch(/product/i);
    const noCustomer = await h.admin('POST', `/licenses/${other.data.lid}/convert`, {});
    expect(noCustomer.statusCode).toBe(400);
    const paid = await p.issue();
    expect((await h.admin('POST', `/licenses/${paid.lid}/convert`, { licensee: 'X' })).statusCode).toBe(400);
    expect((await h.admin('GET', `/licenses/${other.data.lid}`)).data.trialConvertedTo).toBeNull();
  });
});

describe('trials and the plan', () => {
  it('never counts a trial against planLimit, and the dashboard counts trials apart', async () => {
    const other = await h.otherOrg();
    await h.database.db.updateTable('organisations').set({ plan_limit: 1 }).where('slug', '=', other.slug).execute();
    const p = await trialProduct(h, {}, other.admin, other.slug);
    const started = await p.start(startBody(machine('plan')));
    expect(started.statusCode).toBe(201);
    const paid = await other.admin('POST', '/licenses', { productId: p.id, licensee: 'Paying Ltd' });
    expect(paid.statusCode).toBe(201);
    // The plan is full now; a trial still starts.
    expect((await p.start(startBody(machine('plan-2')))).statusCode).toBe(201);
    expect((await other.admin('POST', '/licenses', { productId: p.id, licensee: 'Another Ltd' })).statusCode).toBe(403);
    const converted = await other.admin('POST', `/licenses/${started.data.lid}/convert`, { licensee: 'Buyer' });
    expect(converted.statusCode).toBe(403);
    const dashboard = (await other.admin('GET', '/dashboard')).data;
    const total = (series: Array<{ count: number }>) => series.reduce((n, d) => n + d.count, 0);
    expect(dashboard.plan).toEqual({ limit: 1, used: 1 });
    expect(dashboard.trials.active).toBe(2);
    expect(total(dashboard.trials.started)).toBe(2);
    expect(total(dashboard.trials.converted)).toBe(0);
    expect(total(dashboard.series.issued)).toBe(1);
    // Every other figure leaves the two trials out: their licences, their seats, their ends in 14 days.
    expect(dashboard.totals).toMatchObject({ all: 1, byStatus: { ACTIVE: 1, EXPIRED: 0, REVOKED: 0 }, byType: { ONLINE: 1 } });
    expect([dashboard.seatsUsed, dashboard.expiring.d30]).toEqual([0, 0]);
    await h.database.db.updateTable('organisations').set({ plan_limit: null }).where('slug', '=', other.slug).execute();
    expect((await other.admin('POST', `/licenses/${started.data.lid}/convert`, { licensee: 'Buyer' })).statusCode).toBe(201);
    const after = (await other.admin('GET', '/dashboard/metrics')).data;
    expect(total(after.trials.converted)).toBe(1);
  });
});
