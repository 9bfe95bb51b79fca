// Issue 15's guard: whatever makes listings fast must keep every count exact. Each step checks the
// same invariants across the page listing, the window counts and the dashboard, through writes
// and through time passing with nothing written (the service's clock moved, not the rows).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startHarness, type Harness } from '../harness.js';

const DAY = 86_400_000;
const STATUSES = ['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'] as const;
let h: Harness;
let productId: number;
let otherId: number;
// A token: a session would expire when the clock jumps a month.
let call: Harness['admin'];

beforeAll(async () => {
  h = await startHarness();
  productId = (await h.admin('POST', '/products', { productKey: 'exact', name: 'Exact App', defaultGraceDays: 5 })).data.id;
  otherId = (await h.admin('POST', '/products', { productKey: 'zinc', name: 'Zinc Tool', defaultGraceDays: 5 })).data.id;
  call = h.as({ token: await h.createToken(['licenses:write', 'analytics:read']) });
});
afterAll(() => h?.close());
afterEach(() => vi.useRealTimers());

const get = async (url: string) => {
  const response = await call('GET', url);
  expect(response.statusCode, response.body).toBe(200);
  return response.data;
};

/** Every count, from every place that shows one; asserting they agree with each other. */
async function counts() {
  const [metrics, windows] = await Promise.all([get('/dashboard/metrics'), get('/licenses/windows')]);
  const byStatus = {} as Record<(typeof STATUSES)[number], number>;
  for (const status of STATUSES) byStatus[status] = (await get(`/licenses/page?status=${status}&limit=1`)).total;
  const all = (await get('/licenses/page?limit=1')).total;
  expect(metrics.totals.byStatus).toEqual(byStatus);
  expect(metrics.totals.all).toBe(all);
  expect(Object.values(byStatus).reduce((sum, n) => sum + n, 0)).toBe(all);
  expect(windows.all).toBe(all);
  expect((await get('/licenses/page?window=grace&limit=1')).total).toBe(windows.grace);
  expect((await get('/licenses/page?window=expired&limit=1')).total).toBe(windows.expired);
  expect((await get('/licenses/page?window=archived&limit=1')).total).toBe(windows.archived);
  // And with the truth: the statuses of the listed licences themselves, judged one by one.
  const listed = await listAll('sort=issuedAt', 500);
  expect(byStatus).toEqual(Object.fromEntries(STATUSES.map((s) => [s, listed.filter((l) => l.status === s).length])));
  expect(windows.perpetual).toBe(listed.filter((l) => l.expiresAt === null).length);
  expect(metrics.plan.used).toBe(byStatus.ACTIVE + byStatus.GRACE);
  for (const status of STATUSES) {
    const found = (await listAll(`status=${status}`, 500)).map((l) => l.lid).sort();
    expect(found, status).toEqual(
      listed
        .filter((l) => l.status === status)
        .map((l) => l.lid)
        .sort(),
    );
  }
  for (const id of [productId, otherId]) {
    expect((await get(`/licenses/page?productId=${id}&limit=1`)).total).toBe(listed.filter((l) => l.productId === id).length);
  }
  // The status and product sorts are read group by group, skipping whole groups by their kept counts.
  const keys = { status: (l: Listed) => STATUSES.indexOf(l.status), product: (l: Listed) => l.productName };
  for (const [sort, key] of Object.entries(keys)) {
    for (const asc of [true, false]) {
      const direction = asc ? 1 : -1;
      const expected = [...listed].sort((a, b) => direction * (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.lid < b.lid ? -1 : 1)).map((l) => l.lid);
      expect(
        (await listAll(`sort=${sort}&asc=${asc}`, 25)).map((l) => l.lid),
        `${sort} ${asc}`,
      ).toEqual(expected);
      const middle = Math.floor(expected.length / 2);
      const paged = await get(`/licenses/page?sort=${sort}&asc=${asc}&limit=10&offset=${middle}`);
      expect(paged.items.map((l: Listed) => l.lid)).toEqual(expected.slice(middle, middle + 10));
    }
  }
  return { all, byStatus, windows };
}

interface Listed {
  lid: string;
  status: (typeof STATUSES)[number];
  expiresAt: string | null;
  productId: number;
  productName: string;
}

/** A whole listing, followed page by page through its cursors. */
async function listAll(query: string, limit: number): Promise<Listed[]> {
  const items: Listed[] = [];
  for (let cursor: string | null = ''; cursor !== null; ) {
    const page = await get(`/licenses/page?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  }
  return items;
}

const post = async (url: string, body: unknown = {}) => {
  const response = await call('POST', url, body);
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.data;
};

describe('counts stay exact', () => {
  it('through issue, revoke, reinstate, renew, archive and restore, and as a licence ages from ACTIVE to GRACE to EXPIRED', async () => {
    const start = await counts();
    expect(start.all).toBe(0);

    // Issued yesterday, a month's term ends within 30 days whatever the month's length.
    const yesterday = new Date(Date.now() - DAY).toISOString().slice(0, 10);
    const short = await post('/licenses', { productId, licensee: 'Short Term', validityMonths: 1, issueDate: yesterday });
    const long = await post('/licenses', { productId, licensee: 'Long Term', validityMonths: 24 });
    await post('/licenses', { productId, licensee: 'Forever', validityMonths: 0 });
    let now = await counts();
    expect(now.byStatus).toMatchObject({ ACTIVE: 3, GRACE: 0, EXPIRED: 0 });
    expect(now.windows).toMatchObject({ all: 3, '30d': 1, '90d': 1, perpetual: 1, grace: 0, expired: 0 });

    // Time passes; nothing is written. The month-long licence enters its five days of grace.
    const expiry = Date.parse(short.expiresAt);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(expiry + DAY);
    now = await counts();
    expect(now.byStatus).toMatchObject({ ACTIVE: 2, GRACE: 1, EXPIRED: 0 });
    expect(now.windows).toMatchObject({ grace: 1, expired: 0 });
    vi.setSystemTime(expiry + 6 * DAY);
    now = await counts();
    expect(now.byStatus).toMatchObject({ ACTIVE: 2, GRACE: 0, EXPIRED: 1 });
    expect(now.windows).toMatchObject({ grace: 0, expired: 1 });

    await post(`/licenses/${long.lid}/revoke`, { reason: 'chargeback' });
    now = await counts();
    expect(now.byStatus).toMatchObject({ ACTIVE: 1, REVOKED: 1, EXPIRED: 1 });
    await post(`/licenses/${long.lid}/reinstate`);
    expect((await counts()).byStatus).toMatchObject({ ACTIVE: 2, REVOKED: 0 });

    // Filed away, the expired licence leaves every count but the archived window; restored, it returns.
    await post(`/licenses/${short.lid}/archive`);
    now = await counts();
    expect(now).toMatchObject({ all: 2, windows: { archived: 1, expired: 0 } });
    expect(now.byStatus.EXPIRED).toBe(0);
    await post(`/licenses/${short.lid}/restore`);
    expect((await counts()).byStatus).toMatchObject({ EXPIRED: 1 });

    await post(`/licenses/${short.lid}/renew`, { validityMonths: 12 });
    now = await counts();
    expect(now.byStatus).toMatchObject({ ACTIVE: 3, GRACE: 0, EXPIRED: 0, REVOKED: 0 });
    expect(now.windows).toMatchObject({ all: 3, expired: 0, archived: 0 });
  });

  it('under concurrent writes, and as the clock moves forward past many boundaries and back again', async () => {
    const before = await counts();
    const issued = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        post('/licenses', { productId: i % 3 ? productId : otherId, licensee: `Crowd ${i}`, validityMonths: [1, 1, 12, 0][i % 4] }),
      ),
    );
    // Revocations, renewals and more issues side by side.
    await Promise.all([
      ...issued.slice(0, 20).map((l) => post(`/licenses/${l.lid}/revoke`)),
      ...issued.slice(20, 30).map((l) => post(`/licenses/${l.lid}/renew`, { validityMonths: 3 })),
      ...Array.from({ length: 10 }, (_, i) => post('/licenses', { productId, licensee: `Late ${i}`, validityMonths: 1 })),
    ]);
    const written = await counts();
    expect(written.all).toBe(before.all + 130);
    expect(written.byStatus.REVOKED).toBe(before.byStatus.REVOKED + 20);

    // Over fifty one-month licences lapse at once: the first read after moves the kept totals on.
    const monthOut = Date.parse(issued[40]!.expiresAt);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(monthOut + 10 * DAY);
    const later = await counts();
    expect(later.byStatus.EXPIRED).toBeGreaterThanOrEqual(before.byStatus.EXPIRED + 50);
    // Writes after the move are judged against it.
    await post(`/licenses/${issued[41]!.lid}/revoke`);
    await post(`/licenses/${issued[45]!.lid}/renew`, { validityMonths: 1 });
    const after = await counts();
    expect(after.byStatus.REVOKED).toBe(later.byStatus.REVOKED + 1);
    expect(after.byStatus.EXPIRED).toBe(later.byStatus.EXPIRED - 2);

    // And back: the clock of a reader may lag behind the totals' own.
    vi.useRealTimers();
    const back = await counts();
    expect(back.byStatus.EXPIRED).toBe(written.byStatus.EXPIRED);
  });
});

describe('search stays exact', () => {
  it('whether the index narrows the phrase or the licences are scanned', async () => {
    await Promise.all(Array.from({ length: 100 }, (_, i) => post('/licenses', { productId, licensee: `Searcher ${i}`, validityMonths: 12 })));
    const everything: Array<{ lid: string; licensee: string }> = [];
    for (let cursor: string | null = ''; cursor !== null; ) {
      const page = await get(`/licenses/page?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      everything.push(...page.items);
      cursor = page.nextCursor;
    }
    const expected = (phrase: string) =>
      everything
        .filter((l) => l.licensee.toLowerCase().includes(phrase))
        .map((l) => l.lid)
        .sort();
    // `searcher 1`: common trigrams, a rare one (`r 1`), eleven matches; `searcher`: in most licences;
    // `er`: too short for any index.
    for (const phrase of ['searcher 1', 'searcher', 'er']) {
      const first = await get(`/licenses/page?q=${encodeURIComponent(phrase)}&limit=5&sort=licensee&asc=true`);
      expect(first.total, phrase).toBe(expected(phrase).length);
      const found = [...first.items];
      for (let cursor = first.nextCursor; cursor !== null; ) {
        const page = await get(`/licenses/page?q=${encodeURIComponent(phrase)}&limit=5&sort=licensee&asc=true&cursor=${cursor}`);
        expect(page.total, phrase).toBe(first.total);
        found.push(...page.items);
        cursor = page.nextCursor;
      }
      expect(found.map((l: { lid: string }) => l.lid).sort(), phrase).toEqual(expected(phrase));
      const last = await get(`/licenses/page?q=${encodeURIComponent(phrase)}&limit=5&offset=${first.total}`);
      expect(last).toMatchObject({ total: first.total, items: [] });
    }
    expect(expected('searcher 1')).toHaveLength(11);
  });
});
