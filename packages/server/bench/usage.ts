/**
 * bench:usage — the usage endpoint (DESIGN.md 19) beside the check, in the same run. For SQLite
 * (and PostgreSQL when DATABASE_URL is set): one service, an ONLINE product with one unlimited
 * meter, LICENCES licences each bound to its machine by a check. Then (1) sustained: 16 clients
 * sending batches of 10 events (fresh ids) for SECONDS, events accepted per second, against 16
 * clients checking for as long (target: at least 5 times the checks per second); (2) paced at 200
 * requests a second on distinct licences: a one-event usage request's p50 against a check's
 * (target: within 2 times). Rate limits are off (LICENSOR_CHECK_RATE_ADDRESS,
 * LICENSOR_CHECK_RATE_PRODUCT and LICENSOR_USAGE_RATE_LICENCE = 0), so the runs measure the work,
 * not its refusals. LICENCES=n, SECONDS=n and BACKENDS=sqlite,postgres override.
 */
import { randomBytes } from 'node:crypto';
import { buildFingerprint } from '@licensor/protocol';
import { benchEnv, benchSession, fmt, percentile, startService } from './support.js';

const LICENCES = Number(process.env.LICENCES ?? 400);
const SECONDS = Number(process.env.SECONDS ?? 10);
const BACKENDS = (process.env.BACKENDS ?? (process.env.DATABASE_URL ? 'sqlite,postgres' : 'sqlite')).split(',') as Array<'sqlite' | 'postgres'>;
const CLIENTS = 16;
const BATCH = 10;
const PACE_PER_SECOND = 200;

const nonce = () => randomBytes(18).toString('base64url');
let ids = 0;
const eventIds = (n: number) => Array.from({ length: n }, () => ({ id: `b${process.pid}-${++ids}`, meter: 'calls', amount: 1 }));

async function run(backend: 'sqlite' | 'postgres') {
  const { env, dispose } = await benchEnv(backend);
  const service = await startService({ ...env, LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '0', LICENSOR_USAGE_RATE_LICENCE: '0' });
  try {
    const api = `${service.url}/o/default/api`;
    const admin = await benchSession(api);
    const post = async (path: string, body: unknown, headers: Record<string, string> = admin) => {
      const response = await fetch(`${api}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
      return response.json() as Promise<any>;
    };
    const product = await post('/products', { productKey: 'bench-usage', name: 'Bench usage', licenceType: 'ONLINE', meters: [{ key: 'calls', limit: null }] });
    const { checkToken } = await post(`/products/${product.id}/check-token`, {});
    const check = { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' };
    const machines: Array<{ license: string; fingerprint: string }> = [];
    for (let i = 0; i < LICENCES; i++) {
      const licence = await post('/licenses', { productId: product.id, licensee: `Bench ${i}` });
      const fingerprint = buildFingerprint({ machine: `m${i}`, host: 'h', mac: 'm', cpu: 'c', disk: 'd' });
      const machine = { license: licence.licenseString, fingerprint };
      await post(`/public/license/${product.checkId}/check`, { ...machine, nonce: nonce() }, check);
      machines.push(machine);
    }
    const send = (route: 'check' | 'usage', i: number, events?: unknown[]) =>
      fetch(`${api}/public/license/${product.checkId}/${route}`, {
        method: 'POST',
        headers: check,
        body: JSON.stringify({ ...machines[i % LICENCES]!, nonce: nonce(), ...(events ? { events } : {}) }),
      });

    /** CLIENTS loops for SECONDS; each request's worth (events accepted, or 1 per valid check). */
    const sustained = async (route: 'check' | 'usage') => {
      let done = 0;
      let next = 0;
      const until = performance.now() + SECONDS * 1000;
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (performance.now() < until) {
            const answer = (await (await send(route, next++, route === 'usage' ? eventIds(BATCH) : undefined)).json()) as any;
            done += route === 'usage' ? answer.events.filter((e: any) => e.result === 'ACCEPTED').length : answer.valid ? 1 : 0;
          }
        }),
      );
      return done / SECONDS;
    };
    /** PACE_PER_SECOND requests a second, each on the next licence, for SECONDS: their p50 in ms. */
    const paced = async (route: 'check' | 'usage') => {
      const times: number[] = [];
      const pending: Promise<void>[] = [];
      const start = performance.now();
      for (let i = 0; i < PACE_PER_SECOND * SECONDS; i++) {
        const due = start + (i * 1000) / PACE_PER_SECOND;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const sent = performance.now();
        pending.push(
          send(route, i, route === 'usage' ? eventIds(1) : undefined).then(async (r) => {
            await r.arrayBuffer();
            times.push(performance.now() - sent);
          }),
        );
      }
      await Promise.all(pending);
      return percentile(
        times.sort((a, b) => a - b),
        50,
      );
    };

    const checks = await sustained('check');
    const events = await sustained('usage');
    const checkP50 = await paced('check');
    const usageP50 = await paced('usage');
    console.log(
      `${backend}: ${events.toFixed(0)} events/s in batches of ${BATCH} vs ${checks.toFixed(0)} checks/s (${(events / checks).toFixed(1)}×, target ≥ 5×); paced ${PACE_PER_SECOND}/s p50: usage ${fmt(usageP50)} ms vs check ${fmt(checkP50)} ms (${(usageP50 / checkP50).toFixed(2)}×, target ≤ 2×)`,
    );
  } finally {
    await service.stop();
    await dispose();
  }
}

for (const backend of BACKENDS) await run(backend);
