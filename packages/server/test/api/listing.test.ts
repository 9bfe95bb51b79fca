import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';

const DAY = 86_400_000;
let h: Harness;
let productId: number;
let otherProductId: number;
const lids: Record<string, string> = {};
let t0: number;

/** Issues a licence through the API, then moves its calendar columns to the case under test. */
async function licence(name: string, set: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const response = await h.admin('POST', '/licenses', { productId, licensee: name, licenseeEmail: `${name.toLowerCase()}@example.com`, ...extra });
  expect(response.statusCode).toBe(201);
  lids[name] = response.data.lid;
  const { last_checked_at, ...columns } = set;
  if (Object.keys(columns).length > 0) {
    await h.database.db.updateTable('licences').set(columns).where('lid', '=', response.data.lid).execute();
    await recount();
  }
  // A licence's stamp, and the copy of `archived` its sort walks, live in licence_stamps.
  const stamp = { last_checked_at, archived: columns.archived };
  if (Object.values(stamp).some((v) => v !== undefined)) {
    await h.database.db
      .updateTable('licence_stamps')
      .set(stamp as never)
      .where('lid', '=', response.data.lid)
      .execute();
  }
  return response.data.lid as string;
}

/**
 * Rows written behind the service's back leave its kept totals behind: dropping the tally clock
 * has them counted afresh on the next read (docs/operations.md).
 */
const recount = () => h.database.db.deleteFrom('licence_tally_clocks').execute();

const page = async (query: string) => {
  const response = await h.admin('GET', `/licenses/page?${query}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.data as {
    items: Array<{ lid: string; licensee: string; status: string }>;
    total: number;
    limit: number;
    offset: number | null;
    nextCursor: string | null;
  };
};
const names = (items: Array<{ licensee: string }>) => items.map((i) => i.licensee);

beforeAll(async () => {
  h = await startHarness();
  productId = (await h.admin('POST', '/products', { productKey: 'listing', name: 'Listing App' })).data.id;
  otherProductId = (await h.admin('POST', '/products', { productKey: 'zeta', name: 'Zeta Suite' })).data.id;
  t0 = Date.now();
  const expiring = (ms: number, grace = 0) => ({ expires_at: t0 + ms, grace_days: grace, grace_ends_at: t0 + ms + grace * DAY });
  await licence('Soon', { ...expiring(7 * DAY - 60_000), issued_at: t0 - 9 * DAY });
  await licence('Later', { ...expiring(7 * DAY + 60_000), issued_at: t0 - 8 * DAY });
  await licence('Month', { ...expiring(30 * DAY - 60_000), issued_at: t0 - 7 * DAY });
  await licence('Quarter', { ...expiring(90 * DAY - 60_000), issued_at: t0 - 6 * DAY });
  await licence('Beyond', { ...expiring(90 * DAY + 60_000), issued_at: t0 - 5 * DAY, last_checked_at: t0 - DAY });
  await licence('Forever', { expires_at: null, grace_ends_at: null, issued_at: t0 - 4 * DAY, last_checked_at: t0 - 2 * DAY }, { validityMonths: 0 });
  await licence('Graceful', { ...expiring(-DAY, 3), issued_at: t0 - 3 * DAY });
  await licence('Lapsed', { ...expiring(-2 * DAY, 1), issued_at: t0 - 2 * DAY }, { notes: '=HYPERLINK("x")' });
  await licence('Pending', { starts_at: t0 + DAY, ...expiring(40 * DAY), issued_at: t0 - DAY });
  await licence('Revoked', { ...expiring(3 * DAY), issued_at: t0 - 10 * DAY, revoked: 1, revoked_at: t0 });
  await licence('Filed', { ...expiring(-30 * DAY), issued_at: t0 - 11 * DAY, revoked: 1, archived: 1, archived_at: t0 });
  const zeta = await h.admin('POST', '/licenses', { productId: otherProductId, licensee: 'Odd, "Quoted" Co', notes: '100% sure_thing' });
  lids.Zeta = zeta.data.lid;
  await h.database.db
    .updateTable('licences')
    .set({ issued_at: t0 - 12 * DAY })
    .where('lid', '=', zeta.data.lid)
    .execute();
});
afterAll(() => h?.close());

describe('page listing', () => {
  it('lists filed licences newest first by default, with the matching total', async () => {
    const first = await page('limit=3');
    expect(first.total).toBe(11);
    expect(first.limit).toBe(3);
    expect(first.offset).toBe(0);
    expect(names(first.items)).toEqual(['Pending', 'Lapsed', 'Graceful']);
    expect(first.items[0]).not.toHaveProperty('licenseString');
    expect(first.items[0]).not.toHaveProperty('claims');
    const rest = await page('limit=50&offset=3');
    expect(rest.total).toBe(11);
    expect(names(rest.items)).toEqual(['Forever', 'Beyond', 'Quarter', 'Month', 'Later', 'Soon', 'Revoked', 'Odd, "Quoted" Co']);
  });

  it.each([
    ['7d', ['Soon']],
    ['30d', ['Month', 'Later', 'Soon']],
    ['90d', ['Pending', 'Quarter', 'Month', 'Later', 'Soon']],
    ['grace', ['Graceful']],
    ['expired', ['Lapsed']],
    ['perpetual', ['Forever']],
    ['archived', ['Filed']],
  ])('window %s holds exactly its licences, edges included', async (window, expected) => {
    const result = await page(`window=${window}`);
    expect(names(result.items)).toEqual(expected);
    expect(result.total).toBe(expected.length);
  });

  it('counts every window in /licenses/windows', async () => {
    const response = await h.admin('GET', '/licenses/windows');
    expect(response.data).toEqual({ all: 11, '7d': 1, '30d': 3, '90d': 5, grace: 1, expired: 1, perpetual: 1, archived: 1 });
  });

  it('filters by one status or a comma list, computed from the calendar', async () => {
    expect(names((await page('status=PENDING')).items)).toEqual(['Pending']);
    expect(names((await page('status=REVOKED')).items)).toEqual(['Revoked']);
    expect(names((await page('status=GRACE,EXPIRED')).items)).toEqual(['Lapsed', 'Graceful']);
    expect((await page('status=ACTIVE')).total).toBe(7);
    expect(names((await page('status=REVOKED&window=archived')).items)).toEqual(['Filed']);
  });

  it('takes a repeated status like a comma list', async () => {
    expect(names((await page('status=GRACE&status=EXPIRED')).items)).toEqual(['Lapsed', 'Graceful']);
    expect((await page('status=ACTIVE&status=PENDING,REVOKED')).total).toBe(9);
    expect((await h.admin('GET', '/licenses/page?status=ACTIVE&status=LOST')).data.error).toMatch(/status/);
  });

  it('filters by product and by customer', async () => {
    expect(names((await page(`productId=${otherProductId}`)).items)).toEqual(['Odd, "Quoted" Co']);
    expect((await page(`productId=${productId}`)).total).toBe(10);
    const customerId = (await h.admin('GET', `/licenses/${lids.Quarter}`)).data.customerId;
    expect(names((await page(`customerId=${customerId}`)).items)).toEqual(['Quarter']);
    expect((await page('productId=987654321')).total).toBe(0);
    for (const query of ['productId=abc', 'customerId=1.5', 'productId=0']) {
      const response = await h.admin('GET', `/licenses/page?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.data.error).toMatch(query.split('=')[0]!);
    }
  });

  it('sorts licensees without regard to case', async () => {
    await licence('apple', { issued_at: t0 - 20 * DAY });
    await licence('Apricot', { issued_at: t0 - 21 * DAY });
    try {
      expect(names((await page('sort=licensee&asc=true&limit=3')).items)).toEqual(['apple', 'Apricot', 'Beyond']);
      expect(names((await page('sort=licensee&limit=13')).items).slice(-3)).toEqual(['Beyond', 'Apricot', 'apple']);
    } finally {
      await h.database.db.deleteFrom('licences').where('lid', 'in', [lids.apple!, lids.Apricot!]).execute();
      await recount();
    }
  });

  it('pages by cursor through every sort, matching offset paging', async () => {
    for (const sort of ['issuedAt', 'expiresAt', 'licensee', 'status', 'product', 'lastCheckedAt']) {
      for (const asc of [true, false]) {
        const base = `sort=${sort}&asc=${asc}`;
        const all = (await page(`${base}&limit=500`)).items.map((i) => i.lid);
        const walked: string[] = [];
        let answer = await page(`${base}&limit=4`);
        expect(answer.offset).toBe(0);
        walked.push(...answer.items.map((i) => i.lid));
        while (answer.nextCursor) {
          answer = await page(`${base}&limit=4&cursor=${answer.nextCursor}`);
          expect(answer.offset).toBeNull();
          expect(answer.total).toBe(all.length);
          walked.push(...answer.items.map((i) => i.lid));
        }
        expect(walked, base).toEqual(all);
      }
    }
  });

  it('refuses a cursor with offset, for another filter or sort, or malformed, naming cursor', async () => {
    const cursor = (await page('limit=2')).nextCursor;
    expect(cursor).toEqual(expect.any(String));
    expect((await page('limit=500')).nextCursor).toBeNull();
    for (const query of [
      `cursor=${cursor}&offset=0`,
      `cursor=${cursor}&sort=licensee`,
      `cursor=${cursor}&status=ACTIVE`,
      `cursor=${cursor}&asc=true`,
      'cursor=nonsense',
    ]) {
      const response = await h.admin('GET', `/licenses/page?limit=2&${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.data.error).toMatch(/^Query parameter "cursor": /);
    }
  });

  it('sorts by each key with nulls last either way and ties broken by lid', async () => {
    const expAsc = names((await page('sort=expiresAt&asc=true')).items);
    expect(expAsc.slice(0, 3)).toEqual(['Lapsed', 'Graceful', 'Revoked']);
    expect(expAsc.at(-1)).toBe('Forever');
    const expDesc = names((await page('sort=expiresAt&asc=false')).items);
    expect(expDesc[0]).not.toBe('Forever');
    expect(expDesc.at(-1)).toBe('Forever');

    const checked = names((await page('sort=lastCheckedAt&asc=true')).items);
    expect(checked.slice(0, 2)).toEqual(['Forever', 'Beyond']);
    const checkedDesc = (await page('sort=lastCheckedAt')).items;
    expect(names(checkedDesc).slice(0, 2)).toEqual(['Beyond', 'Forever']);
    // The nine never-checked licences tie: lid breaks the tie, in the sort's direction.
    const tiedDesc = checkedDesc.slice(2).map((i) => i.lid);
    expect(tiedDesc).toEqual([...tiedDesc].sort().reverse());
    const tiedAsc = (await page('sort=lastCheckedAt&asc=true')).items.slice(2).map((i) => i.lid);
    expect(tiedAsc).toEqual([...tiedAsc].sort());

    const byStatus = (await page('sort=status&asc=true')).items.map((i) => i.status);
    const order = ['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'];
    expect(byStatus).toEqual([...byStatus].sort((a, b) => order.indexOf(a) - order.indexOf(b)));
    expect(byStatus[0]).toBe('PENDING');
    expect(byStatus.at(-1)).toBe('REVOKED');

    expect(names((await page('sort=licensee&asc=true&limit=2')).items)).toEqual(['Beyond', 'Forever']);
    expect(names((await page('sort=product&limit=1')).items)).toEqual(['Odd, "Quoted" Co']);
    expect(names((await page('sort=product&asc=true')).items).at(-1)).toBe('Odd, "Quoted" Co');
  });

  it('searches licensee, email, lid, product name and notes, case-insensitively', async () => {
    expect(names((await page('q=gRaCeFuL')).items)).toEqual(['Graceful']);
    expect(names((await page('q=quarter%40example')).items)).toEqual(['Quarter']);
    expect(names((await page(`q=${lids.Beyond!.slice(9, 23).toUpperCase()}`)).items)).toEqual(['Beyond']);
    expect(names((await page('q=zeta%20SUITE')).items)).toEqual(['Odd, "Quoted" Co']);
    expect(names((await page('q=hyperlink')).items)).toEqual(['Lapsed']);
    // LIKE wildcards in the query are literal characters.
    expect(names((await page('q=100%25')).items)).toEqual(['Odd, "Quoted" Co']);
    expect(names((await page('q=e_t')).items)).toEqual(['Odd, "Quoted" Co']);
    expect((await page('q=1_0')).total).toBe(0);
    expect((await page('q=s_r')).total).toBe(0);
  });

  it.each([
    ['window=soon', 'window'],
    ['sort=price', 'sort'],
    ['asc=maybe', 'asc'],
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['offset=-1', 'offset'],
    ['status=ACTIVE,LOST', 'status'],
    ['colour=red', 'colour'],
  ])('refuses %s with 400 naming the parameter', async (query, name) => {
    const response = await h.admin('GET', `/licenses/page?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toContain(name);
  });
});

describe('CSV export', () => {
  const parse = (csv: string) => csv.split('\r\n').filter(Boolean);

  it('exports the filtered list with the documented columns and cell formats', async () => {
    const response = await h.admin('GET', '/licenses/export.csv?window=all&sort=licensee&asc=true');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/csv/);
    expect(response.headers['content-disposition']).toMatch(/^attachment; filename="licences-acme-\d{4}-\d\d-\d\d\.csv"$/);
    const lines = parse(response.body);
    expect(response.body.endsWith('\r\n')).toBe(true);
    expect(lines[0]).toBe(
      'lid,licensee,licenseeEmail,productKey,productName,licenceType,status,issuedAt,startsAt,expiresAt,graceDays,maxMachines,seatsUsed,revoked,archived,lastCheckedAt,notes',
    );
    expect(lines).toHaveLength(12);
    const forever = lines.find((l) => l.includes(',Forever,'))!.split(',');
    expect(forever).toEqual([
      lids.Forever,
      'Forever',
      'forever@example.com',
      'listing',
      'Listing App',
      'OFFLINE',
      'ACTIVE',
      expect.stringMatching(/Z$/),
      '',
      '',
      '0',
      '1',
      '0',
      'false',
      'false',
      expect.stringMatching(/Z$/),
      '',
    ]);
    expect(lines.find((l) => l.startsWith(lids.Zeta!))).toContain(',"Odd, ""Quoted"" Co",');
    expect(lines.find((l) => l.includes(',Lapsed,'))!.endsWith(`,"'=HYPERLINK(""x"")"`)).toBe(true);
  });

  it('prefixes every formula-like cell', async () => {
    for (const [i, note] of ['+1', '-2', '@cmd', '\tx', '\rx'].entries()) {
      await h.database.db.updateTable('licences').set({ notes: note }).where('lid', '=', lids.Soon!).execute();
      const response = await h.admin('GET', '/licenses/export.csv?window=7d');
      const row = parse(response.body)[1]!;
      expect(row.endsWith(note.startsWith('\r') ? `,"'${note}"` : `,'${note}`), `note ${i}`).toBe(true);
    }
  });

  it('applies the same filters, sort and validation as the page listing', async () => {
    const response = await h.admin('GET', '/licenses/export.csv?status=GRACE,EXPIRED&sort=expiresAt&asc=true');
    expect(
      parse(response.body)
        .slice(1)
        .map((l) => l.split(',')[1]),
    ).toEqual(['Lapsed', 'Graceful']);
    expect((await h.admin('GET', '/licenses/export.csv?window=never')).statusCode).toBe(400);
  });

  it("takes the page listing's whole query, ignoring limit and offset", async () => {
    const response = await h.admin('GET', `/licenses/export.csv?limit=1&offset=1&status=GRACE&status=EXPIRED&productId=${productId}`);
    expect(response.statusCode).toBe(200);
    expect(
      parse(response.body)
        .slice(1)
        .map((l) => l.split(',')[1]),
    ).toEqual(['Lapsed', 'Graceful']);
  });

  // Loading 25,000 rows is most of its time; on a loaded machine it outlasts the default 30 s.
  it('refuses above 25,000 rows with 400 naming the count, rather than truncating', async () => {
    const template = await h.database.db.selectFrom('licences').selectAll().where('lid', '=', lids.Soon!).executeTakeFirstOrThrow();
    const { id: _id, ...columns } = template;
    const rows = Array.from({ length: 25_000 }, () => ({ ...columns, lid: randomUUID(), archived: 1 }));
    // 500 rows a statement stays within SQLite's limit of 32,766 bound values.
    for (let i = 0; i < rows.length; i += 500)
      await h.database.db
        .insertInto('licences')
        .values(rows.slice(i, i + 500))
        .execute();
    // Every licence has its row of licence_stamps, as issuing writes it.
    await sql`insert into licence_stamps (licence_id, org_id, archived, lid) select id, org_id, archived, lid from licences where id not in (select licence_id from licence_stamps)`.execute(
      h.database.db,
    );
    await recount();
    const refused = await h.admin('GET', '/licenses/export.csv?window=archived');
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toContain('25001');
    const allowed = await h.admin('GET', '/licenses/export.csv?window=archived&q=soon');
    expect(allowed.statusCode).toBe(200);
    expect(parse(allowed.body)).toHaveLength(25_001);
    // Batches of 1,000 neither skip nor repeat a row.
    expect(
      new Set(
        parse(allowed.body)
          .slice(1)
          .map((l) => l.split(',')[0]),
      ).size,
    ).toBe(25_000);
    await h.database.db.deleteFrom('licences').where('archived', '=', 1).where('licensee', '=', 'Soon').execute();
    await recount();
  }, 120_000);
});

describe('dashboard', () => {
  it('counts by status and type, seats and expiring windows over filed licences', async () => {
    const response = await h.admin('GET', '/dashboard/metrics');
    expect(response.statusCode).toBe(200);
    expect(response.data.totals).toEqual({
      all: 11,
      byStatus: { PENDING: 1, ACTIVE: 7, GRACE: 1, EXPIRED: 1, REVOKED: 1 },
      byType: { OFFLINE: 11, ONLINE: 0, HYBRID: 0 },
    });
    expect(response.data.expiring).toEqual({ d7: 1, d30: 3, d90: 5 });
    expect(response.data.seatsUsed).toBe(0);
    expect(response.data.series.issued).toHaveLength(30);
    expect(response.data.series.checks.every((d: { count: number }) => d.count === 0)).toBe(true);
  });

  it('buckets by local day in the organisation timezone: 23:30 UTC is the next day in Berlin', async () => {
    await h.admin('PUT', '/settings', { timezone: 'Europe/Berlin' });
    const yesterday = new Date(Date.now() - DAY).toISOString().slice(0, 10);
    const lateEvening = Date.parse(`${yesterday}T23:30:00Z`);
    await h.database.db
      .updateTable('licences')
      .set({ issued_at: t0 - 40 * DAY })
      .execute();
    await h.database.db.updateTable('licences').set({ issued_at: lateEvening }).where('lid', '=', lids.Soon!).execute();
    await h.database.db
      .insertInto('check_counts')
      .values({
        org_id: (await h.database.db.selectFrom('organisations').select('id').where('slug', '=', 'acme').executeTakeFirstOrThrow()).id,
        bucket: lateEvening,
        count: 7,
      })
      .execute();
    const { series } = (await h.admin('GET', '/dashboard/metrics')).data;
    const berlinDay = new Date(lateEvening + 3600_000).toISOString().slice(0, 10);
    const issued = Object.fromEntries(series.issued.map((d: { date: string; count: number }) => [d.date, d.count]));
    expect(issued[berlinDay]).toBe(1);
    expect(issued[yesterday] ?? 0).toBe(0);
    expect(series.issued.at(-1).date).toBe(new Date(Date.now() + 3600_000).toISOString().slice(0, 10));
    const checks = Object.fromEntries(series.checks.map((d: { date: string; count: number }) => [d.date, d.count]));
    expect(checks[berlinDay]).toBe(7);
    await h.admin('PUT', '/settings', { timezone: 'UTC' });
    const utc = Object.fromEntries(
      (await h.admin('GET', '/dashboard/metrics')).data.series.issued.map((d: { date: string; count: number }) => [d.date, d.count]),
    );
    expect(utc[yesterday]).toBe(1);
  });

  it('adds the ten licences expiring next to GET /dashboard', async () => {
    const response = await h.admin('GET', '/dashboard');
    expect(response.statusCode).toBe(200);
    expect(names(response.data.expiringSoon).slice(0, 4)).toEqual(['Soon', 'Later', 'Month', 'Pending']);
    expect(response.data.expiringSoon.length).toBeLessThanOrEqual(10);
    expect(response.data.totals.all).toBe(11);
  });

  it('needs analytics:read', async () => {
    const token = h.as({ token: await h.createToken(['licenses:read']) });
    expect((await token('GET', '/dashboard')).data).toEqual({ error: 'missing scope analytics:read' });
    const analyst = h.as({ token: await h.createToken(['analytics:read']) });
    expect((await analyst('GET', '/dashboard/metrics')).statusCode).toBe(200);
  });
});
