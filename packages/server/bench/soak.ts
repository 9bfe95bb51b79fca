/**
 * `npm run soak` (DESIGN.md 17): the service with two workers on a PostgreSQL cluster and a
 * redis-server of its own (bench/faults.ts), under a mixed load at half the capacity it measures
 * first, for SOAK_MINUTES (default 30) while faults happen on a schedule: a worker killed by pid
 * every minute, PostgreSQL restarted with `-m immediate` once, Redis stopped for 15 s once. Then
 * every write answered 2xx is read back. It reports lost writes, seats beyond maxMachines, stale
 * verdicts, bad receipts, errors outside the fault windows and each fault's time to heal, and
 * exits 1 when any of the first four is above 0, errors outside the windows reach 0.1%, or a
 * fault takes more than 5 s to heal (2 when it cannot run here). Loopback only.
 */
import { createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { buildFingerprint, fpDigest, verifyReceipt } from '@licensor/protocol';
import { Redis } from 'ioredis';
import { faultToolsMissing, Postgres, RedisServer, request, seed, Service, serviceEnv, sleep, until, type Answer, type Seeded } from './faults.js';

const minutes = Number(process.env.SOAK_MINUTES ?? '30');
if (!Number.isInteger(minutes) || minutes < 2 || minutes > 1440) {
  process.stderr.write('soak: SOAK_MINUTES must be a whole number of minutes from 2 to 1440\n');
  process.exit(2);
}
const missing = faultToolsMissing();
if (missing) {
  process.stderr.write(`soak: cannot run here: ${missing}\n`);
  process.exit(2);
}

const WINDOW_TAIL_MS = 5_000;
const HEAL_LIMIT_MS = 5_000;
const MAX_IN_FLIGHT = 256;
const say = (line: string) => process.stdout.write(`${line}\n`);

// ---- the world, and its teardown by pid whatever happens ----------------------------------------
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-soak-'));
let postgres: Postgres | null = null;
let redis: RedisServer | null = null;
let service: Service | null = null;
let tornDown = false;
async function tearDown(): Promise<void> {
  if (tornDown) return;
  tornDown = true;
  if (service && (await Promise.race([service.stop(), sleep(20_000).then(() => 'late')])) === 'late') service.kill();
  await redis?.stop();
  await postgres?.dispose();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void tearDown().then(() => process.exit(130)));
}
// A run that fails before its teardown (an error thrown anywhere) still stops what it started.
process.on('exit', () => {
  if (tornDown) return;
  service?.kill();
  redis?.kill();
  postgres?.kill();
});

postgres = await Postgres.create();
redis = await RedisServer.create();
const prefix = `soak:${randomBytes(4).toString('hex')}:`;
const env = {
  ...serviceEnv(postgres, redis, dataDir),
  LICENSOR_WORKERS: '2',
  LICENSOR_REDIS_PREFIX: prefix,
  // The load comes from one address: limits high enough never to refuse it, so that every check
  // still counts in Redis (or, while it is down, in the primary).
  LICENSOR_CHECK_RATE_ADDRESS: '100000000',
  LICENSOR_CHECK_RATE_PRODUCT: '100000000',
};
service = await Service.start(env);
const seeded: Seeded = await seed(service.url);
const publicKey: KeyObject = createPublicKey(seeded.product.publicKeyPem);
say(`soak: ${minutes} min, PostgreSQL on 127.0.0.1:${postgres.port}, Redis on 127.0.0.1:${redis.port}, service ${service.url} (2 workers)`);

// ---- requests, each recorded --------------------------------------------------------------------
type Kind = 'check' | 'issue' | 'renew' | 'revoke' | 'reinstate' | 'release' | 'activate' | 'read';
interface Sent {
  kind: Kind;
  sentAt: number;
  answeredAt: number;
  status: number | null;
  error: string | null;
}
const EXPECTED: Record<Kind, number> = { check: 200, issue: 201, renew: 200, revoke: 200, reinstate: 200, release: 200, activate: 200, read: 200 };
const agent = new http.Agent({ keepAlive: true, maxSockets: 48 });
const api = `${service.url}/o/default/api`;
const auth = { authorization: `Bearer ${seeded.token}` };
const checkUrl = `${api}/public/license/${seeded.product.checkId}/check`;
const checkAuth = { authorization: `Bearer ${seeded.product.checkToken}` };
let log: Sent[] = [];
let inFlight = 0;

async function call(kind: Kind, url: string, method: string, body?: unknown, headers = auth): Promise<Answer | null> {
  const entry: Sent = { kind, sentAt: Date.now(), answeredAt: 0, status: null, error: null };
  log.push(entry);
  inFlight++;
  try {
    const answer = await request(url, method, body, headers, agent, 10_000);
    entry.status = answer.status;
    return answer;
  } catch (err) {
    entry.error = (err as Error).message;
    return null;
  } finally {
    entry.answeredAt = Date.now();
    inFlight--;
  }
}
const ok = (kind: Kind, answer: Answer | null): answer is Answer => answer?.status === EXPECTED[kind];

let machineSeq = 0;
const newMachine = () => {
  const label = `soak-${++machineSeq}`;
  return buildFingerprint({ machine: label, host: label, mac: label, cpu: label, disk: label });
};

// ---- what the run must find again ---------------------------------------------------------------
interface Tracked {
  lid: string;
  licenseString: string;
  maxMachines: number;
  machine: string;
  /** The highest term number answered by a renewal. */
  versionNo: number;
  /** Revoked as last answered; null while an unanswered revoke or reinstate leaves it unknown. */
  revoked: boolean | null;
  /** A revocation is answered and no reinstatement sent since: checks sent now must say REVOKED. */
  mustBeRevoked: boolean;
  /** Reinstatements sent: a check in flight across one may rightly see the licence ACTIVE. */
  reinstatements: number;
  busy: boolean;
  /** Machines a check answered valid for, and machines the operator released (by id). */
  bound: Set<string>;
  released: Set<number>;
  /** Releases sent that got no answer or a 503: committed or not, which a fault leaves unknown. */
  unsure: Set<number>;
}
const tracked: Tracked[] = [];
const counters = { staleVerdicts: 0, badReceipts: 0, receiptsVerified: 0, dropped: 0 };

async function issue(maxMachines: number): Promise<Tracked | null> {
  const answer = await call('issue', `${api}/licenses`, 'POST', { productId: seeded.product.id, licensee: 'Soak Ltd', maxMachines });
  if (!ok('issue', answer)) return null;
  const licence: Tracked = {
    lid: answer.data.lid,
    licenseString: answer.data.licenseString,
    maxMachines,
    machine: newMachine(),
    versionNo: answer.data.versionNo,
    revoked: false,
    mustBeRevoked: false,
    reinstatements: 0,
    busy: false,
    bound: new Set(),
    released: new Set(),
    unsure: new Set(),
  };
  tracked.push(licence);
  return licence;
}

/** A check; a sample of receipts is verified, and every answer is held to the revocations answered before it was sent. */
async function check(licence: Tracked, machine = licence.machine, kind: Kind = 'check', verify = false): Promise<Answer | null> {
  const [mustBeRevoked, reinstatements] = [licence.mustBeRevoked, licence.reinstatements];
  const nonce = randomBytes(18).toString('base64url');
  const answer = await call(kind, checkUrl, 'POST', { license: licence.licenseString, fingerprint: machine, nonce }, checkAuth);
  if (!ok(kind, answer)) return answer;
  const a = answer.data;
  if (mustBeRevoked && licence.reinstatements === reinstatements && (a.status === 'ACTIVE' || a.status === 'GRACE')) counters.staleVerdicts++;
  if (a.valid && a.boundAt) licence.bound.add(machine);
  if (verify) {
    counters.receiptsVerified++;
    const fields = { lid: a.lid, status: a.status ?? '', nonce: a.nonce, checkedAt: a.checkedAt, boundAt: a.boundAt ?? '', fpDigest: fpDigest(machine) };
    if (a.nonce !== nonce || !verifyReceipt(fields, a.receipt, [publicKey])) counters.badReceipts++;
  }
  return answer;
}

// ---- the mix ------------------------------------------------------------------------------------
const pick = <T>(items: T[]): T | undefined => items[Math.floor(Math.random() * items.length)];
const idle = (list: Tracked[]) => list.filter((l) => !l.busy);
let checked: Tracked[] = [];
let toggled: Tracked[] = [];
let releasable: Tracked[] = [];

/** One licence's operation at a time, so what was answered last is what must be read back. */
async function exclusive(licence: Tracked | undefined, work: (licence: Tracked) => Promise<void>): Promise<void> {
  if (!licence) return;
  licence.busy = true;
  try {
    await work(licence);
  } finally {
    licence.busy = false;
  }
}

const OPERATIONS: Array<[number, () => Promise<unknown>]> = [
  // Checks, most of the traffic: one in ten receipts verified; a fifth on licences being revoked and reinstated.
  [70, () => check(pick(checked)!, undefined, 'check', Math.random() < 0.1)],
  [16, () => check(pick(toggled)!, undefined, 'check', true)],
  [4, () => issue(3)],
  [
    3,
    () =>
      exclusive(pick(idle(checked)), async (l) => {
        const answer = await call('renew', `${api}/licenses/${l.lid}/renew`, 'POST', {});
        if (ok('renew', answer)) l.versionNo = Math.max(l.versionNo, answer.data.versionNo);
        // The renewed term is the one the application now presents.
        if (ok('renew', answer)) l.licenseString = answer.data.licenseString;
      }),
  ],
  [
    4,
    () =>
      exclusive(pick(idle(toggled)), async (l) => {
        if (l.revoked === null) {
          // The last revoke or reinstate went unanswered (a fault): it may or may not have happened.
          const read = await call('read', `${api}/licenses/${l.lid}`, 'GET');
          if (ok('read', read)) l.revoked = read.data.revoked;
        } else if (l.revoked === false) {
          const answer = await call('revoke', `${api}/licenses/${l.lid}/revoke`, 'POST', { reason: 'soak' });
          l.revoked = ok('revoke', answer) ? true : null;
          l.mustBeRevoked = l.revoked === true;
        } else {
          // From the moment a reinstatement is sent, a check may see the licence ACTIVE again.
          l.mustBeRevoked = false;
          l.reinstatements++;
          const answer = await call('reinstate', `${api}/licenses/${l.lid}/reinstate`, 'POST', {});
          l.revoked = ok('reinstate', answer) ? false : null;
        }
      }),
  ],
  [
    2,
    () =>
      exclusive(pick(idle(releasable)), async (l) => {
        // A new machine takes the free seat; the operator then releases it.
        const machine = newMachine();
        const bound = await check(l, machine);
        if (!bound?.data?.boundAt) return;
        const machines = await call('read', `${api}/licenses/${l.lid}/machines`, 'GET');
        const seat = ok('read', machines)
          ? (machines.data as Array<{ id: number; live: boolean; boundAt: string }>).find((m) => m.live && m.boundAt === bound.data.boundAt)
          : undefined;
        if (!seat) return;
        const released = await call('release', `${api}/licenses/${l.lid}/release-binding`, 'POST', { machineId: seat.id });
        const status = released?.status;
        if (ok('release', released)) l.released.add(seat.id);
        else if (status === undefined || status === 503) l.unsure.add(seat.id);
      }),
  ],
  // New machines activating on one licence at once: never more seats than it has.
  [
    1,
    async () => {
      const l = await issue(2);
      if (l) await Promise.all(Array.from({ length: 5 }, () => check(l, newMachine(), 'activate')));
    },
  ],
];
const totalWeight = OPERATIONS.reduce((sum, [weight]) => sum + weight, 0);
function operation(): () => Promise<unknown> {
  let r = Math.random() * totalWeight;
  for (const [weight, run] of OPERATIONS) if ((r -= weight) < 0) return run;
  return OPERATIONS[0]![1];
}

/** Sends `rate` operations a second, evenly, until `endAt`; never more than MAX_IN_FLIGHT requests open. */
async function drive(rate: number, endAt: number): Promise<void> {
  const start = Date.now();
  let sent = 0;
  const running = new Set<Promise<unknown>>();
  while (Date.now() < endAt) {
    const due = ((Date.now() - start) * rate) / 1000;
    while (sent < due) {
      sent++;
      if (inFlight >= MAX_IN_FLIGHT) {
        counters.dropped++;
        continue;
      }
      const p = operation()().catch((err) => say(`soak: load error: ${(err as Error).message}`));
      running.add(p);
      void p.finally(() => running.delete(p));
    }
    await sleep(5);
  }
  await Promise.all(running);
}

// ---- set-up and capacity ------------------------------------------------------------------------
async function licences(n: number, maxMachines: number): Promise<Tracked[]> {
  const made: Tracked[] = [];
  for (let i = 0; i < n; i += 10) {
    const batch = await Promise.all(Array.from({ length: Math.min(10, n - i) }, () => issue(maxMachines)));
    for (const l of batch) if (l) made.push(l);
  }
  // Each bound to its machine by a first check.
  await Promise.all(made.map((l) => check(l)));
  return made;
}
checked = await licences(200, 1);
toggled = await licences(20, 1);
releasable = await licences(20, 2);

// Capacity: the same mix, each of 32 loops starting its next operation when the last is answered, for 10 s.
log = [];
const measureEnd = Date.now() + 10_000;
let measured = 0;
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (Date.now() < measureEnd) {
      await operation()();
      measured++;
    }
  }),
);
const capacity = measured / 10;
const capacityRequests = log.length / 10;
const rate = Math.max(5, Math.round(capacity / 2));
say(`soak: capacity ${capacity.toFixed(0)} operations/s (${capacityRequests.toFixed(0)} requests/s); load ${rate} operations/s for ${minutes} min`);
log = [];

// ---- faults, on a schedule ----------------------------------------------------------------------
interface Fault {
  name: string;
  start: number;
  end: number;
  /** What a first 2xx after the end must show; heal is the time from the end to it. */
  healedAt: number | null;
}
const faults: Fault[] = [];
const t0 = Date.now();
const endAt = t0 + minutes * 60_000;
const at = (seconds: number) => sleep(Math.max(0, t0 + seconds * 1000 - Date.now()));
const redisKeys = new Redis(redis.url(), { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 200 });
redisKeys.on('error', () => {});
await redisKeys.connect();

/** When the first check (a path through the database, and the rate limits) sent at or after `from` was answered 200. */
function firstCheck(from: number): number | null {
  let first: number | null = null;
  // From the newest back: the log is in the order requests were sent.
  for (let i = log.length - 1; i >= 0 && log[i]!.sentAt >= from; i--) {
    const e = log[i]!;
    if (e.kind === 'check' && e.status === 200) first = first === null ? e.answeredAt : Math.min(first, e.answeredAt);
  }
  return first;
}

async function killWorker(k: number): Promise<void> {
  await at(60 * k + 10);
  const victim = service!.workers()[k % 2];
  if (!victim) return;
  const fault: Fault = { name: `worker ${victim} killed`, start: Date.now(), end: 0, healedAt: null };
  faults.push(fault);
  process.kill(victim, 'SIGKILL');
  // Over: once two workers serve again, the victim not among them (the primary promotes its
  // standby, which has loaded the service already, and starts a new standby).
  await until(
    async () => {
      const serving = service!.workers();
      return serving.length === 2 && !serving.includes(victim);
    },
    'the replacement worker',
    60_000,
  );
  fault.end = Date.now();
  fault.healedAt = await until(() => firstCheck(fault.end), 'a check after the replacement', 60_000);
}

async function restartPostgres(): Promise<void> {
  await at(60 * Math.floor(minutes / 2) - 25);
  const fault: Fault = { name: 'PostgreSQL restarted (-m immediate)', start: Date.now(), end: 0, healedAt: null };
  faults.push(fault);
  await postgres!.stop('immediate');
  await postgres!.start();
  fault.end = Date.now();
  fault.healedAt = await until(() => firstCheck(fault.end), 'a check after PostgreSQL returned', 60_000);
}

async function stopRedis(): Promise<void> {
  await at(60 * Math.floor(minutes / 2) + 25);
  const fault: Fault = { name: 'Redis stopped for 15 s', start: Date.now(), end: 0, healedAt: null };
  faults.push(fault);
  await redis!.stop();
  await sleep(15_000);
  await redis!.start();
  fault.end = Date.now();
  // Healed when the checks are counted in Redis again (it came back empty).
  fault.healedAt = await until(
    async () => ((await redisKeys.keys(`${prefix}address:*`).catch(() => [])).length > 0 ? Date.now() : null),
    'counts in Redis again',
    60_000,
  );
}

await Promise.all([drive(rate, endAt), ...Array.from({ length: minutes }, (_, k) => killWorker(k)), restartPostgres(), stopRedis()]);
redisKeys.disconnect();
const load = log;
log = [];
say(`soak: load done (${load.length} requests); reading back every write answered 2xx`);

// ---- read-back ----------------------------------------------------------------------------------
let lostWrites = 0;
let seatsBeyond = 0;
const lost = (what: string) => {
  lostWrites++;
  if (lostWrites <= 10) say(`soak: lost: ${what}`);
};
const queue = [...tracked];
await Promise.all(
  Array.from({ length: 8 }, async () => {
    for (let l = queue.shift(); l; l = queue.shift()) {
      const read = async (suffix: string) => {
        for (let attempt = 0; ; attempt++) {
          const answer = await request(`${api}/licenses/${l.lid}${suffix}`, 'GET', undefined, auth, agent).catch(() => null);
          if (answer?.status !== 503 && answer !== null) return answer;
          if (attempt > 20) throw new Error(`read-back of ${l.lid} keeps failing`);
          await sleep(500);
        }
      };
      const licence = await read('');
      if (licence.status === 404) {
        lost(`licence ${l.lid} issued`);
        continue;
      }
      if (licence.data.versionNo < l.versionNo) lost(`licence ${l.lid} renewed to term ${l.versionNo}`);
      if (l.revoked !== null && licence.data.revoked !== l.revoked) lost(`licence ${l.lid} ${l.revoked ? 'revoked' : 'reinstated'}`);
      const machines = (await read('/machines')).data as Array<{ id: number; live: boolean; releasedAt: string | null }>;
      const live = machines.filter((m) => m.live).length;
      if (live > l.maxMachines) seatsBeyond += live - l.maxMachines;
      for (const id of l.released) if (!machines.find((m) => m.id === id)?.releasedAt) lost(`machine ${id} of ${l.lid} released`);
      // Seats a check bound and nobody released are still held (a release a fault left unanswered may have been made).
      const held = l.bound.size - l.released.size - [...l.unsure].filter((id) => machines.find((m) => m.id === id)?.releasedAt).length;
      if (live < held) lost(`${held - live} seat(s) of ${l.lid} bound`);
    }
  }),
);

// ---- the report ---------------------------------------------------------------------------------
const failed = (e: Sent) => e.error !== null || e.status !== EXPECTED[e.kind];
const inWindow = (e: Sent) => faults.some((f) => e.sentAt <= (f.end || endAt) + WINDOW_TAIL_MS && e.answeredAt >= f.start);
const outside = load.filter((e) => !inWindow(e));
const errorsOutside = outside.filter(failed);
const errorsInside = load.filter((e) => inWindow(e) && failed(e));
const errorRate = outside.length ? errorsOutside.length / outside.length : 0;
const elapsed = (endAt - t0) / 1000;
const heals = faults.map((f) => ({ ...f, heal: f.healedAt === null ? Infinity : Math.max(0, f.healedAt - f.end) }));
const describe = (list: Sent[]) => {
  const reasons = new Map<string, number>();
  for (const e of list) reasons.set(`${e.kind} ${e.error ?? e.status}`, (reasons.get(`${e.kind} ${e.error ?? e.status}`) ?? 0) + 1);
  return [...reasons].map(([reason, n]) => `${reason} ×${n}`).join(', ') || 'none';
};

say('');
say(
  `requests                 ${load.length} in ${elapsed.toFixed(0)} s (${(load.length / elapsed).toFixed(1)}/s; capacity measured ${capacityRequests.toFixed(0)}/s)`,
);
say(
  `  by kind                ${Object.keys(EXPECTED)
    .map((k) => `${k} ${load.filter((e) => e.kind === k).length}`)
    .join(', ')}`,
);
say(`  not sent (${MAX_IN_FLIGHT} open)    ${counters.dropped}`);
say(`lost writes              ${lostWrites} (of ${tracked.length} licences read back)`);
say(`seats beyond maxMachines ${seatsBeyond}`);
say(`stale verdicts           ${counters.staleVerdicts}`);
say(`bad receipts             ${counters.badReceipts} (of ${counters.receiptsVerified} verified)`);
say(`errors outside faults    ${errorsOutside.length} of ${outside.length} (${(errorRate * 100).toFixed(3)}%): ${describe(errorsOutside)}`);
say(`errors inside faults     ${errorsInside.length}: ${describe(errorsInside)}`);
for (const f of heals) {
  say(
    `fault at ${((f.start - t0) / 1000).toFixed(0).padStart(5)} s  ${f.name}: over after ${f.end ? f.end - f.start : '∞'} ms, healed ${f.heal === Infinity ? 'never' : `${f.heal} ms`} later`,
  );
}

const problems = [
  lostWrites > 0 && 'lost writes',
  seatsBeyond > 0 && 'seats beyond maxMachines',
  counters.staleVerdicts > 0 && 'stale verdicts',
  counters.badReceipts > 0 && 'bad receipts',
  errorRate >= 0.001 && 'errors outside the fault windows at 0.1% or more',
  heals.some((f) => f.heal > HEAL_LIMIT_MS) && 'a fault took more than 5 s to heal',
].filter(Boolean);
say(problems.length ? `soak: FAILED: ${problems.join('; ')}` : 'soak: passed');
await tearDown();
agent.destroy();
process.exit(problems.length ? 1 : 0);
