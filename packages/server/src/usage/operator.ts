import { recordAudit } from '../audit/audit.js';
import type { Ctx } from '../core/context.js';
import { badRequest, invalid } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { inTransaction } from '../core/transaction.js';
import type { Tenant } from '../db/tenant.js';
import { idempotently, rememberAnswer, type IdempotentRequest, type Replay } from '../licences/idempotency.js';
import { findLicenceRow, lockLicenceRow } from '../licences/repo.js';
import { periodAt } from './periods.js';
import { rememberedUntil } from './periods.js';
import { countsIn, meteredProducts, recentEvents, topConsumers, writeUsage } from './repo.js';
import { balance, balances, licenceEventData, markThresholds, metersOf, type Meter } from './service.js';

const RECENT = 50;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** `GET /licenses/{lid}/usage` as `t` sees it: every meter's balance with its period key, and the 50 newest events and adjustments. */
async function usageOf(t: Tenant, ctx: Ctx, licence: { id: number; lid: string; meters: string }) {
  const meters = await balances(t, { id: licence.id, lid: licence.lid, meters: metersOf(licence.meters) }, ctx.now, ctx.org.timezone);
  const events = (await recentEvents(t, licence.id, RECENT)).map((e) => ({
    id: e.event_id,
    meter: e.meter,
    amount: Number(e.amount),
    at: e.source === 'operator' ? iso(Number(e.received_at)) : iso(e.at === null ? null : Number(e.at)),
    receivedAt: iso(Number(e.received_at))!,
    result: e.result,
    source: e.source,
    machineId: e.machine_id === null ? null : Number(e.machine_id),
    actor: e.actor,
    reason: e.reason,
  }));
  return { lid: licence.lid, meters, events };
}

export async function readUsage(ctx: Ctx, lid: string) {
  return usageOf(ctx.tenant, ctx, await findLicenceRow(ctx.tenant, lid));
}

/**
 * `POST /licenses/{lid}/usage/adjust` (DESIGN.md 19): a credit (negative) or debit added to the
 * current period's count under the licence-row lock, so it races events safely; it may pass the
 * ceiling, never below 0. Audited, and a threshold it reaches raises usage.threshold.
 */
export async function adjustUsage(ctx: Ctx, lid: string, input: { meter: string; amount: number; reason: string }, idem: IdempotentRequest | null) {
  if (input.amount === 0) throw invalid('amount', 'must not be 0');
  if (!input.reason.trim()) throw invalid('reason', 'must not be blank');
  return idempotently(ctx.tenant, idem, ctx.now, () =>
    inTransaction(ctx, async (t) => {
      const row = await lockLicenceRow(ctx.database.dialect, t, lid);
      if (row.archived === 1) throw badRequest('an archived licence cannot be adjusted: restore it first');
      const meters = metersOf(row.meters);
      const meter = meters.find((m) => m.key === input.meter);
      if (!meter) throw invalid('meter', `the licence has no meter "${input.meter}"`);
      const period = periodAt(meter.period, ctx.now, ctx.org.timezone);
      const [count] = await countsIn(t, row.id, [period.key]).then((rows) => rows.filter((r) => r.meter === meter.key));
      const before = count ? Number(count.used) : 0;
      const after = before + input.amount;
      if (after < 0) throw invalid('amount', `the count would fall below 0 (used ${before})`);
      if (after > MAX_SAFE) throw invalid('amount', 'the count would pass 2^53 − 1');
      // An adjustment has no id: it remembers none.
      await writeUsage(
        t,
        [
          {
            licence_id: row.id,
            event_id: null,
            meter: meter.key,
            amount: input.amount,
            at: ctx.now,
            received_at: ctx.now,
            result: 'ACCEPTED',
            period_key: period.key,
            source: 'operator',
            machine_id: null,
            actor: ctx.actor.name,
            reason: input.reason,
            expires_at: rememberedUntil(period, ctx.now),
          },
        ],
        [{ licence_id: row.id, meter: meter.key, period_key: period.key, used: after, ids: 0 }],
      );
      if (input.amount > 0)
        await markThresholds(t, ctx, { id: row.id, lid, meters }, meter, period, after, async () => ({ licence: await licenceEventData(t, lid, ctx.now) }));
      await recordAudit(t, ctx, {
        action: 'usage.adjusted',
        subjectType: 'licence',
        subjectId: lid,
        lid,
        summary: `${input.amount < 0 ? 'Credited' : 'Debited'} ${Math.abs(input.amount)} ${meter.label}: ${input.reason}`,
        details: { meter: meter.key, amount: input.amount, reason: input.reason, periodKey: period.key, usedBefore: before, usedAfter: after },
      });
      const answer = await usageOf(t, ctx, row);
      await rememberAnswer(t, idem, ctx.now, 200, answer);
      return answer;
    }),
  ) as Promise<Awaited<ReturnType<typeof usageOf>> | Replay>;
}

/** `GET /dashboard/usage` (DESIGN.md 19): each meter products declare now, with its top consumers this period. */
export async function dashboardUsage(ctx: Ctx, query: { productId?: number | undefined; limit?: number | undefined }) {
  const limit = query.limit ?? 10;
  const out = [];
  for (const product of await meteredProducts(ctx.tenant, query.productId)) {
    for (const meter of metersOf(product.meters)) {
      const period = periodAt(meter.period, ctx.now, ctx.org.timezone);
      const rows = await topConsumers(ctx.tenant, product.id, meter.key, period.key, limit);
      const top = rows.map((r) => {
        const own: Meter = metersOf(r.meters).find((m) => m.key === meter.key) ?? meter;
        const { used, limit: l, overage, remaining } = balance(own, period, Number(r.used));
        return { lid: r.lid, licensee: r.licensee, used, limit: l, overage, remaining };
      });
      out.push({
        productId: product.id,
        productKey: product.product_key,
        key: meter.key,
        label: meter.label,
        period: meter.period,
        periodStart: period.shown.periodStart,
        resetsAt: period.shown.resetsAt,
        top,
      });
    }
  }
  return { meters: out };
}
