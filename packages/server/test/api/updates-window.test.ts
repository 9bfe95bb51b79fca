// DESIGN.md 20's maintenance window: updatesMonths on products, issue and renew, the `upd` claim, updatesUntil.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { countRows, createProduct, issueOk, licenceRow } from '../licence-helpers.js';
import { machine, startBody, trialProduct } from '../trial-helpers.js';

/** The organisation's timezone: local dates begin at 05:00 UTC in winter and 04:00 in summer. */
const ZONE = 'America/New_York';
const DAY_MS = 86_400_000;

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
  expect((await h.admin('PUT', '/settings', { timezone: ZONE })).statusCode).toBe(200);
});
afterAll(() => h?.close());

const seconds = (iso: string) => Date.parse(iso) / 1000;

/** Today in the organisation's timezone, YYYY-MM-DD. */
const today = () => new Intl.DateTimeFormat('en-CA', { timeZone: ZONE, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());

/** `date` plus `months` calendar months, clamped to the month's end (DESIGN.md 3). */
function plusMonths(date: string, months: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const index = m - 1 + months;
  const year = y + Math.floor(index / 12);
  const month = index % 12;
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return `${String(year).padStart(4, '0')}-${String(month + 1).padStart(2, '0')}-${String(Math.min(d, last)).padStart(2, '0')}`;
}

/** The first instant of a local date in New York (midnight there: no DST change happens at midnight). */
function nyStart(date: string): string {
  const noonUtc = new Date(`${date}T12:00:00Z`);
  const hour = Number(new Intl.DateTimeFormat('en-US', { timeZone: ZONE, hour: 'numeric', hourCycle: 'h23' }).format(noonUtc));
  return new Date(noonUtc.getTime() - hour * 3_600_000).toISOString();
}

/** A product (`given`, or a new one) whose parameter kept the name `upd` from before update windows, as an older release saved it. */
async function productWithUpdParam(given?: { id: number }) {
  const product = given ?? (await createProduct(h.admin, { params: [{ key: 'edition', type: 'STRING' }] }));
  const params = JSON.stringify([{ key: 'upd', label: 'Update channel', type: 'STRING', required: false, defaultValue: 'nightly', options: [], help: null }]);
  // The version moves on as any save's does, so no cached view of the product outlives the change.
  await h.database.db
    .updateTable('products')
    .set((eb) => ({ params, version: eb('version', '+', 1) }))
    .where('id', '=', product.id)
    .execute();
  return product;
}

describe('a product’s updatesMonths', () => {
  it('is null for a new product, set at create and by PUT (0 to 1,200), kept by other edits, cleared by null', async () => {
    expect((await createProduct(h.admin)).updatesMonths).toBeNull();
    const created = await createProduct(h.admin, { updatesMonths: 12 });
    expect(created.updatesMonths).toBe(12);
    expect((await h.admin('GET', `/products/${created.id}`)).data.updatesMonths).toBe(12);
    expect((await h.admin('PUT', `/products/${created.id}`, { updatesMonths: 0 })).data.updatesMonths).toBe(0);
    expect((await h.admin('PUT', `/products/${created.id}`, { name: 'Renamed' })).data.updatesMonths).toBe(0);
    expect((await h.admin('PUT', `/products/${created.id}`, { updatesMonths: 1200 })).data.updatesMonths).toBe(1200);
    expect((await h.admin('PUT', `/products/${created.id}`, { updatesMonths: null })).data.updatesMonths).toBeNull();
    expect((await h.admin('GET', '/products')).data.find((p: { id: number }) => p.id === created.id).updatesMonths).toBeNull();
  });

  it('refuses a value outside 0 to 1,200 or not an integer, changing nothing', async () => {
    const created = await createProduct(h.admin, { updatesMonths: 6 });
    for (const updatesMonths of [-1, 1201, 1.5, '12']) {
      const refused = await h.admin('PUT', `/products/${created.id}`, { updatesMonths });
      expect(refused.statusCode, JSON.stringify(updatesMonths)).toBe(400);
      expect(refused.data.error).toMatch(/^Updates months \(updatesMonths\): /);
      const create = await h.admin('POST', '/products', { productKey: `bad-window-${String(updatesMonths)}`, name: 'Bad', updatesMonths });
      expect(create.statusCode).toBe(400);
    }
    expect((await h.admin('GET', `/products/${created.id}`)).data.updatesMonths).toBe(6);
    expect((await h.admin('GET', '/products')).data.some((p: { productKey: string }) => p.productKey.startsWith('bad-window-'))).toBe(false);
  });
});

describe('a product whose parameter kept the name upd', () => {
  it('cannot have a window: not on the product, at issue or at renewal (400, nothing changed); without one upd stays its parameter', async () => {
    const product = await productWithUpdParam();
    const put = await h.admin('PUT', `/products/${product.id}`, { updatesMonths: 12 });
    expect(put.statusCode).toBe(400);
    expect(put.data.error).toBe('Updates months (updatesMonths): the product has a parameter "upd", which an update window signs as a claim; rename it first');
    expect((await h.admin('GET', `/products/${product.id}`)).data.updatesMonths).toBeNull();

    const licences = await countRows(h, 'licences');
    const issue = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Windowed', updatesMonths: 12 });
    expect(issue.statusCode).toBe(400);
    expect(issue.data.error).toBe(
      'Updates months (updatesMonths): the product has a parameter "upd", which an update window signs as a claim; rename it first',
    );
    expect(await countRows(h, 'licences')).toBe(licences);

    // Without a window, `upd` is the parameter's value and the updates end with the grace period.
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Channel user', graceDays: 10 });
    expect(licence.claims.upd).toBe('nightly');
    expect(licence).toMatchObject({ updatesMonths: null, updatesUntil: new Date(Date.parse(licence.expiresAt) + 10 * DAY_MS).toISOString() });

    const renew = await h.admin('POST', `/licenses/${licence.lid}/renew`, { updatesMonths: 3 });
    expect(renew.statusCode).toBe(400);
    expect(renew.data.error).toMatch(/^Updates months \(updatesMonths\): the product has a parameter "upd"/);
    expect((await licenceRow(h, licence.lid)).term_version).toBe(0);
    const renewed = await h.admin('POST', `/licenses/${licence.lid}/renew`, { params: { upd: 'stable' } });
    expect(renewed.statusCode).toBe(200);
    expect(renewed.data).toMatchObject({ updatesMonths: null, claims: { upd: 'stable' } });
  });
});

describe('updatesMonths at issue', () => {
  it("takes the body's, else the product's; null means no window, and then updatesUntil is the grace end (perpetual: null)", async () => {
    const product = await createProduct(h.admin, { updatesMonths: 12 });
    const byDefault = await issueOk(h.admin, { productId: product.id, licensee: 'Default window' });
    const expected = nyStart(plusMonths(today(), 12));
    expect(byDefault).toMatchObject({ updatesMonths: 12, updatesUntil: expected });
    expect(byDefault.claims.upd).toBe(seconds(expected));

    const own = await issueOk(h.admin, { productId: product.id, licensee: 'Own window', updatesMonths: 3 });
    expect(own).toMatchObject({ updatesMonths: 3, updatesUntil: nyStart(plusMonths(today(), 3)) });

    const none = await issueOk(h.admin, { productId: product.id, licensee: 'No window', updatesMonths: null, graceDays: 5 });
    expect(none.claims).not.toHaveProperty('upd');
    expect(none).toMatchObject({ updatesMonths: null, updatesUntil: new Date(Date.parse(none.expiresAt) + 5 * DAY_MS).toISOString() });

    const perpetual = await issueOk(h.admin, { productId: product.id, licensee: 'Perpetual', validityMonths: 0, updatesMonths: null });
    expect(perpetual).toMatchObject({ expiresAt: null, updatesMonths: null, updatesUntil: null });
    // A perpetual licence may still have a window.
    const perpetualWindow = await issueOk(h.admin, { productId: product.id, licensee: 'Perpetual with updates', validityMonths: 0 });
    expect(perpetualWindow).toMatchObject({ expiresAt: null, updatesMonths: 12, updatesUntil: expected });

    const plain = await createProduct(h.admin);
    const without = await issueOk(h.admin, { productId: plain.id, licensee: 'Plain' });
    expect(without.claims).not.toHaveProperty('upd');
    expect(without).toMatchObject({ updatesMonths: null, updatesUntil: without.expiresAt });
  });

  it('signs upd as the start of the local date the months after the issue date, clamped to the month end, in wire order with v unchanged', async () => {
    const product = await createProduct(h.admin, { params: [{ key: 'edition', type: 'STRING', defaultValue: 'pro' }] });
    const cases: Array<[string, number, string]> = [
      ['2027-01-31', 1, '2027-02-28T05:00:00.000Z'],
      ['2028-01-31', 1, '2028-02-29T05:00:00.000Z'],
      ['2024-03-31', 1, '2024-04-30T04:00:00.000Z'],
      ['2025-08-31', 6, '2026-02-28T05:00:00.000Z'],
      ['2026-05-15', 0, '2026-05-15T04:00:00.000Z'],
    ];
    for (const [issueDate, updatesMonths, upd] of cases) {
      const licence = await issueOk(h.admin, { productId: product.id, licensee: `From ${issueDate}`, issueDate, updatesMonths });
      expect(licence.updatesUntil, issueDate).toBe(upd);
      expect(licence.claims.upd, issueDate).toBe(seconds(upd));
      expect(licence.claims.v).toBe(3);
      expect(Object.keys(licence.claims)).toEqual([
        'v',
        'lid',
        'prd',
        'org',
        'typ',
        'lic',
        'iat',
        ...(licence.startsAt ? ['nbf'] : []),
        'exp',
        'grace',
        'mm',
        'upd',
        'edition',
      ]);
    }
  });

  it('refuses a value outside 0 to 1,200, and a window ending after the year 9999, issuing nothing', async () => {
    const product = await createProduct(h.admin);
    const before = await countRows(h, 'licences');
    for (const updatesMonths of [-1, 1201, 2.5, '6']) {
      const refused = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Bad', updatesMonths });
      expect(refused.statusCode).toBe(400);
      expect(refused.data.error).toMatch(/^Updates months \(updatesMonths\): /);
    }
    const far = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Far', issueDate: '9950-01-01', validityMonths: 0, updatesMonths: 1200 });
    expect(far.statusCode).toBe(400);
    expect(far.data.error).toBe('Updates months (updatesMonths): the update window would end after the year 9999');
    expect(await countRows(h, 'licences')).toBe(before);
  });
});

describe('updatesMonths at renewal', () => {
  it("keeps the licence's own months, never the product's, counting from the later of today and the current upd date", async () => {
    const product = await createProduct(h.admin, { updatesMonths: 12 });
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Renewer' });
    expect((await h.admin('PUT', `/products/${product.id}`, { updatesMonths: 24 })).statusCode).toBe(200);
    // An early renewal: the current window ends in a year, so the new one ends a year after that.
    const renewed = await h.admin('POST', `/licenses/${licence.lid}/renew`, {});
    expect(renewed.statusCode).toBe(200);
    const expected = nyStart(plusMonths(plusMonths(today(), 12), 12));
    expect(renewed.data).toMatchObject({ updatesMonths: 12, updatesUntil: expected, claims: { upd: seconds(expected) } });

    // A window that ended long ago counts from today.
    const lapsed = await issueOk(h.admin, { productId: product.id, licensee: 'Lapsed', issueDate: '2020-01-31', validityMonths: 0, updatesMonths: 1 });
    expect(lapsed.updatesUntil).toBe('2020-02-29T05:00:00.000Z');
    const back = await h.admin('POST', `/licenses/${lapsed.lid}/renew`, { validityMonths: 0 });
    expect(back.data).toMatchObject({ updatesMonths: 1, updatesUntil: nyStart(plusMonths(today(), 1)) });

    // A window ending on a month's last day in the future carries on from that date, clamped again.
    const ahead = await issueOk(h.admin, { productId: product.id, licensee: 'Ahead', issueDate: '2040-01-31', validityMonths: 0, updatesMonths: 0 });
    expect(ahead.updatesUntil).toBe('2040-01-31T05:00:00.000Z');
    const onwards = await h.admin('POST', `/licenses/${ahead.lid}/renew`, { validityMonths: 0, updatesMonths: 1 });
    expect(onwards.data).toMatchObject({ updatesMonths: 1, updatesUntil: '2040-02-29T05:00:00.000Z', claims: { upd: seconds('2040-02-29T05:00:00.000Z') } });
  });

  it("with issueDate counts from that date; the body's months replace the licence's, null ends the window for good", async () => {
    const product = await createProduct(h.admin, { updatesMonths: 12, defaultGraceDays: 3 });
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Dated renewal' });
    const dated = await h.admin('POST', `/licenses/${licence.lid}/renew`, { issueDate: '2031-10-31', updatesMonths: 4 });
    expect(dated.data).toMatchObject({ updatesMonths: 4, updatesUntil: '2032-02-29T05:00:00.000Z' });

    const ended = await h.admin('POST', `/licenses/${licence.lid}/renew`, { updatesMonths: null });
    expect(ended.data.claims).not.toHaveProperty('upd');
    expect(ended.data).toMatchObject({ updatesMonths: null, updatesUntil: new Date(Date.parse(ended.data.expiresAt) + 3 * DAY_MS).toISOString() });
    // The licence's own "none" holds at the next renewal, whatever the product's default.
    const again = await h.admin('POST', `/licenses/${licence.lid}/renew`, {});
    expect(again.data.claims).not.toHaveProperty('upd');
    expect(again.data.updatesMonths).toBeNull();

    // A licence issued without a window gains one only when a renewal asks.
    const plain = await issueOk(h.admin, { productId: product.id, licensee: 'No window yet', updatesMonths: null });
    const gained = await h.admin('POST', `/licenses/${plain.lid}/renew`, { updatesMonths: 2 });
    expect(gained.data).toMatchObject({ updatesMonths: 2, updatesUntil: nyStart(plusMonths(today(), 2)) });
    const refused = await h.admin('POST', `/licenses/${plain.lid}/renew`, { updatesMonths: 1201 });
    expect(refused.statusCode).toBe(400);
    expect((await h.admin('GET', `/licenses/${plain.lid}`)).data).toMatchObject({ updatesMonths: 2, updatesUntil: gained.data.updatesUntil });
  });
});

describe('trials and their conversion', () => {
  it('signs a trial without upd (its updates end with it, extension too); converting issues the paid window from that day', async () => {
    const p = await trialProduct(h, { updatesMonths: 12 });
    const started = await p.start(startBody(machine('window-trial')));
    expect(started.statusCode).toBe(201);
    const trial = (await h.admin('GET', `/licenses/${started.data.lid}`)).data;
    expect(trial.claims).not.toHaveProperty('upd');
    expect(trial).toMatchObject({ trial: true, updatesMonths: null, updatesUntil: trial.expiresAt });

    const extended = await h.admin('POST', `/licenses/${trial.lid}/extend-trial`, { days: 7 });
    expect(extended.statusCode).toBe(200);
    expect(extended.data.claims).not.toHaveProperty('upd');
    expect(extended.data.updatesUntil).toBe(extended.data.expiresAt);
    expect(extended.data.updatesUntil).not.toBe(trial.updatesUntil);

    const converted = await h.admin('POST', `/licenses/${trial.lid}/convert`, { customer: { name: 'Window Buyer', email: 'window@example.com' } });
    expect(converted.statusCode).toBe(201);
    const expected = nyStart(plusMonths(today(), 12));
    expect(converted.data).toMatchObject({ convertedFromTrial: trial.lid, updatesMonths: 12, updatesUntil: expected, claims: { upd: seconds(expected) } });
    // The trial keeps its own end as its updates' end.
    expect((await h.admin('GET', `/licenses/${trial.lid}`)).data.updatesUntil).toBe(extended.data.updatesUntil);

    const second = await p.start(startBody(machine('window-trial-2')));
    const own = await h.admin('POST', `/licenses/${second.data.lid}/convert`, {
      customer: { name: 'Buyer Two', email: 'two@example.com' },
      updatesMonths: null,
    });
    expect(own.data.claims).not.toHaveProperty('upd');
    expect(own.data).toMatchObject({ updatesMonths: null, updatesUntil: own.data.expiresAt });
  });
});

describe('a trial of a product whose parameter kept the name upd', () => {
  it('signs that parameter at the start and at an extension, never a window', async () => {
    const p = await trialProduct(h);
    await productWithUpdParam(p);
    const started = await p.start(startBody(machine('kept-upd')));
    expect(started.statusCode).toBe(201);
    const extended = await h.admin('POST', `/licenses/${started.data.lid}/extend-trial`, { days: 3 });
    expect(extended.statusCode, extended.body).toBe(200);
    expect(extended.data.claims.upd).toBe('nightly');
    expect(extended.data).toMatchObject({ updatesMonths: null, updatesUntil: extended.data.expiresAt });
  });
});

describe('the licence listings', () => {
  it('carry updatesMonths and updatesUntil in list form, as the record does', async () => {
    const product = await createProduct(h.admin, { updatesMonths: 6 });
    const windowed = await issueOk(h.admin, { productId: product.id, licensee: 'Listed window' });
    const plain = await issueOk(h.admin, { productId: product.id, licensee: 'Listed perpetual', validityMonths: 0, updatesMonths: null });
    const list = (await h.admin('GET', `/licenses?productId=${product.id}`)).data;
    const page = (await h.admin('GET', `/licenses/page?productId=${product.id}`)).data.items;
    for (const items of [list, page]) {
      const byLid = new Map(items.map((l: { lid: string }) => [l.lid, l]));
      expect(byLid.get(windowed.lid)).toMatchObject({ updatesMonths: 6, updatesUntil: windowed.updatesUntil });
      expect(byLid.get(plain.lid)).toMatchObject({ updatesMonths: null, updatesUntil: null });
      expect(byLid.get(windowed.lid)).not.toHaveProperty('claims');
    }
    expect(windowed.updatesUntil).toBe(nyStart(plusMonths(today(), 6)));
  });
});
