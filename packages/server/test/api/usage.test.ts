import type { ChildProcess } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fpDigest, parseLicence, verifyUsageReceipt } from '@licensor/protocol';
import { backend, inOneRateWindow, startHarness, type Harness } from '../harness.js';
import { pruneEvents } from '../../src/usage/repo.js';
import { isUniqueViolation, openDatabase, sqliteFileIn, transactionEndingIn } from '../../src/db/database.js';
import { startServe, stopServe } from '../cli.js';
import { ISO_MS } from '../licence-helpers.js';
import { checkBody, checkedProduct, nonce, type CheckedProduct } from '../check-helpers.js';

let h: Harness;
let p: CheckedProduct;

const METERS = [
  { key: 'exports', label: 'Exports', limit: 20, period: 'MONTH' },
  { key: 'renders', limit: 5, overage: 2, period: 'DAY' },
  { key: 'seats.sync', limit: null, period: 'NONE' },
];

beforeAll(async () => {
  h = await startHarness({ LICENSOR_USAGE_IDS_PER_PERIOD: '60', LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' });
  p = await checkedProduct(h, { meters: METERS });
});
afterAll(() => h?.close());

const parallel = <T>(n: number, run: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => run(i)));
let ids = 0;
const ev = (meter: string, amount = 1, extra: Record<string, unknown> = {}): { id: string; meter: string; amount: number; at?: string } => ({
  id: `e-${++ids}`,
  meter,
  amount,
  ...extra,
});

/** A licence of `p` and a body for its first machine, bound by a check. */
async function bound(overrides: Record<string, unknown> = {}, product = p) {
  const licence = await product.issue(overrides);
  const body = checkBody(licence.licenseString, `machine-${licence.lid}`);
  expect((await product.check(body)).data.valid).toBe(true);
  return { licence, send: (events: unknown[], extra: Record<string, unknown> = {}) => product.usage({ ...body, nonce: nonce(), events, ...extra }), body };
}

function receiptOk(answer: any, fingerprint: string, pem = p.publicKeyPem) {
  return verifyUsageReceipt(
    {
      lid: answer.lid,
      status: answer.status,
      nonce: answer.nonce,
      checkedAt: answer.checkedAt,
      boundAt: answer.boundAt,
      fpDigest: fpDigest(fingerprint),
      events: answer.events,
      meters: answer.meters,
    },
    answer.receipt,
    [createPublicKey(pem)],
  );
}

describe('product meters', () => {
  it('fills the defaults, copies the meters to a licence and signs them as mtr', async () => {
    const product = (await h.admin('GET', `/products/${p.id}`)).data;
    expect(product.meters).toEqual([
      { key: 'exports', label: 'Exports', limit: 20, period: 'MONTH', overage: 0 },
      { key: 'renders', label: 'renders', limit: 5, period: 'DAY', overage: 2 },
      { key: 'seats.sync', label: 'seats.sync', limit: null, period: 'NONE', overage: 0 },
    ]);
    expect((await h.admin('GET', `/products/${p.id}/form`)).data.meters).toEqual(product.meters);
    expect((await h.admin('GET', '/products/options')).data.meterPeriods.map((c: any) => c.value)).toEqual(['MONTH', 'DAY', 'YEAR', 'NONE']);
    const licence = await p.issue({ meters: { exports: { limit: 1000, overage: null } } });
    expect(licence.meters).toEqual([
      { key: 'exports', label: 'Exports', period: 'MONTH', limit: 1000, overage: null },
      { key: 'renders', label: 'renders', period: 'DAY', limit: 5, overage: 2 },
      { key: 'seats.sync', label: 'seats.sync', period: 'NONE', limit: null, overage: 0 },
    ]);
    const claims = parseLicence(licence.licenseString).claims;
    expect(Object.keys(claims).slice(-1)).toEqual(['mtr']);
    expect(claims.mtr).toEqual([
      { k: 'exports', p: 'MONTH', l: 1000, o: null },
      { k: 'renders', p: 'DAY', l: 5, o: 2 },
      { k: 'seats.sync', p: 'NONE', l: null, o: 0 },
    ]);
    const listed = (await h.admin('GET', `/licenses/page?productId=${p.id}`)).data.items.find((l: any) => l.lid === licence.lid);
    expect(listed.meters).toEqual(licence.meters);
  });

  it('refuses bad meters with 400 naming the field, and changes nothing', async () => {
    const bad: Array<[unknown, string]> = [
      [
        [
          { key: 'a', limit: 1 },
          { key: 'a', limit: 2 },
        ],
        'meters[1].key',
      ],
      [[{ key: '1a', limit: 1 }], 'meters[0].key'],
      [[{ key: 'a' }], 'meters[0].limit'],
      [[{ key: 'a', limit: -1 }], 'meters[0].limit'],
      [[{ key: 'a', limit: 1e13 }], 'meters[0].limit'],
      [[{ key: 'a', limit: null, overage: 5 }], 'meters[0].overage'],
      [[{ key: 'a', limit: 1, period: 'WEEK' }], 'meters[0].period'],
      [[{ key: 'a', limit: 1, colour: 'red' }], 'meters[0]'],
      [Array.from({ length: 21 }, (_, i) => ({ key: `m${i}`, limit: 1 })), 'meters'],
    ];
    for (const [meters, field] of bad) {
      const refused = await h.admin('PUT', `/products/${p.id}`, { meters });
      expect(refused.statusCode, JSON.stringify(meters)).toBe(400);
      expect(refused.data.error.toLowerCase()).toContain(field.toLowerCase().split('[')[0]);
    }
    expect((await h.admin('GET', `/products/${p.id}`)).data.meters).toHaveLength(3);
  });

  it('gives an OFFLINE licence no meters, and refuses meters sent for one', async () => {
    const offline = await p.issue({ licenceType: 'OFFLINE' });
    expect(offline.meters).toEqual([]);
    expect(parseLicence(offline.licenseString).claims).not.toHaveProperty('mtr');
    const refused = await h.admin('POST', '/licenses', { productId: p.id, licensee: 'X', licenceType: 'OFFLINE', meters: { exports: { limit: 3 } } });
    expect(refused.statusCode).toBe(400);
    const undeclared = await h.admin('POST', '/licenses', { productId: p.id, licensee: 'X', meters: { nope: { limit: 3 } } });
    expect(undeclared.statusCode).toBe(400);
    expect(undeclared.data.error).toContain('meters.nope');
  });

  it("renewal takes the product list and keeps the licence's own limits unless the body gives them", async () => {
    const product = await checkedProduct(h, {
      meters: [
        { key: 'a', limit: 10 },
        { key: 'b', limit: 20 },
      ],
    });
    const licence = await product.issue({ meters: { a: { limit: 99 } } });
    expect(
      (
        await h.admin('PUT', `/products/${product.id}`, {
          meters: [
            { key: 'a', label: 'A!', limit: 10, period: 'DAY' },
            { key: 'c', limit: 30 },
          ],
        })
      ).statusCode,
    ).toBe(200);
    // A product change alone changes no licence.
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.meters.map((m: any) => m.key)).toEqual(['a', 'b']);
    const renewed = await h.admin('POST', `/licenses/${licence.lid}/renew`, { meters: { c: { limit: 31, overage: 1 } } });
    expect(renewed.statusCode).toBe(200);
    expect(renewed.data.meters).toEqual([
      { key: 'a', label: 'A!', period: 'DAY', limit: 99, overage: 0 },
      { key: 'c', label: 'c', period: 'MONTH', limit: 31, overage: 1 },
    ]);
  });
});

describe('POST .../usage', () => {
  it('applies events in order with their signed results and balances', async () => {
    const { licence, send, body } = await bound();
    const answer = (await send([ev('exports', 19), ev('exports', 2), ev('exports', 1), ev('renders', 7), ev('nope'), ev('seats.sync', 1e9)])).data;
    expect(answer).toMatchObject({ lid: licence.lid, valid: true, status: 'ACTIVE' });
    expect(answer.events.map((e: any) => e.result)).toEqual(['ACCEPTED', 'LIMIT_REACHED', 'ACCEPTED', 'ACCEPTED', 'UNKNOWN_METER', 'ACCEPTED']);
    expect(answer.events.every((e: any) => e.duplicate === false)).toBe(true);
    expect(answer.checkedAt).toMatch(ISO_MS);
    expect(answer.serverTime).toBe(answer.checkedAt);
    expect(answer.boundAt).toMatch(ISO_MS);
    const [exports, renders, sync] = answer.meters;
    expect(exports).toMatchObject({ key: 'exports', label: 'Exports', period: 'MONTH', used: 20, limit: 20, overage: 0, remaining: 0 });
    expect(exports.resetsAt).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);
    expect(exports.periodStart).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);
    expect(renders).toMatchObject({ used: 7, limit: 5, overage: 2, remaining: 0 });
    expect(sync).toEqual({
      key: 'seats.sync',
      label: 'seats.sync',
      period: 'NONE',
      used: 1e9,
      limit: null,
      overage: 0,
      remaining: null,
      periodStart: null,
      resetsAt: null,
    });
    expect(receiptOk(answer, body.fingerprint)).toBe(true);
    expect(receiptOk({ ...answer, events: [{ ...answer.events[0], result: 'LIMIT_REACHED' }, ...answer.events.slice(1)] }, body.fingerprint)).toBe(false);
    // events: [] reads the balances, and nothing is counted among the checks.
    const read = (await send([])).data;
    expect(read.events).toEqual([]);
    expect(read.meters.map((m: any) => m.used)).toEqual([20, 7, 1e9]);
    expect(receiptOk(read, body.fingerprint)).toBe(true);
  });

  it('answers a repeat with its first result, ID_REUSED for another body, counting nothing twice', async () => {
    const { send } = await bound();
    const first = { ...ev('exports', 3), at: new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000).toISOString() };
    expect((await send([first])).data.events).toEqual([{ id: first.id, result: 'ACCEPTED', duplicate: false }]);
    const again = (await send([first, { ...first, amount: 4 }].slice(0, 1))).data;
    expect(again.events).toEqual([{ id: first.id, result: 'ACCEPTED', duplicate: true }]);
    expect(again.meters[0].used).toBe(3);
    const { at: _at, ...withoutAt } = first;
    for (const changed of [{ ...first, amount: 4 }, { ...first, meter: 'renders' }, withoutAt]) {
      expect((await send([changed])).data.events).toEqual([{ id: first.id, result: 'ID_REUSED', duplicate: true }]);
    }
    // The same instant written otherwise is the same event.
    const sameInstant = { ...first, at: `${first.at.slice(0, 19)}Z` };
    expect((await send([sameInstant])).data.events[0]).toEqual({ id: first.id, result: 'ACCEPTED', duplicate: true });
    expect((await send([])).data.meters[0].used).toBe(3);
  });

  it('judges TOO_OLD, NOT_LICENSED (no seat, revoked) and UNKNOWN_LICENCE without counting', async () => {
    const { licence, send } = await bound();
    const old = ev('exports', 1, { at: new Date(Date.now() - 31 * 86_400_000).toISOString() });
    expect((await send([old])).data.events[0].result).toBe('TOO_OLD');
    // Another machine holds no seat: never bound by a usage request.
    const stranger = (await p.usage({ ...checkBody(licence.licenseString, 'stranger'), events: [ev('exports')] })).data;
    expect(stranger).toMatchObject({ valid: false, reason: 'NO_SEAT', status: 'ACTIVE' });
    expect(stranger).not.toHaveProperty('boundAt');
    expect(stranger.events[0].result).toBe('NOT_LICENSED');
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(1);
    // NOT_LICENSED is not recorded: the same id counts once the licence is valid for that machine.
    const retried = ev('exports');
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, {});
    const revoked = (await send([retried])).data;
    expect(revoked).toMatchObject({ valid: false, reason: 'REVOKED', status: 'REVOKED' });
    expect(revoked.events[0]).toEqual({ id: retried.id, result: 'NOT_LICENSED', duplicate: false });
    await h.admin('POST', `/licenses/${licence.lid}/reinstate`, {});
    expect((await send([retried])).data.events[0]).toEqual({ id: retried.id, result: 'ACCEPTED', duplicate: false });
  });

  it('refuses a bad body with 400 and applies nothing', async () => {
    const { send } = await bound();
    const twice = ev('exports');
    const bad: unknown[][] = [
      Array.from({ length: 101 }, () => ev('exports')),
      [twice, ev('exports'), { ...twice }],
      [ev('exports', 0)],
      [ev('exports', -1)],
      [ev('exports', 1.5)],
      [{ ...ev('exports'), extra: true }],
      [ev('exports', 1, { at: '2026-02-30T00:00:00Z' })],
      [ev('exports', 1, { at: '2026-01-01T00:00:00+01:00' })],
      [{ ...ev('exports'), id: 'has space' }],
    ];
    for (const events of bad) {
      const refused = await send(events);
      expect(refused.statusCode, JSON.stringify(events).slice(0, 100)).toBe(400);
      expect(typeof refused.data.error).toBe('string');
    }
    expect((await send([ev('exports')], { machineLabel: 'x' })).statusCode).toBe(400);
    expect((await p.usage({ license: 'x', fingerprint: 'y', nonce: nonce(), events: [] })).statusCode).toBe(400);
    expect((await send([])).data.meters[0].used).toBe(0);
  });

  it('refuses an OFFLINE licence as a check does', async () => {
    const offline = await p.issue({ licenceType: 'OFFLINE' });
    const refused = await p.usage({ ...checkBody(offline.licenseString, 'o'), events: [] });
    expect(refused.statusCode).toBe(400);
  });

  it('stops recording new ids past LICENSOR_USAGE_IDS_PER_PERIOD of a period key (EVENT_LIMIT)', async () => {
    const product = await checkedProduct(h, {
      meters: [
        { key: 'a', limit: null, period: 'MONTH' },
        { key: 'b', limit: null, period: 'MONTH' },
        { key: 'c', limit: null, period: 'DAY' },
      ],
    });
    const { send } = await bound({}, product);
    const first = (await send(Array.from({ length: 60 }, (_, i) => ev(i % 2 ? 'a' : 'b')))).data;
    expect(first.events.every((e: any) => e.result === 'ACCEPTED')).toBe(true);
    // a and b share the MONTH key; c's DAY key has its own.
    const next = (await send([ev('a'), ev('b'), ev('c')])).data;
    expect(next.events.map((e: any) => e.result)).toEqual(['EVENT_LIMIT', 'EVENT_LIMIT', 'ACCEPTED']);
    expect(next.meters.map((m: any) => m.used)).toEqual([30, 30, 1]);
  });
});

describe('the Management API', () => {
  it("reads a licence's balances and recent events, newest first, with their sources", async () => {
    const { licence, send } = await bound();
    const at = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000).toISOString();
    const first = ev('exports', 2, { at });
    const second = ev('renders', 9);
    await send([first, second]);
    const usage = (await h.admin('GET', `/licenses/${licence.lid}/usage`)).data;
    expect(usage.lid).toBe(licence.lid);
    expect(usage.meters.map((m: any) => [m.key, m.used])).toEqual([
      ['exports', 2],
      ['renders', 0],
      ['seats.sync', 0],
    ]);
    expect(usage.meters[0].periodKey).toMatch(/^\d{4}-\d{2}$/);
    expect(usage.meters[1].periodKey).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(usage.meters[2].periodKey).toBe('NONE');
    const machine = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data[0];
    const from = { source: 'application', machineId: machine.id, actor: 'check', reason: null, receivedAt: expect.stringMatching(ISO_MS) };
    // In one request the last first.
    expect(usage.events).toEqual([
      { id: second.id, meter: 'renders', amount: 9, at: null, result: 'LIMIT_REACHED', ...from },
      { id: first.id, meter: 'exports', amount: 2, at, result: 'ACCEPTED', ...from },
    ]);
    expect((await h.admin('GET', '/licenses/nope/usage')).statusCode).toBe(404);
  });

  it('adjusts the current period with a credit or debit, audited, never below 0, and an archived licence not at all', async () => {
    const { licence, send } = await bound();
    await send([ev('exports', 5)]);
    const debit = await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: 30, reason: 'Manual export batch' });
    expect(debit.statusCode).toBe(200);
    expect(debit.data.meters[0]).toMatchObject({ used: 35, remaining: 0 });
    expect(debit.data.events[0]).toMatchObject({
      id: null,
      meter: 'exports',
      amount: 30,
      result: 'ACCEPTED',
      source: 'operator',
      machineId: null,
      actor: 'admin',
      reason: 'Manual export batch',
    });
    expect(debit.data.events[0].at).toBe(debit.data.events[0].receivedAt);
    const credit = (await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: -35, reason: 'Goodwill' })).data;
    expect(credit.meters[0]).toMatchObject({ used: 0, remaining: 20 });
    const audit = (await h.admin('GET', `/licenses/${licence.lid}/activity?action=usage.adjusted`)).data.items;
    expect(audit.map((a: any) => a.details)).toEqual([
      { meter: 'exports', amount: -35, reason: 'Goodwill', periodKey: credit.meters[0].periodKey, usedBefore: 35, usedAfter: 0 },
      { meter: 'exports', amount: 30, reason: 'Manual export batch', periodKey: credit.meters[0].periodKey, usedBefore: 5, usedAfter: 35 },
    ]);
    for (const body of [
      { meter: 'exports', amount: -1, reason: 'below zero' },
      { meter: 'exports', amount: 0, reason: 'zero' },
      { meter: 'nope', amount: 1, reason: 'no meter' },
      { meter: 'exports', amount: 1, reason: '   ' },
      { meter: 'exports', amount: 1.5, reason: 'fraction' },
      { meter: 'exports', amount: 1 },
      { meter: 'exports', amount: 1, reason: 'x', extra: 1 },
    ]) {
      expect((await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    // Idempotency-Key: the first answer again, nothing added twice.
    const key = { 'idempotency-key': `adjust-${licence.lid}` };
    const once = await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: 3, reason: 'once' }, key);
    const twice = await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: 3, reason: 'once' }, key);
    expect(twice.data).toEqual(once.data);
    expect((await h.admin('GET', `/licenses/${licence.lid}/usage`)).data.meters[0].used).toBe(3);
    expect((await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: 4, reason: 'once' }, key)).statusCode).toBe(409);
    // A viewer reads but cannot adjust.
    const viewer = h.as({ cookie: (await h.createMember('VIEWER')).cookie });
    expect((await viewer('GET', `/licenses/${licence.lid}/usage`)).statusCode).toBe(200);
    expect((await viewer('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: 1, reason: 'x' })).statusCode).toBe(403);
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, {});
    expect((await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: 1, reason: 'revoked is fine' })).statusCode).toBe(200);
    await h.admin('POST', `/licenses/${licence.lid}/archive`);
    expect((await h.admin('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'exports', amount: 1, reason: 'archived' })).statusCode).toBe(400);
  });

  it('lists the top consumers of each meter this period, archived, unused and trial licences left out', async () => {
    const product = await checkedProduct(h, {
      meters: [
        { key: 'calls', limit: 100 },
        { key: 'mb', limit: null },
      ],
    });
    const licences = [];
    for (const used of [5, 50, 0, 50]) {
      const { licence, send } = await bound({}, product);
      if (used > 0) await send([ev('calls', used)]);
      licences.push(licence);
    }
    const board = (await h.admin('GET', `/dashboard/usage?productId=${product.id}&limit=2`)).data;
    expect(board.meters.map((m: any) => m.key)).toEqual(['calls', 'mb']);
    const [calls, mb] = board.meters;
    const tied = [licences[1].lid, licences[3].lid].sort();
    expect(calls).toMatchObject({ productId: product.id, key: 'calls', label: 'calls', period: 'MONTH' });
    expect(calls.top).toEqual(tied.map((lid) => ({ lid, licensee: 'Check Ltd', used: 50, limit: 100, overage: 0, remaining: 50 })));
    expect(mb.top).toEqual([]);
    for (const bad of ['limit=0', 'limit=51', 'productId=x', 'limit=1.5']) {
      const refused = await h.admin('GET', `/dashboard/usage?${bad}`);
      expect(refused.statusCode, bad).toBe(400);
      expect(refused.data.error).toContain(bad.split('=')[0]);
    }
    // DESIGN.md 18: the dashboard leaves trials out, /dashboard/usage too.
    await h.database.db.updateTable('licences').set({ trial: 1 }).where('lid', '=', licences[1].lid).execute();
    const withoutTrial = (await h.admin('GET', `/dashboard/usage?productId=${product.id}&limit=2`)).data.meters[0].top;
    expect(withoutTrial.map((row: any) => [row.lid, row.used])).toEqual([
      [licences[3].lid, 50],
      [licences[0].lid, 5],
    ]);
  });

  it('raises usage.threshold at 80% and 100% once per licence, meter, period and limit, marking it without an endpoint', async () => {
    const { licence, send } = await bound({ meters: { exports: { limit: 10, overage: 5 } } });
    const marks = async () =>
      (
        await h.database.db
          .selectFrom('usage_marks')
          .select(['threshold', 'limit_value'])
          .where('licence_id', '=', (await h.database.db.selectFrom('licences').select('id').where('lid', '=', licence.lid).executeTakeFirstOrThrow()).id)
          .orderBy('threshold')
          .execute()
      ).map((m) => [Number(m.threshold), Number(m.limit_value)]);
    const events = async () =>
      (await h.database.db.selectFrom('webhook_events').select(['type', 'data']).where('type', '=', 'usage.threshold').execute()).map(
        (e) => JSON.parse(e.data).usage,
      );
    // No endpoint yet: the 80% mark is written, no event.
    await send([ev('exports', 8)]);
    expect(await marks()).toEqual([[80, 10]]);
    expect(await events()).toEqual([]);
    const endpoint = (await h.admin('POST', '/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['usage.threshold'] })).data;
    try {
      await send([ev('exports', 1)]);
      expect(await events()).toEqual([]);
      await send([ev('exports', 1), ev('exports', 3)]);
      expect(await marks()).toEqual([
        [80, 10],
        [100, 10],
      ]);
      const raised = await events();
      expect(raised).toHaveLength(1);
      expect(raised[0]).toMatchObject({ meter: 'exports', label: 'Exports', threshold: 100, used: 10, limit: 10, overage: 5 });
      await send([ev('exports', 1)]);
      expect(await events()).toHaveLength(1);
    } finally {
      await h.admin('DELETE', `/webhooks/${endpoint.id}`);
    }
  });
});

describe('limits, pruning, timezone and metrics', () => {
  it('answers 429 with Retry-After past LICENSOR_USAGE_RATE_LICENCE requests a minute for the licence, applying nothing', async () => {
    const limited = await startHarness({ LICENSOR_USAGE_RATE_LICENCE: '3' });
    try {
      const product = await checkedProduct(limited, { meters: METERS });
      const { send, licence } = await bound({}, product);
      const other = await bound({}, product);
      await inOneRateWindow(10);
      for (let i = 0; i < 3; i++) expect((await send([ev('exports')])).statusCode).toBe(200);
      const refused = await send([ev('exports')]);
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // Another licence has its own count.
      expect((await other.send([])).statusCode).toBe(200);
      expect((await limited.admin('GET', `/licenses/${licence.lid}/usage`)).data.meters[0].used).toBe(3);
      const metrics = (await limited.request('GET', '/metrics')).body as string;
      expect(metrics).toMatch(/licensor_usage_rate_limited_total 1/);
      expect(metrics).toMatch(/licensor_usage_events_total\{result="ACCEPTED",duplicate="false"\} 3/);
    } finally {
      await limited.close();
    }
    // It may wait for the next minute (inOneRateWindow) and starts a harness of its own.
  }, 90_000);

  it('prunes ids past their horizon without changing a count; a pruned id would count again', async () => {
    const { licence, send } = await bound();
    const kept = ev('exports', 2);
    await send([kept]);
    const row = await h.database.db.selectFrom('licences').select('id').where('lid', '=', licence.lid).executeTakeFirstOrThrow();
    const expiry = await h.database.db.selectFrom('usage_events').select('expires_at').where('licence_id', '=', row.id).executeTakeFirstOrThrow();
    // 35 days past the month's end.
    expect(Number(expiry.expires_at) - Date.now()).toBeGreaterThan(35 * 86_400_000);
    const remembered = () =>
      h.database.db
        .selectFrom('usage_counts')
        .select(['meter', 'used', 'ids'])
        .where('licence_id', '=', row.id)
        .execute()
        .then((rows) => rows.map((r) => [r.meter, Number(r.used), Number(r.ids)]));
    expect(await remembered()).toEqual([['exports', 2, 1]]);
    expect(await pruneEvents(h.database.db, Date.now())).toBe(0);
    expect(await pruneEvents(h.database.db, Number(expiry.expires_at) + 1)).toBeGreaterThanOrEqual(1);
    // The count stays; the id is no longer remembered, so it no longer counts towards EVENT_LIMIT.
    expect(await remembered()).toEqual([['exports', 2, 0]]);
    expect((await send([])).data.meters[0].used).toBe(2);
    expect((await h.admin('GET', `/licenses/${licence.lid}/usage`)).data.events).toEqual([]);
  });

  it('two pruners at once, as on two instances, forget each id once and change no count', async () => {
    const { licence, send } = await bound();
    await send(Array.from({ length: 10 }, () => ev('exports', 1)));
    await send(Array.from({ length: 40 }, () => ev('seats.sync', 1)));
    const row = await h.database.db.selectFrom('licences').select('id').where('lid', '=', licence.lid).executeTakeFirstOrThrow();
    const counts = () =>
      h.database.db
        .selectFrom('usage_counts')
        .select(['meter', 'used', 'ids'])
        .where('licence_id', '=', row.id)
        .orderBy('meter')
        .execute()
        .then((rows) => rows.map((r) => [r.meter, Number(r.used), Number(r.ids)]));
    expect(await counts()).toEqual([
      ['exports', 10, 10],
      ['seats.sync', 40, 40],
    ]);
    const { expires_at } = await h.database.db
      .selectFrom('usage_events')
      .select((eb) => eb.fn.max('expires_at').as('expires_at'))
      .where('licence_id', '=', row.id)
      .executeTakeFirstOrThrow();
    // PostgreSQL: a pool of its own, as another instance has; SQLite's instances are processes, one writer at a time.
    const other = backend === 'postgres' ? await openDatabase({ databaseUrl: h.config.databaseUrl, sqliteFile: sqliteFileIn(h.config.dataDir) }) : h.database;
    try {
      const after = Number(expires_at) + 1;
      // Every licence's ids past `after` go, this test's 50 among them.
      const { due } = await h.database.db
        .selectFrom('usage_events')
        .select((eb) => eb.fn.countAll<number>().as('due'))
        .where('expires_at', '<', after)
        .executeTakeFirstOrThrow();
      expect(Number(due)).toBeGreaterThanOrEqual(50);
      const pruned = await Promise.all([
        pruneEvents(h.database.db, after),
        pruneEvents(other.db, after),
        pruneEvents(h.database.db, after),
        pruneEvents(other.db, after),
      ]);
      expect(pruned.reduce((a, b) => a + b, 0)).toBe(Number(due));
    } finally {
      if (other !== h.database) await other.close();
    }
    expect(await counts()).toEqual([
      ['exports', 10, 0],
      ['seats.sync', 40, 0],
    ]);
  });

  it("gives the boundary fields of the organisation's timezone, moved at once by a timezone change", async () => {
    const { send } = await bound();
    const utc = (await send([])).data.meters;
    expect(utc[0].resetsAt).toMatch(/-01T00:00:00\.000Z$/);
    expect(utc[1].resetsAt).toMatch(/T00:00:00\.000Z$/);
    expect((await h.admin('PUT', '/settings', { timezone: 'Asia/Tokyo' })).statusCode).toBe(200);
    try {
      const tokyo = (await send([])).data.meters;
      expect(tokyo[0].resetsAt).toMatch(/T15:00:00\.000Z$/);
      expect(tokyo[1].periodStart).toMatch(/T15:00:00\.000Z$/);
      expect(Date.parse(tokyo[1].resetsAt) - Date.parse(tokyo[1].periodStart)).toBe(86_400_000);
    } finally {
      await h.admin('PUT', '/settings', { timezone: 'UTC' });
    }
  });

  it('counts events in the periods of a timezone changed since the service first read the organisation', async () => {
    const { send } = await bound();
    // A day in UTC+14 and one in UTC-11 never share a date: each zone's renders are a count of their
    // own, and the first zone's goes on where it was left.
    const zones = [
      ['Pacific/Kiritimati', 'T10:00:00.000Z', [1, 2]],
      ['Pacific/Pago_Pago', 'T11:00:00.000Z', [1, 2]],
      ['Pacific/Kiritimati', 'T10:00:00.000Z', [3]],
    ] as const;
    try {
      for (const [zone, dayStart, counts] of zones) {
        expect((await h.admin('PUT', '/settings', { timezone: zone })).statusCode).toBe(200);
        for (const used of counts) {
          const renders = (await send([ev('renders')])).data.meters[1];
          expect(renders).toMatchObject({ key: 'renders', used, remaining: 7 - used });
          expect(renders.periodStart).toMatch(new RegExp(`${dayStart}$`));
        }
      }
    } finally {
      await h.admin('PUT', '/settings', { timezone: 'UTC' });
    }
  });
});

describe('a usage transaction', () => {
  it('commits nothing when a statement sent with its COMMIT fails, answers that failure, and commits the next whole', async () => {
    const { licence } = await bound();
    const { id, org_id } = await h.database.db.selectFrom('licences').select(['id', 'org_id']).where('lid', '=', licence.lid).executeTakeFirstOrThrow();
    const row = { org_id, licence_id: id, meter: 'exports', period_key: 'test', used: 1, ids: 0 };
    const stored = async () =>
      (await h.database.db.selectFrom('usage_counts').select(['period_key', 'used']).where('licence_id', '=', id).orderBy('period_key').execute()).map((r) => [
        r.period_key,
        Number(r.used),
      ]);
    const failing = transactionEndingIn(h.database, async (db) => {
      await db.insertInto('usage_counts').values(row).execute();
      // The same key again, refused by the primary key after the row above was written.
      return { result: 'answered', last: [db.insertInto('usage_counts').values(row).compile()] };
    });
    await expect(failing).rejects.toSatisfy(isUniqueViolation);
    expect(await stored()).toEqual([]);
    const answered = await transactionEndingIn(h.database, async (db) => {
      await db.insertInto('usage_counts').values(row).execute();
      const raise = db.updateTable('usage_counts').set({ used: 5 }).where('licence_id', '=', id).compile();
      return {
        result: 'answered',
        last: [
          raise,
          db
            .insertInto('usage_counts')
            .values({ ...row, period_key: 'test-2' })
            .compile(),
        ],
      };
    });
    expect(answered).toBe('answered');
    expect(await stored()).toEqual([
      ['test', 5],
      ['test-2', 1],
    ]);
  });
});

describe('usage under concurrency', () => {
  async function race(send: (i: number, body: unknown) => Promise<{ statusCode: number; data: any }>) {
    const { body, send: one } = await bound({ meters: { exports: { limit: 20 } } });
    const answers = await parallel(50, (i) => send(i, { ...body, nonce: nonce(), events: [ev('exports')] }));
    expect(answers.map((a) => a.statusCode)).toEqual(answers.map(() => 200));
    expect(answers.filter((a) => a.data.events[0].result === 'ACCEPTED')).toHaveLength(20);
    expect(answers.filter((a) => a.data.events[0].result === 'LIMIT_REACHED')).toHaveLength(30);
    expect((await one([])).data.meters[0].used).toBe(20);

    const repeated = ev('exports', 1);
    const { body: other, send: two } = await bound();
    const repeats = await parallel(30, (i) => send(i, { ...other, nonce: nonce(), events: [repeated] }));
    expect(repeats.filter((a) => !a.data.events[0].duplicate)).toHaveLength(1);
    expect(new Set(repeats.map((a) => a.data.events[0].result))).toEqual(new Set(['ACCEPTED']));
    expect((await two([])).data.meters[0].used).toBe(1);

    // Twelve licences at once, two requests each (committed together in batches): every answer is
    // its own licence's, signed, its ids counted per licence (all send the same four), its ceiling exact.
    const many = await Promise.all(Array.from({ length: 12 }, () => bound({ meters: { exports: { limit: 3 } } })));
    const shared = ['m-1', 'm-2', 'm-3', 'm-4'];
    const sent = await parallel(24, (i) =>
      send(i, {
        ...many[i % 12]!.body,
        nonce: nonce(),
        events: shared.slice(i < 12 ? 0 : 2, i < 12 ? 2 : 4).map((id) => ({ id, meter: 'exports', amount: 1 })),
      }),
    );
    for (const [k, { licence, body }] of many.entries()) {
      const mine = [sent[k]!, sent[k + 12]!];
      expect(mine.map((a) => [a.statusCode, a.data.lid])).toEqual([
        [200, licence.lid],
        [200, licence.lid],
      ]);
      const results = mine.flatMap((a) => a.data.events.map((e: { result: string }) => e.result));
      expect(results.filter((r) => r === 'ACCEPTED')).toHaveLength(3);
      expect(results.filter((r) => r === 'LIMIT_REACHED')).toHaveLength(1);
      expect(Math.max(...mine.map((a) => a.data.meters[0].used))).toBe(3);
      for (const answer of mine) expect(receiptOk(answer.data, body.fingerprint)).toBe(true);
    }
  }

  it('never passes limit + overage, and never counts an id twice, in one process', async () => {
    await race((_i, body) => p.usage(body));
    await race((_i, body) => p.usage(body));
  }, 90_000);

  if (backend === 'postgres')
    describe('through two service processes sharing one PostgreSQL', () => {
      const children: ChildProcess[] = [];
      afterAll(() => Promise.all(children.map(stopServe)));
      it('never passes limit + overage, and never counts an id twice', async () => {
        const urls: string[] = [];
        for (let i = 0; i < 2; i++) {
          const serve = await startServe({ ...h.env, LOG_LEVEL: 'info', LICENSOR_USAGE_RATE_LICENCE: '0' });
          children.push(serve.child);
          urls.push(serve.url);
        }
        const send = async (i: number, body: unknown) => {
          const response = await fetch(`${urls[i % 2]}/o/${h.slug}/api/public/license/${p.checkId}/usage`, {
            method: 'POST',
            headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          return { statusCode: response.status, data: await response.json() };
        };
        await race(send);
        await race(send);
      }, 150_000);
    });
});
