/**
 * bench:usage — the usage endpoint (DESIGN.md 19) beside the check, in the same run. For SQLite
 * (and PostgreSQL when DATABASE_URL is set): one service, an ONLINE product with one unlimited
 * meter, LICENCES licences each bound to its machine by a check. Then (1) sustained: 16
 * connections sending batches of 10 events (fresh ids) for SECONDS, events accepted per second,
 * against 16 connections checking for as long (target: at least 5 times the checks per second);
 * (2) paced at 200 requests a second on distinct licences: a one-event usage request's p50 against
 * a check's (target: within 2 times). The load comes from bench:check's generator in a process of
 * its own (check-load.ts): sent from this process, the client's own work was the bound, the
 * service idle for 44% of the sustained runs. Rate limits are off (LICENSOR_CHECK_RATE_ADDRESS,
 * LICENSOR_CHECK_RATE_PRODUCT and LICENSOR_USAGE_RATE_LICENCE = 0), so the runs measure the work,
 * not its refusals. LICENCES=n, SECONDS=n and BACKENDS=sqlite,postgres override.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { buildFingerprint } from '@licensor/protocol';
import { benchEnv, benchSession, checkLoad, fmt, startService, treeCpuSeconds } from './support.js';

const LICENCES = Number(process.env.LICENCES ?? 400);
const SECONDS = Number(process.env.SECONDS ?? 10);
const BACKENDS = (process.env.BACKENDS ?? (process.env.DATABASE_URL ? 'sqlite,postgres' : 'sqlite')).split(',') as Array<'sqlite' | 'postgres'>;
const CLIENTS = 16;
const BATCH = 10;
const PACE_PER_SECOND = 200;
const METER = 'calls';

const nonce = () => randomBytes(18).toString('base64url');

/** The events the service answered ACCEPTED for a new id so far, from its own counter. */
async function accepted(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/licensor_usage_events_total\{result="ACCEPTED",duplicate="false"\} (\d+)/.exec(text)?.[1] ?? 0);
}

async function run(backend: 'sqlite' | 'postgres') {
  const { env, dispose } = await benchEnv(backend);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-bench-usage-'));
  const service = await startService({ ...env, LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '0', LICENSOR_USAGE_RATE_LICENCE: '0' });
  try {
    const api = `${service.url}/o/default/api`;
    const admin = await benchSession(api);
    const post = async (path: string, body: unknown, headers: Record<string, string> = admin) => {
      const response = await fetch(`${api}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
      return response.json() as Promise<any>;
    };
    const product = await post('/products', { productKey: 'bench-usage', name: 'Bench usage', licenceType: 'ONLINE', meters: [{ key: METER, limit: null }] });
    const { checkToken } = await post(`/products/${product.id}/check-token`, {});
    const check = { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' };
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i < LICENCES; i++) {
      const licence = await post('/licenses', { productId: product.id, licensee: `Bench ${i}` });
      const fingerprint = buildFingerprint({ machine: `m${i}`, host: 'h', mac: 'm', cpu: 'c', disk: 'd' });
      await post(`/public/license/${product.checkId}/check`, { license: licence.licenseString, fingerprint, nonce: nonce() }, check);
      pairs.push([licence.licenseString, fingerprint]);
    }
    const bodiesFile = path.join(workDir, 'pairs.json');
    fs.writeFileSync(bodiesFile, JSON.stringify(pairs));
    const job = (route: 'check' | 'usage', events: number) => ({
      url: `${api}/public/license/${product.checkId}/${route}`,
      token: checkToken as string,
      bodiesFile,
      connections: CLIENTS,
      seconds: SECONDS,
      ...(route === 'usage' ? { usage: { meter: METER, events } } : {}),
    });
    const clean = (what: string, result: Awaited<ReturnType<typeof checkLoad>>) => {
      if (result.non2xx || result.errors) throw new Error(`${what}: ${result.non2xx} non-2xx, ${result.errors} errors; first: ${result.firstFailure}`);
      return result;
    };

    /** A sustained run, and the service's CPU milliseconds per request over it. */
    const sustained = async (what: string, route: 'check' | 'usage', events: number) => {
      const cpu = treeCpuSeconds(service.child.pid!);
      const { rps } = clean(what, await checkLoad(job(route, events)));
      return { rps, cpuMs: ((treeCpuSeconds(service.child.pid!) - cpu) * 1000) / (rps * SECONDS) };
    };
    const checks = await sustained('sustained checks', 'check', 0);
    const before = await accepted(service.url);
    const usage = await sustained('sustained usage', 'usage', BATCH);
    const events = ((await accepted(service.url)) - before) / SECONDS;
    const checkP50 = clean('paced checks', await checkLoad({ ...job('check', 0), rate: PACE_PER_SECOND })).p50;
    const usageP50 = clean('paced usage', await checkLoad({ ...job('usage', 1), rate: PACE_PER_SECOND })).p50;
    console.log(
      `${backend}: ${events.toFixed(0)} events/s (${usage.rps.toFixed(0)} requests/s) in batches of ${BATCH} vs ${checks.rps.toFixed(0)} checks/s (${(events / checks.rps).toFixed(1)}×, target ≥ 5×); ` +
        `service CPU per request: usage ${usage.cpuMs.toFixed(2)} ms vs check ${checks.cpuMs.toFixed(2)} ms (${(usage.cpuMs / checks.cpuMs).toFixed(2)}×); ` +
        `paced ${PACE_PER_SECOND}/s p50: usage ${fmt(usageP50)} ms vs check ${fmt(checkP50)} ms (${(usageP50 / checkP50).toFixed(2)}×, target ≤ 2×)`,
    );
  } finally {
    await service.stop();
    await dispose();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

for (const backend of BACKENDS) await run(backend);
