import { sql } from 'kysely';
import type { Ctx } from '../http/context.js';
import { localDate, startOfDate } from '../licences/calendar.js';
import { statusIs, windowIs, STATUSES } from '../licences/listing.js';
import { countCountingLicences, licenceViews, toLicenceListItem, type LicenceView } from '../licences/repo.js';

const LICENCE_TYPES = ['OFFLINE', 'ONLINE', 'HYBRID'] as const;
const EXPIRING = { d7: '7d', d30: '30d', d90: '90d' } as const;
const SERIES_DAYS = 30;
/** Every zone offset is a multiple of 15 minutes, so 15-minute buckets map onto local days exactly. */
export const BUCKET_MS = 15 * 60 * 1000;

// Literals, not parameters: PostgreSQL must see the select and GROUP BY expressions as the same.
const issuedBucket = sql<number>`licences.issued_at / ${sql.lit(BUCKET_MS)} * ${sql.lit(BUCKET_MS)}`;

/** The last `SERIES_DAYS` local dates, oldest first. */
function lastDates(now: number, timeZone: string): string[] {
  const today = localDate(now, timeZone);
  const [y, m, d] = today.split('-').map(Number) as [number, number, number];
  return Array.from({ length: SERIES_DAYS }, (_, i) =>
    new Date(Date.UTC(y, m - 1, d - (SERIES_DAYS - 1 - i))).toISOString().slice(0, 10),
  );
}

/** Buckets counted per bucket start, summed per local date in the organisation's zone (never by the database). */
function series(dates: string[], buckets: Array<{ bucket: number; n: number }>, timeZone: string) {
  const perDate = new Map(dates.map((date) => [date, 0]));
  for (const { bucket, n } of buckets) {
    const date = localDate(Number(bucket), timeZone);
    if (perDate.has(date)) perDate.set(date, perDate.get(date)! + Number(n));
  }
  return dates.map((date) => ({ date, count: perDate.get(date)! }));
}

export async function dashboardMetrics(ctx: Ctx) {
  const { tenant: t, now } = ctx;
  const timeZone = ctx.org.timezone;
  const dates = lastDates(now, timeZone);
  const since = startOfDate(dates[0]!, timeZone);

  // One pass over the organisation's filed licences for every total.
  const totalsQuery = t
    .selectFrom('licences')
    .where('licences.archived', '=', 0)
    .select((eb) => {
      const sum = (name: string, condition: Parameters<typeof eb.case>[0] & object) =>
        eb.fn.sum<number>(eb.case().when(condition).then(1).else(0).end()).as(name);
      return [
        eb.fn.countAll<number>().as('all'),
        ...STATUSES.map((s) => sum(`s_${s}`, statusIs(eb as never, s, now))),
        ...LICENCE_TYPES.map((type) => sum(`t_${type}`, eb('licences.licence_type', '=', type))),
        ...Object.entries(EXPIRING).map(([name, window]) => sum(`e_${name}`, windowIs(eb as never, window, now))),
      ];
    });

  const [totals, seats, issued, checks] = await Promise.all([
    totalsQuery.executeTakeFirstOrThrow() as Promise<Record<string, number | null>>,
    t
      .selectFrom('machine_bindings')
      .innerJoin('licences', 'licences.id', 'machine_bindings.licence_id')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('machine_bindings.released_at', 'is', null)
      .where('licences.archived', '=', 0)
      .executeTakeFirstOrThrow(),
    t
      .selectFrom('licences')
      .select([issuedBucket.as('bucket'), (eb) => eb.fn.countAll<number>().as('n')])
      .where('licences.archived', '=', 0)
      .where('licences.issued_at', '>=', since)
      .groupBy(issuedBucket)
      .execute(),
    t.selectFrom('check_counts').select(['bucket', 'count as n']).where('bucket', '>=', since - BUCKET_MS).execute(),
  ]);
  const n = (key: string) => Number(totals[key] ?? 0);
  return {
    totals: {
      all: n('all'),
      byStatus: Object.fromEntries(STATUSES.map((s) => [s, n(`s_${s}`)])) as Record<(typeof STATUSES)[number], number>,
      byType: Object.fromEntries(LICENCE_TYPES.map((type) => [type, n(`t_${type}`)])) as Record<(typeof LICENCE_TYPES)[number], number>,
    },
    seatsUsed: Number(seats.n),
    expiring: { d7: n('e_d7'), d30: n('e_d30'), d90: n('e_d90') },
    series: { issued: series(dates, issued, timeZone), checks: series(dates, checks, timeZone) },
    // The same count the plan limit is enforced on, so the organisation sees it before the 403.
    plan: { limit: ctx.org.planLimit, used: await countCountingLicences(t, ctx.now) },
  };
}

export async function dashboard(ctx: Ctx) {
  const [metrics, soon] = await Promise.all([
    dashboardMetrics(ctx),
    licenceViews(ctx.tenant)
      .where('licences.archived', '=', 0)
      .where('licences.revoked', '=', 0)
      .where('licences.expires_at', '>', ctx.now)
      .orderBy('licences.expires_at')
      .orderBy('licences.lid')
      .limit(10)
      .execute(),
  ]);
  return { ...metrics, expiringSoon: (soon as LicenceView[]).map((v) => toLicenceListItem(v, ctx.now)) };
}
