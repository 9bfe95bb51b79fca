// Every SDK's driver (DESIGN.md 16, docs/protocol.md) against one real service (SQLite), through
// a man-in-the-middle proxy of the test's own per driver: the same scenarios for each, answers
// compared field by field across drivers and against the values expected. (Each SDK's README
// quick start runs against a service of its own in that SDK's test file.)
//
// Drivers: TypeScript always; sdks/<lang>/driver for java, python and go when it exists and its
// toolchain is present, else skipped with the reason (failed with LICENSOR_REQUIRE_SDKS=1).
// LICENSOR_DRIVERS=lang=/abs/path,... runs other drivers.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint, fpDigest } from '@licensor/protocol';
import { loadVectors } from '../packages/protocol/test-vectors/index.js';
import { collectFingerprint } from '@licensor/sdk';
import { startHarness, type Harness } from '../packages/server/test/harness.js';
import { found, missing, REQUIRE, startDriver, startProxy, type Answer, type Mode } from './drivers.js';

const FINGERPRINT = buildFingerprint({ machine: 'drv-m', host: 'drv-h', mac: 'drv-a', cpu: 'drv-c', disk: 'drv-d' });
const HOUR = 3_600_000;

let h: Harness;
let serviceUrl: string;
interface Product {
  id: number;
  productKey: string;
  publicKeyPem: string;
}
let product: Product;
let otherProduct: Product;
let otherLicence: string;
let credential: { checkId: string; checkToken: string };

interface Lane {
  lang: string;
  driver: ReturnType<typeof startDriver>;
  proxy: Awaited<ReturnType<typeof startProxy>>;
  stateDir: string;
  lid: string;
  /** The first term, and the renewed one once there is one. */
  t1: string;
  t2: string;
  iat1: number;
  iat2: number;
}
const lanes: Lane[] = [];
const temporary: string[] = [];

async function call(method: 'POST' | 'GET' | 'PUT', url: string, body?: unknown) {
  const response = await h.admin(method, url, body);
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
  return response.data;
}

const iatOf = (licence: string): number => JSON.parse(Buffer.from(licence.split('.')[0]!, 'base64url').toString()).iat;

function configure(lane: Lane, licence: string) {
  return {
    op: 'configure',
    baseUrl: lane.proxy.url,
    slug: h.slug,
    productKey: product.productKey,
    checkId: credential.checkId,
    checkToken: credential.checkToken,
    // A key history: the other product's key verifies its own licences, which must then be WRONG_PRODUCT.
    publicKeys: [product.publicKeyPem, otherProduct.publicKeyPem],
    licence,
    stateDir: lane.stateDir,
    timeoutMs: 10_000,
  };
}

const stateFile = (lane: Lane) => path.join(lane.stateDir, h.slug, product.productKey, `${lane.lid}.json`);
const readState = (lane: Lane) => JSON.parse(readFileSync(stateFile(lane), 'utf8'));
const setMode = (mode: Mode) => {
  for (const lane of lanes) lane.proxy.mode = mode;
};

/** Sends each lane its request at once; answers in lane order. */
function everyone(request: (lane: Lane) => Record<string, unknown>): Promise<Answer[]> {
  return Promise.all(lanes.map((lane) => lane.driver.send(request(lane))));
}

/**
 * Every driver answered alike and as expected: its own licence strings and lid aside (unless the
 * request named the same string for all), error messages aside (each SDK's own words), and
 * `ageSeconds` within a few seconds of the TypeScript driver's. Answers the TypeScript driver's.
 */
function agree(answers: Answer[], expected: unknown, options: { label?: string; sameStrings?: boolean } = {}): Answer {
  const ages = answers.map((answer) => (answer.ok && answer.result && 'ageSeconds' in answer.result ? answer.result.ageSeconds : undefined));
  const normalised = answers.map((answer, i) => {
    const lane = lanes[i]!;
    let text = JSON.stringify(answer);
    if (!options.sameStrings) {
      for (const [value, name] of [
        [lane.t2, '<t2>'],
        [lane.t1, '<t1>'],
        [lane.lid, '<lid>'],
      ] as const)
        if (value) text = text.split(value).join(name);
    }
    const parsed = JSON.parse(text);
    if (parsed.ok && typeof parsed.result?.ageSeconds === 'number') parsed.result.ageSeconds = '<age>';
    // Messages are each SDK's own words.
    if (!parsed.ok) delete parsed.error.message;
    return { lang: lane.lang, answer: parsed };
  });
  for (const entry of normalised) expect(entry, `${entry.lang}: ${options.label ?? 'the expected answer'}`).toEqual({ lang: entry.lang, answer: expected });
  for (const [i, age] of ages.entries()) {
    if (age === null || age === undefined) expect(age, `${lanes[i]!.lang} ageSeconds`).toBe(ages[0]);
    else expect(Math.abs(age - ages[0]), `${lanes[i]!.lang} ageSeconds ${age} against ${ages[0]}`).toBeLessThan(10);
  }
  return answers[0]!;
}

const ok = (result: unknown) => ({ ok: true, result });
const failed = (code: string, status?: number) => ({ ok: false, error: { code, ...(status === undefined ? {} : { status }) } });
const checked = (fields: Record<string, unknown>) =>
  ok({
    state: 'VALID',
    reasons: [],
    fresh: true,
    clockRollback: false,
    ageSeconds: '<age>',
    noAnswer: null,
    renewed: false,
    airGapped: false,
    leaseEndsAt: null,
    trial: null,
    ...fields,
  });

beforeAll(async () => {
  // The service's public URL is its own address, so the feed and file URLs it writes work (the
  // proxies rewrite them to theirs): a free port taken first, then the service listens on it.
  const free = net.createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const port = (free.address() as AddressInfo).port;
  await new Promise((resolve) => free.close(resolve));
  serviceUrl = `http://127.0.0.1:${port}`;
  h = await startHarness({ LICENSOR_PUBLIC_URL: serviceUrl });
  await h.app.listen({ port, host: '127.0.0.1' });
  const create = (productKey: string) =>
    call('POST', '/products', {
      productKey,
      name: productKey,
      algorithm: 'ED25519',
      licenceType: 'ONLINE',
      allowedLicenceTypes: ['ONLINE'],
      licenceFetchEnabled: true,
      airGapActivation: true,
    });
  product = await create('drivers-app');
  otherProduct = await create('drivers-other');
  credential = await call('POST', `/products/${product.id}/check-token`);
  otherLicence = (await call('POST', '/licenses', { productId: otherProduct.id, licensee: 'Other Customer', validityMonths: 12 })).licenseString;

  for (const { lang, driver } of found) {
    const issued = await call('POST', '/licenses', { productId: product.id, licensee: 'Driver Customer', validityMonths: 12 });
    const stateDir = mkdtempSync(path.join(os.tmpdir(), `licensor-driver-${lang}-`));
    temporary.push(stateDir);
    lanes.push({
      lang,
      driver: startDriver(lang, driver),
      proxy: await startProxy(serviceUrl, credential.checkId),
      stateDir,
      lid: issued.lid,
      t1: issued.licenseString,
      t2: '',
      iat1: iatOf(issued.licenseString),
      iat2: 0,
    });
  }
  // Started together, so the drivers that build something build at once.
  agree(await everyone((lane) => configure(lane, lane.t1)), ok({}));
  agree(await everyone(() => ({ op: 'setFingerprint', fingerprint: FINGERPRINT })), ok({}));
}, 600_000);

afterAll(async () => {
  for (const lane of lanes) {
    lane.driver.stop();
    lane.proxy.close();
  }
  await h?.close();
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

for (const { lang, reason } of missing) {
  if (REQUIRE) it(`has the ${lang} driver (LICENSOR_REQUIRE_SDKS=1)`, () => expect.fail(reason));
  else {
    console.warn(`drivers.test.ts: the ${lang} driver is skipped: ${reason}`);
    it.skip(`${lang} driver: ${reason}`, () => {});
  }
}

describe(`the drivers (${found.map((f) => f.lang).join(', ')}) against one service`, () => {
  it("verify: the configured licence, tampered strings and another product's licence", async () => {
    const mine = await everyone(() => ({ op: 'verify' }));
    for (const [i, answer] of mine.entries()) {
      expect(answer, lanes[i]!.lang).toMatchObject(
        ok({
          valid: true,
          reasons: [],
          claims: { v: 3, lid: lanes[i]!.lid, prd: product.productKey, org: h.slug, typ: 'ONLINE', lic: 'Driver Customer', mm: 1 },
        }),
      );
    }

    const licence = lanes[0]!.t1;
    const [payload, signature] = licence.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const signatureBytes = Buffer.from(signature, 'base64url');
    signatureBytes[5]! ^= 1;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // The last character of a 64-byte signature carries four unused bits: set one.
    const strayBits = signature.slice(0, -1) + alphabet[alphabet.indexOf(signature.at(-1)!) ^ 1];
    const cases: Array<[string, string, unknown]> = [
      ['a changed signature', `${payload}.${signatureBytes.toString('base64url')}`, ['BAD_SIGNATURE']],
      ['a changed licensee', `${Buffer.from(JSON.stringify({ ...claims, lic: 'Mallory' })).toString('base64url')}.${signature}`, ['BAD_SIGNATURE']],
      ['padding', `${payload}=.${signature}`, ['MALFORMED']],
      ['stray trailing bits', `${payload}.${strayBits}`, ['MALFORMED']],
      ['three parts', `${licence}.x`, ['MALFORMED']],
      ['not a licence', 'hello', ['MALFORMED']],
      // verify is strict: a driver hands the string over as it is (DESIGN.md 16), the empty one included.
      ['a trailing newline', `${licence}\n`, ['MALFORMED']],
      ['the shared vector "empty string"', loadVectors().algorithms[0]!.tampered.find((t) => t.name === 'empty string')!.licence, ['MALFORMED']],
    ];
    for (const [label, text, reasons] of cases) {
      agree(await everyone(() => ({ op: 'verify', licence: text })), ok({ valid: false, reasons, claims: null }), { label, sameStrings: true });
    }
    const other = agree(
      await everyone(() => ({ op: 'verify', licence: otherLicence })),
      ok({ valid: false, reasons: ['WRONG_PRODUCT'], claims: expect.any(Object) }),
      {
        sameStrings: true,
      },
    );
    expect(other.ok && other.result.claims).toMatchObject({ prd: 'drivers-other', org: h.slug, lic: 'Other Customer' });
    // The same string verified by every driver gives the same claims, key for key.
    agree(await everyone(() => ({ op: 'verify', licence })), ok({ valid: true, reasons: [], claims }), { sameStrings: true });
  });

  it('check: a genuine answer is VALID and fresh, kept in <stateDir>/<slug>/<productKey>/<lid>.json', async () => {
    setMode('pass');
    agree(await everyone(() => ({ op: 'check' })), checked({}));
    for (const lane of lanes) {
      const file = stateFile(lane);
      expect(statSync(file).mode & 0o777, lane.lang).toBe(0o600);
      expect(statSync(path.dirname(file)).mode & 0o777, lane.lang).toBe(0o700);
      expect(readdirSync(path.dirname(file)), `${lane.lang}: no lock or temporary file left`).toEqual([`${lane.lid}.json`]);
      const state = readState(lane);
      expect(Object.keys(state).sort(), lane.lang).toEqual(['answer', 'format', 'lid', 'newestIat', 'offsetMs']);
      expect(Object.keys(state.answer).sort(), lane.lang).toEqual([
        'boundAt',
        'checkedAt',
        'converted',
        'fpDigest',
        'leaseEndsAt',
        'lid',
        'nonce',
        'receipt',
        'renewed',
        'status',
        'tag',
      ]);
      expect(state, lane.lang).toMatchObject({
        format: 1,
        lid: lane.lid,
        newestIat: lane.iat1,
        answer: { tag: 'SVCR1', lid: lane.lid, status: 'ACTIVE', fpDigest: fpDigest(FINGERPRINT), leaseEndsAt: '', renewed: false, converted: false },
      });
      expect(Number.isSafeInteger(state.offsetMs) && Math.abs(state.offsetMs) < 10_000, `${lane.lang} offsetMs ${state.offsetMs}`).toBe(true);
      expect(state.answer.boundAt, lane.lang).not.toBe('');
    }
  });

  it('service down: no answer (NETWORK), the state rests on the kept answer', async () => {
    setMode('down');
    agree(await everyone(() => ({ op: 'check' })), checked({ fresh: false, noAnswer: { code: 'NETWORK' } }));
  });

  it('an HTTP 503 and a 401 are no answer (HTTP_STATUS with the status)', async () => {
    setMode('status503');
    agree(await everyone(() => ({ op: 'check' })), checked({ fresh: false, noAnswer: { code: 'HTTP_STATUS', status: 503 } }));
    setMode('badToken');
    agree(await everyone(() => ({ op: 'check' })), checked({ fresh: false, noAnswer: { code: 'HTTP_STATUS', status: 401 } }));
  });

  it('a forged answer is no answer (BAD_RECEIPT) and is not kept', async () => {
    const before = lanes.map(readState);
    setMode('forge');
    agree(await everyone(() => ({ op: 'check' })), checked({ fresh: false, noAnswer: { code: 'BAD_RECEIPT' } }));
    expect(lanes.map(readState)).toEqual(before);
  });

  it('each driver reads the state another SDK wrote', async () => {
    setMode('down');
    // Each lane takes the next lane's licence and state directory (with one driver, its own).
    const next = (lane: Lane) => lanes[(lanes.indexOf(lane) + 1) % lanes.length]!;
    const swapped = lanes.map((lane) => ({ ...lane, stateDir: next(lane).stateDir }));
    await Promise.all(lanes.map((lane, i) => lane.driver.send(configure(swapped[i]!, next(lane).t1))));
    const answers = await everyone(() => ({ op: 'check' }));
    for (const [i, answer] of answers.entries()) {
      expect(answer, `${lanes[i]!.lang} reading ${next(lanes[i]!).lang}'s state`).toMatchObject(
        checked({ fresh: false, noAnswer: { code: 'NETWORK' }, ageSeconds: expect.any(Number) }),
      );
    }
    agree(await everyone((lane) => configure(lane, lane.t1)), ok({}));
  });

  it('an edited answer in the state file counts as no answer', async () => {
    for (const lane of lanes) {
      const state = readState(lane);
      state.answer.status = 'GRACE';
      writeFileSync(stateFile(lane), JSON.stringify(state, null, 2));
    }
    setMode('down');
    agree(await everyone(() => ({ op: 'check' })), checked({ state: 'STALE', fresh: null, ageSeconds: null, noAnswer: { code: 'NETWORK' } }));
    // The newest term in the same file still holds.
    for (const lane of lanes) expect(readState(lane).newestIat, lane.lang).toBe(lane.iat1);
    setMode('pass');
    agree(await everyone(() => ({ op: 'check' })), checked({}));
  });

  it("a clock moved back is a rollback: STALE, whatever the answer's age", async () => {
    setMode('down');
    agree(await everyone(() => ({ op: 'setClock', offsetMs: -2 * HOUR })), ok({}));
    const answers = agree(
      await everyone(() => ({ op: 'check' })),
      checked({ state: 'STALE', fresh: false, clockRollback: true, noAnswer: { code: 'NETWORK' } }),
    );
    expect(answers.ok && answers.result.ageSeconds).toBeLessThan(-7000);
    agree(await everyone(() => ({ op: 'setClock', offsetMs: 0 })), ok({}));
    setMode('pass');
  });

  it('after a renewal: renewed, fetch gives the new term, and the older term is refused', async () => {
    // A renewal's iat is whole seconds: let one pass since the last issue.
    const newest = Math.max(...lanes.map((lane) => lane.iat1));
    while (Date.now() / 1000 < newest + 1) await new Promise((resolve) => setTimeout(resolve, 100));
    for (const lane of lanes) {
      lane.t2 = (await call('POST', `/licenses/${lane.lid}/renew`, { validityMonths: 24 })).licenseString;
      lane.iat2 = iatOf(lane.t2);
      expect(lane.iat2).toBeGreaterThan(lane.iat1);
    }
    agree(await everyone(() => ({ op: 'check' })), checked({ renewed: true }));
    agree(await everyone(() => ({ op: 'fetch' })), ok({ licence: '<t2>' }));
    for (const lane of lanes) expect(readState(lane).newestIat, lane.lang).toBe(lane.iat2);
    agree(await everyone(() => ({ op: 'check' })), checked({}));

    // An application restarted with the older string it had stored.
    agree(await everyone((lane) => configure(lane, lane.t1)), ok({}));
    const requests = lanes.map((lane) => lane.proxy.requests);
    agree(await everyone(() => ({ op: 'check' })), checked({ state: 'INVALID', reasons: ['OLDER_TERM'], fresh: false }));
    expect(
      lanes.map((lane) => lane.proxy.requests),
      'the older term is never sent',
    ).toEqual(requests);
    agree(await everyone((lane) => configure(lane, lane.t2)), ok({}));
  });

  it('release frees the seat, forgets the answer and keeps the newest term', async () => {
    agree(await everyone(() => ({ op: 'release' })), ok({ released: true }));
    for (const lane of lanes) {
      expect((await call('GET', `/licenses/${lane.lid}`)).seatsUsed, lane.lang).toBe(0);
      const state = readState(lane);
      expect(state, lane.lang).toMatchObject({ format: 1, lid: lane.lid, newestIat: lane.iat2, answer: null });
      expect(Number.isSafeInteger(state.offsetMs), `${lane.lang} keeps the clock offset`).toBe(true);
    }
    agree(await everyone(() => ({ op: 'release' })), ok({ released: false, reason: 'NO_SEAT' }));
    // Fetch never binds: with no seat it is refused.
    agree(await everyone(() => ({ op: 'fetch' })), failed('HTTP_STATUS', 403));

    agree(await everyone((lane) => configure(lane, lane.t1)), ok({}));
    const requests = lanes.map((lane) => lane.proxy.requests);
    agree(await everyone(() => ({ op: 'check' })), checked({ state: 'INVALID', reasons: ['OLDER_TERM'], fresh: null, ageSeconds: null }));
    expect(lanes.map((lane) => lane.proxy.requests)).toEqual(requests);
    for (const lane of lanes) expect((await call('GET', `/licenses/${lane.lid}`)).seatsUsed, lane.lang).toBe(0);
  });

  it('clearCache forgets the answer only', async () => {
    agree(await everyone((lane) => configure(lane, lane.t2)), ok({}));
    agree(await everyone(() => ({ op: 'check' })), checked({}));
    agree(await everyone(() => ({ op: 'clearCache' })), ok({}));
    for (const lane of lanes) expect(readState(lane), lane.lang).toMatchObject({ newestIat: lane.iat2, answer: null, offsetMs: expect.any(Number) });
    setMode('down');
    agree(await everyone(() => ({ op: 'check' })), checked({ state: 'STALE', fresh: null, ageSeconds: null, noAnswer: { code: 'NETWORK' } }));
    setMode('pass');
  });

  it('fingerprint: every SDK collects the same fingerprint on this machine', async () => {
    agree(await everyone(() => ({ op: 'fingerprint' })), ok({ fingerprint: collectFingerprint().fingerprint }));
  });

  it('refuses unknown ops and what this round does not support, with INVALID_OPTIONS', async () => {
    agree(await everyone(() => ({ op: 'teleport' })), failed('INVALID_OPTIONS'));
    // An SDK with floating licences refuses to borrow for a node-locked one; one without them says so.
    agree(await everyone(() => ({ op: 'borrow', until: new Date(Date.now() + HOUR).toISOString() })), failed('INVALID_OPTIONS'));
  });
});

/**
 * DESIGN.md 14 through the drivers that support it; a driver that answers INVALID_OPTIONS "air-gapped
 * activation is not supported yet" (an SDK that has not learnt it) is left out of the round trip,
 * and must say so for all three ops.
 */
describe('air-gapped activation through the drivers', () => {
  const AIR_GAPPED = buildFingerprint({ machine: 'air-m', host: 'air-h', mac: 'air-a', cpu: 'air-c', disk: 'air-d' });
  const notYet = (answer: Answer) =>
    !answer.ok && answer.error.code === 'INVALID_OPTIONS' && answer.error.message === 'air-gapped activation is not supported yet';

  it('request, activation with the network down, VALID airGapped, deactivation code, the seat released', async () => {
    const probes = await everyone(() => ({ op: 'deactivateAirGap' }));
    const supporting = lanes.filter((_, i) => !notYet(probes[i]!));
    for (const lane of lanes.filter((l) => !supporting.includes(l))) {
      console.warn(`drivers.test.ts: the ${lane.lang} driver does not support air-gapped activation yet`);
      for (const op of ['activationRequest', 'activateAirGap', 'deactivateAirGap'])
        expect(notYet(await lane.driver.send({ op, response: 'x' })), `${lane.lang} ${op}`).toBe(true);
    }
    expect(supporting.map((l) => l.lang)).toContain('typescript');
    await Promise.all(
      supporting.map(async (lane) => {
        const expectOk = (answer: Answer, label: string) => {
          expect(answer.ok, `${lane.lang} ${label}: ${JSON.stringify(answer)}`).toBe(true);
          return (answer as { result: any }).result;
        };
        const send = (request: Record<string, unknown>) => lane.driver.send(request);
        const issued = await call('POST', '/licenses', { productId: product.id, licensee: 'Air-gapped Customer', validityMonths: 12 });
        expectOk(await send(configure(lane, issued.licenseString)), 'configure');
        expectOk(await send({ op: 'setFingerprint', fingerprint: AIR_GAPPED }), 'setFingerprint');
        lane.proxy.mode = 'down';
        // Nothing to deactivate yet.
        expect(await send({ op: 'deactivateAirGap' }), lane.lang).toMatchObject(failed('BAD_ACTIVATION'));
        const { request, groups } = expectOk(await send({ op: 'activationRequest' }), 'activationRequest');
        expect(groups.replace(/ /g, ''), lane.lang).toBe(request);
        const activated = await call('POST', `/licenses/${issued.lid}/air-gap-activations`, { request: groups });
        expect(await send({ op: 'activateAirGap', response: activated.response }), lane.lang).toEqual(ok({ until: activated.until }));
        expect(await send({ op: 'activateAirGap', response: activated.response }), lane.lang).toMatchObject(failed('BAD_ACTIVATION'));
        const result = expectOk(await send({ op: 'check' }), 'check');
        expect(result, lane.lang).toEqual({
          state: 'VALID',
          reasons: [],
          fresh: null,
          clockRollback: false,
          ageSeconds: null,
          noAnswer: { code: 'NETWORK' },
          renewed: false,
          airGapped: true,
          leaseEndsAt: null,
          trial: null,
        });
        const { code } = expectOk(await send({ op: 'deactivateAirGap' }), 'deactivateAirGap');
        expect(expectOk(await send({ op: 'check' }), 'check')).toMatchObject({ state: 'STALE', airGapped: false });
        expect(await call('POST', `/licenses/${issued.lid}/air-gap-deactivations`, { code })).toMatchObject({ machineId: activated.machineId, released: true });
        lane.proxy.mode = 'pass';
        expectOk(await send(configure(lane, lane.t2 || lane.t1)), 'configure');
        expectOk(await send({ op: 'setFingerprint', fingerprint: FINGERPRINT }), 'setFingerprint');
      }),
    );
  });
});

/** DESIGN.md 13 and 16: a floating lease checked, borrowed, and a borrow refused, alike in every SDK. */
describe('floating licences through the drivers', () => {
  it('check holds a lease, borrow keeps it until `until`, and a refused borrow is no answer with its status', async () => {
    const floating = await call('POST', '/products', {
      productKey: 'drivers-floating',
      name: 'drivers-floating',
      algorithm: 'ED25519',
      licenceType: 'ONLINE',
      allowedLicenceTypes: ['ONLINE'],
      seatModel: 'FLOATING',
      leaseSeconds: 300,
      maxBorrowSeconds: 86_400,
    });
    const token = await call('POST', `/products/${floating.id}/check-token`);
    const issued = new Map<Lane, { lid: string; licenseString: string }>();
    for (const lane of lanes) issued.set(lane, await call('POST', '/licenses', { productId: floating.id, licensee: 'Floating Customer', validityMonths: 12 }));
    const configureFloating = (lane: Lane) => ({
      ...configure(lane, issued.get(lane)!.licenseString),
      productKey: floating.productKey,
      checkId: token.checkId,
      checkToken: token.checkToken,
      publicKeys: [floating.publicKeyPem],
    });
    const lease = { leaseEndsAt: expect.any(String) };
    agree(await everyone(configureFloating), ok({}));
    agree(await everyone(() => ({ op: 'check' })), checked(lease));

    const until = new Date(Math.floor((Date.now() + HOUR) / 1000) * 1000);
    const borrowed = await everyone(() => ({ op: 'borrow', until: until.toISOString() }));
    agree(borrowed, checked(lease));
    for (const [i, answer] of borrowed.entries()) expect(answer.ok && Date.parse(answer.result.leaseEndsAt), lanes[i]!.lang).toBe(until.getTime());
    agree(await everyone(() => ({ op: 'release' })), ok({ released: false, reason: 'BORROWED' }));
    // Beyond the licence's brw (a day): 400, and the state rests on the borrowed lease kept.
    const refused = await everyone(() => ({ op: 'borrow', until: new Date(Date.now() + 2 * 86_400_000).toISOString() }));
    agree(refused, checked({ ...lease, fresh: false, noAnswer: { code: 'HTTP_STATUS', status: 400 } }));
    for (const [i, answer] of refused.entries()) expect(answer.ok && Date.parse(answer.result.leaseEndsAt), lanes[i]!.lang).toBe(until.getTime());

    for (const lane of lanes) expect((await call('GET', `/licenses/${issued.get(lane)!.lid}`)).seatsUsed, lane.lang).toBe(1);
    agree(await everyone((lane) => configure(lane, lane.t2 || lane.t1)), ok({}));
  });
});

/**
 * DESIGN.md 19 through every driver: events queued on disk before any send, counted once against
 * the signed limit, balances from a verified SVCU1 receipt only, and a restart between queueing
 * and sending that loses nothing and counts nothing twice.
 */
describe('usage metering through the drivers', () => {
  it('recordUsage counts, queues without an answer, survives a restart, refuses bad input and never counts twice', async () => {
    const metered = await call('POST', '/products', {
      productKey: 'drivers-metered',
      name: 'drivers-metered',
      algorithm: 'ED25519',
      licenceType: 'ONLINE',
      allowedLicenceTypes: ['ONLINE'],
      meters: [{ key: 'exports', label: 'Exports', limit: 5, period: 'MONTH' }],
    });
    const token = await call('POST', `/products/${metered.id}/check-token`);
    const issued = new Map<Lane, { lid: string; licenseString: string }>();
    for (const lane of lanes) issued.set(lane, await call('POST', '/licenses', { productId: metered.id, licensee: 'Metered Customer', validityMonths: 12 }));
    const configureMetered = (lane: Lane) => ({
      ...configure(lane, issued.get(lane)!.licenseString),
      productKey: metered.productKey,
      checkId: token.checkId,
      checkToken: token.checkToken,
      publicKeys: [metered.publicKeyPem],
    });
    const balance = (used: number, pending = 0) => [
      { key: 'exports', used, limit: 5, overage: 0, remaining: Math.max(0, 5 - used), resetsAt: expect.any(String), pending },
    ];
    const event = (amount: number, result: string) => ({ id: expect.any(String), meter: 'exports', amount, result });
    const report = (fields: Record<string, unknown>) =>
      ok({ licensed: true, reason: null, events: [], meters: null, fresh: true, pending: 0, noAnswer: null, ...fields });
    const queueOf = (lane: Lane) => path.join(lane.stateDir, 'usage', issued.get(lane)!.lid);

    setMode('pass');
    agree(await everyone(configureMetered), ok({}));
    agree(await everyone(() => ({ op: 'check' })), checked({}));
    // Before any usage answer: the balances of every meter, nothing queued.
    agree(await everyone(() => ({ op: 'usage' })), report({ meters: balance(0) }));
    agree(await everyone(() => ({ op: 'recordUsage', meter: 'exports', amount: 2 })), report({ events: [event(2, 'ACCEPTED')], meters: balance(2) }));
    for (const lane of lanes) expect(readdirSync(queueOf(lane)), `${lane.lang}: the counted event's file is gone`).toEqual([]);

    // Refused before anything is queued or sent: what the service would answer 400.
    const requests = lanes.map((lane) => lane.proxy.requests);
    for (const bad of [
      { meter: '1exports', amount: 1 },
      { meter: 'exports', amount: 0 },
      { meter: 'exports', amount: 1.5 },
      { meter: 'exports', amount: 1_000_000_001 },
    ]) {
      agree(await everyone(() => ({ op: 'recordUsage', ...bad })), failed('INVALID_OPTIONS'), { label: JSON.stringify(bad) });
    }
    expect(
      lanes.map((lane) => lane.proxy.requests),
      'nothing was sent',
    ).toEqual(requests);

    // No answer: the event waits on disk, exactly {id, meter, amount, at}; the last verified balances stand.
    setMode('down');
    agree(
      await everyone(() => ({ op: 'recordUsage', meter: 'exports' })),
      report({ events: [event(1, 'QUEUED')], meters: balance(2, 1), fresh: false, noAnswer: { code: 'NETWORK' } }),
    );
    for (const lane of lanes) {
      const [file] = readdirSync(queueOf(lane));
      const stored = JSON.parse(readFileSync(path.join(queueOf(lane), file!), 'utf8'));
      expect(Object.keys(stored), lane.lang).toEqual(['id', 'meter', 'amount', 'at']);
      expect(stored, lane.lang).toMatchObject({ meter: 'exports', amount: 1 });
      expect(file, lane.lang).toBe(`${stored.id}.json`);
      expect(stored.id, `${lane.lang}: 16 random bytes`).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(stored.at, lane.lang).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(statSync(path.join(queueOf(lane), file!)).mode & 0o777, lane.lang).toBe(0o600);
    }

    // The queue survives clearCache (it forgets the check answer only) and a restart between
    // queueing and sending: a new driver process sends what the old one queued.
    agree(await everyone(() => ({ op: 'clearCache' })), ok({}));
    for (const lane of lanes) expect(readdirSync(queueOf(lane)), lane.lang).toHaveLength(1);
    for (const lane of lanes) {
      lane.driver.stop();
      lane.driver = startDriver(lane.lang, found.find((f) => f.lang === lane.lang)!.driver);
    }
    agree(await everyone(configureMetered), ok({}));
    agree(await everyone(() => ({ op: 'setFingerprint', fingerprint: FINGERPRINT })), ok({}));
    setMode('pass');
    agree(await everyone(() => ({ op: 'usage' })), report({ events: [event(1, 'ACCEPTED')], meters: balance(3) }));
    for (const lane of lanes) expect(readdirSync(queueOf(lane)), lane.lang).toEqual([]);
    agree(await everyone(() => ({ op: 'usage' })), report({ meters: balance(3) }));

    // A forged answer is no answer: the event stays; the service counted it once, and the resend is answered with that result.
    setMode('forge');
    agree(
      await everyone(() => ({ op: 'recordUsage', meter: 'exports' })),
      report({ events: [event(1, 'QUEUED')], meters: balance(3, 1), fresh: false, noAnswer: { code: 'BAD_RECEIPT' } }),
    );
    setMode('pass');
    agree(await everyone(() => ({ op: 'usage' })), report({ events: [event(1, 'ACCEPTED')], meters: balance(4) }));
    // Past limit + overage nothing is counted, and the event is done with.
    agree(await everyone(() => ({ op: 'recordUsage', meter: 'exports', amount: 2 })), report({ events: [event(2, 'LIMIT_REACHED')], meters: balance(4) }));
    for (const lane of lanes) expect(readdirSync(queueOf(lane)), lane.lang).toEqual([]);
    agree(await everyone((lane) => configure(lane, lane.t2 || lane.t1)), ok({}));
  });
});

/** DESIGN.md 18 through every driver: a trial started, given back, refused, and judged on the service's time. */
describe('trials through the drivers', () => {
  const DAY = 86_400;
  /** Each lane's own machine, so that each starts a trial of its own. */
  const machineOf = (lane: Lane, changed: Partial<Record<'machine' | 'host' | 'mac' | 'cpu' | 'disk', string>> = {}) =>
    buildFingerprint({
      machine: `tm-${lane.lang}`,
      host: `th-${lane.lang}`,
      mac: `ta-${lane.lang}`,
      cpu: `tc-${lane.lang}`,
      disk: `td-${lane.lang}`,
      ...changed,
    });
  let trialProduct: Product;
  let token: { checkId: string; checkToken: string };
  const trials = new Map<Lane, { licence: string; lid: string; endsAt: string }>();
  /** A configuration of the trial product holding no licence (or the given one). */
  const configureTrial = (lane: Lane, licence?: string) => {
    const { licence: _none, ...rest } = configure(lane, '');
    return {
      ...rest,
      ...(licence ? { licence } : {}),
      productKey: trialProduct.productKey,
      checkId: token.checkId,
      checkToken: token.checkToken,
      publicKeys: [trialProduct.publicKeyPem],
    };
  };
  const each = (answers: Answer[], expected: (lane: Lane) => unknown) => {
    for (const [i, answer] of answers.entries()) expect(answer, lanes[i]!.lang).toEqual(expected(lanes[i]!));
  };

  beforeAll(async () => {
    trialProduct = await call('POST', '/products', {
      productKey: 'drivers-trial',
      name: 'drivers-trial',
      algorithm: 'ED25519',
      licenceType: 'ONLINE',
      allowedLicenceTypes: ['ONLINE'],
      trialDays: 14,
      fingerprintNeed: 5,
      trialAddressDailyLimit: null,
    });
    token = await call('POST', `/products/${trialProduct.id}/check-token`);
  });

  it("startTrial: a new trial (created), then this machine's own back, held by the driver, checked with its trial block", async () => {
    setMode('pass');
    agree(await everyone((lane) => configureTrial(lane)), ok({}));
    agree(await everyone((lane) => ({ op: 'setFingerprint', fingerprint: machineOf(lane) })), ok({}));
    // Until a licence is held, only startTrial, fingerprint, setClock and setFingerprint work.
    agree(await everyone(() => ({ op: 'check' })), failed('INVALID_OPTIONS'));

    const started = await everyone(() => ({ op: 'startTrial', email: 'trial@example.com' }));
    for (const [i, answer] of started.entries()) {
      const lane = lanes[i]!;
      expect(answer, lane.lang).toEqual(
        ok({ licence: expect.any(String), lid: expect.any(String), created: true, endsAt: expect.any(String), state: 'VALID', reasons: [] }),
      );
      const { licence, lid, endsAt } = (answer as { result: { licence: string; lid: string; endsAt: string } }).result;
      const claims = JSON.parse(Buffer.from(licence.split('.')[0]!, 'base64url').toString());
      expect(claims, lane.lang).toMatchObject({
        v: 3,
        lid,
        prd: trialProduct.productKey,
        org: h.slug,
        typ: 'ONLINE',
        grace: 0,
        fp: machineOf(lane),
        fpn: 5,
        mm: 1,
        trl: true,
      });
      expect(claims.lic, lane.lang).toBeUndefined();
      expect(claims.exp - claims.iat, lane.lang).toBe(14 * DAY);
      expect(endsAt, lane.lang).toBe(new Date(claims.exp * 1000).toISOString());
      trials.set(lane, { licence, lid, endsAt });
    }
    // A retry, or a reinstall: the same trial, not a new one.
    each(await everyone(() => ({ op: 'startTrial' })), (lane) => ok({ ...trials.get(lane)!, created: false, state: 'VALID', reasons: [] }));

    const checks = await everyone(() => ({ op: 'check' }));
    each(checks, (lane) =>
      checked({ ageSeconds: expect.any(Number), trial: { endsAt: trials.get(lane)!.endsAt, secondsLeft: expect.any(Number), converted: false } }),
    );
    for (const answer of checks) expect((answer as { result: { trial: { secondsLeft: number } } }).result.trial.secondsLeft).toBeGreaterThan(14 * DAY - 600);
    each(await everyone(() => ({ op: 'verify' })), (lane) =>
      ok({ valid: true, reasons: [], claims: expect.objectContaining({ lid: trials.get(lane)!.lid, trl: true }) }),
    );
    // The trial's seat is in its signature (DESIGN 18): it cannot be released.
    agree(await everyone(() => ({ op: 'release' })), ok({ released: false, reason: 'AT_ISSUE' }));
  });

  it("refusals: TRIALS_OFF, TRIAL_USED naming what matched, and a limit's 429 with retryAfterSeconds", async () => {
    // The drivers' first product offers no trials.
    const noTrials = (lane: Lane) => {
      const { licence: _none, ...rest } = configure(lane, '');
      return rest;
    };
    agree(await everyone(noTrials), ok({}));
    agree(await everyone(() => ({ op: 'startTrial' })), failed('TRIALS_OFF'));

    // Matching now needs 3 components; each lane's trial signed fpn 5, so a machine sharing 3 is not its own.
    await call('PUT', `/products/${trialProduct.id}`, { fingerprintNeed: 3 });
    agree(await everyone((lane) => configureTrial(lane)), ok({}));
    agree(await everyone((lane) => ({ op: 'setFingerprint', fingerprint: machineOf(lane, { cpu: 'new-cpu', disk: 'new-disk' }) })), ok({}));
    agree(await everyone(() => ({ op: 'startTrial' })), { ok: false, error: { code: 'TRIAL_USED', matched: ['machine', 'host', 'mac'] } });

    // As many trials today as the lanes started: the product's limit is reached.
    await call('PUT', `/products/${trialProduct.id}`, { trialDailyLimit: lanes.length });
    agree(
      await everyone((lane) => ({
        op: 'setFingerprint',
        fingerprint: machineOf(lane, { machine: 'n', host: 'n', mac: 'n', cpu: 'n', disk: `n-${lane.lang}` }),
      })),
      ok({}),
    );
    const limited = await everyone(() => ({ op: 'startTrial' }));
    agree(limited, { ok: false, error: { code: 'HTTP_STATUS', status: 429, retryAfterSeconds: expect.any(Number), reason: 'TRIAL_LIMIT' } });
    for (const answer of limited) expect(!answer.ok && answer.error.retryAfterSeconds).toBeGreaterThan(DAY - 600);
    await call('PUT', `/products/${trialProduct.id}`, { trialDailyLimit: null, fingerprintNeed: 5 });
  });

  it("the end is judged on the service's time: a clock ahead ends the trial offline, a clock set back cannot stretch it", async () => {
    setMode('pass');
    agree(await everyone((lane) => configureTrial(lane, trials.get(lane)!.licence)), ok({}));
    agree(await everyone((lane) => ({ op: 'setFingerprint', fingerprint: machineOf(lane) })), ok({}));
    const trialBlock = (lane: Lane, secondsLeft: unknown) => ({ endsAt: trials.get(lane)!.endsAt, secondsLeft, converted: false });
    each(await everyone(() => ({ op: 'check' })), (lane) => checked({ ageSeconds: expect.any(Number), trial: trialBlock(lane, expect.any(Number)) }));

    // Past the end by this machine's clock: EXPIRED, and the licence is not sent.
    agree(await everyone(() => ({ op: 'setClock', offsetMs: 15 * DAY * 1000 })), ok({}));
    const requests = lanes.map((lane) => lane.proxy.requests);
    each(await everyone(() => ({ op: 'check' })), (lane) =>
      checked({ state: 'INVALID', reasons: ['EXPIRED'], fresh: false, ageSeconds: expect.any(Number), trial: trialBlock(lane, 0) }),
    );
    expect(
      lanes.map((lane) => lane.proxy.requests),
      'an ended trial is never sent',
    ).toEqual(requests);

    // Two hours back: a rollback, and the time left counts from the signed checkedAt, not from the clock.
    setMode('down');
    agree(await everyone(() => ({ op: 'setClock', offsetMs: -2 * HOUR })), ok({}));
    const rolledBack = await everyone(() => ({ op: 'check' }));
    each(rolledBack, (lane) =>
      checked({
        state: 'STALE',
        fresh: false,
        clockRollback: true,
        ageSeconds: expect.any(Number),
        noAnswer: { code: 'NETWORK' },
        trial: trialBlock(lane, expect.any(Number)),
      }),
    );
    for (const [i, answer] of rolledBack.entries()) {
      const left = (answer as { result: { trial: { secondsLeft: number } } }).result.trial.secondsLeft;
      expect(left, lanes[i]!.lang).toBeLessThanOrEqual(Math.floor((Date.parse(trials.get(lanes[i]!)!.endsAt) - Date.now()) / 1000) + 60);
    }
    agree(await everyone(() => ({ op: 'setClock', offsetMs: 0 })), ok({}));
    setMode('pass');
  });

  it('an extended trial: the check says renewed, and startTrial again answers the new term', async () => {
    agree(await everyone((lane) => configureTrial(lane, trials.get(lane)!.licence)), ok({}));
    agree(await everyone((lane) => ({ op: 'setFingerprint', fingerprint: machineOf(lane) })), ok({}));
    // A new term's iat is whole seconds: let one pass since the trials started.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const extended = new Map<Lane, string>();
    for (const lane of lanes) extended.set(lane, (await call('POST', `/licenses/${trials.get(lane)!.lid}/extend-trial`, { days: 7 })).licenseString);
    const endOf = (licence: string) => new Date(JSON.parse(Buffer.from(licence.split('.')[0]!, 'base64url').toString()).exp * 1000).toISOString();
    for (const lane of lanes)
      expect(Date.parse(endOf(extended.get(lane)!)) - Date.parse(trials.get(lane)!.endsAt), lane.lang).toBeGreaterThanOrEqual(7 * DAY * 1000);
    const block = (_lane: Lane, licence: string) => ({ endsAt: endOf(licence), secondsLeft: expect.any(Number), converted: false });
    each(await everyone(() => ({ op: 'check' })), (lane) =>
      checked({ ageSeconds: expect.any(Number), renewed: true, trial: block(lane, trials.get(lane)!.licence) }),
    );
    each(await everyone(() => ({ op: 'startTrial' })), (lane) =>
      ok({ licence: extended.get(lane), lid: trials.get(lane)!.lid, created: false, endsAt: endOf(extended.get(lane)!), state: 'VALID', reasons: [] }),
    );
    each(await everyone(() => ({ op: 'check' })), (lane) => checked({ ageSeconds: expect.any(Number), trial: block(lane, extended.get(lane)!) }));
  });

  it('a converted trial runs on, its start saying converted (kept with the answer)', async () => {
    for (const lane of lanes) await call('POST', `/licenses/${trials.get(lane)!.lid}/convert`, { licensee: 'Buyer Ltd', validityMonths: 12 });
    const held = await everyone(() => ({ op: 'startTrial' }));
    each(held, (lane) =>
      ok({ licence: expect.any(String), lid: trials.get(lane)!.lid, created: false, endsAt: expect.any(String), state: 'VALID', reasons: [] }),
    );
    const endsAt = (i: number) => (held[i] as { result: { endsAt: string } }).result.endsAt;
    setMode('down');
    const kept = await everyone(() => ({ op: 'check' }));
    for (const [i, answer] of kept.entries()) {
      expect(answer, lanes[i]!.lang).toEqual(
        checked({
          fresh: false,
          ageSeconds: expect.any(Number),
          noAnswer: { code: 'NETWORK' },
          trial: { endsAt: endsAt(i), secondsLeft: expect.any(Number), converted: true },
        }),
      );
    }
    setMode('pass');
    agree(await everyone((lane) => configure(lane, lane.t2 || lane.t1)), ok({}));
    agree(await everyone(() => ({ op: 'setFingerprint', fingerprint: FINGERPRINT })), ok({}));
  });
});

/**
 * DESIGN.md 20 through every driver: checkForUpdate finds a published release for the driver's
 * platform and keeps it only when its manifest verifies; download keeps a file only when it is
 * the manifest's; the feed token is kept, and asked for again once after a reset.
 */
describe('updates and licensed downloads through the drivers', () => {
  const LINUX = { filename: 'App-1.2.0.AppImage', platform: 'linux', arch: 'x86_64', content: 'the linux build of 1.2.0\n'.repeat(40) };
  const WINDOWS = { filename: 'App Setup 1.2.0.exe', platform: 'windows', arch: 'x86_64', content: 'the windows build of 1.2.0\n' };
  const linuxQuery = { platform: 'linux', arch: 'x86_64' };
  const OLDER = { ...LINUX, filename: 'App-1.1.0.AppImage', content: 'the linux build of 1.1.0\n' };
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  let updates: Product;
  let token: { checkId: string; checkToken: string };
  let older: any;
  let newest: any;
  const licences = new Map<Lane, { lid: string; licenseString: string }>();

  const configureUpdates = (lane: Lane, licence: string) => ({
    ...configure(lane, licence),
    productKey: updates.productKey,
    checkId: token.checkId,
    checkToken: token.checkToken,
    publicKeys: [updates.publicKeyPem],
  });
  async function ship(version: string, files: Array<typeof LINUX>, publishedAt?: string) {
    const release = await call('POST', `/products/${updates.id}/releases`, { version });
    for (const file of files) {
      const query = new URLSearchParams({ filename: file.filename, platform: file.platform, arch: file.arch });
      const uploaded = await h.admin('POST', `/releases/${release.id}/artifacts?${query}`, file.content, { 'content-type': 'application/octet-stream' });
      if (uploaded.statusCode !== 201) throw new Error(`upload: ${uploaded.statusCode} ${uploaded.body}`);
    }
    return call('POST', `/releases/${release.id}/publish`, publishedAt ? { publishedAt } : {});
  }
  /** The update latest.json answers for `lane`: the release's signed fields and its linux file with the lane's feed URL. */
  const expectedUpdate = (lane: Lane, release: any, files: Array<typeof LINUX>) => ({
    version: release.version,
    channel: 'stable',
    publishedAt: release.publishedAt,
    notes: '',
    manifest: release.manifest,
    manifestSignatures: release.manifestSignatures,
    manifestSignature: release.manifestSignature,
    manifestKeyFingerprint: release.manifestKeyFingerprint,
    artifacts: files.map((file) => {
      const artifact = release.artifacts.find((a: { filename: string }) => a.filename === file.filename);
      return {
        id: artifact.id,
        filename: file.filename,
        platform: file.platform,
        arch: file.arch,
        size: Buffer.byteLength(file.content),
        sha256: sha256(file.content),
        sha512: artifact.sha512,
        contentType: 'application/octet-stream',
        url: expect.stringMatching(
          new RegExp(
            `^${escaped(`${lane.proxy.url}/o/${h.slug}/api/public/feeds/`)}SVCF1\\.[^/]+/files/${escaped(`${release.version}/${encodeURIComponent(file.filename)}`)}$`,
          ),
        ),
      };
    }),
  });
  const each = (answers: Answer[], expected: (lane: Lane) => unknown) => {
    for (const [i, answer] of answers.entries()) expect(answer, lanes[i]!.lang).toEqual(expected(lanes[i]!));
  };
  const asked = (lane: Lane, since: number) => lane.proxy.paths.slice(since).map((p) => p.replace(/^(\w+) .*\/(feed-token|latest\.json)$/, '$1 $2'));

  beforeAll(async () => {
    updates = await call('POST', '/products', {
      productKey: 'drivers-updates',
      name: 'drivers-updates',
      algorithm: 'ED25519',
      licenceType: 'ONLINE',
      allowedLicenceTypes: ['ONLINE'],
    });
    token = await call('POST', `/products/${updates.id}/check-token`);
    // 1.1.0 three days ago (inside any window that began today), 1.2.0 now.
    older = await ship('1.1.0', [OLDER], new Date(Math.floor(Date.now() / 1000 - 3 * 86_400) * 1000).toISOString());
    newest = await ship('1.2.0', [LINUX, WINDOWS]);
    for (const lane of lanes) licences.set(lane, await call('POST', '/licenses', { productId: updates.id, licensee: 'Update Customer', validityMonths: 12 }));
    setMode('pass');
    agree(await everyone((lane) => configureUpdates(lane, licences.get(lane)!.licenseString)), ok({}));
    agree(await everyone(() => ({ op: 'setFingerprint', fingerprint: FINGERPRINT })), ok({}));
    // A machine downloads with a live seat (DESIGN.md 20): the check takes it.
    agree(await everyone(() => ({ op: 'check' })), checked({}));
  });

  afterAll(async () => {
    await everyone((lane) => configure(lane, lane.t2 || lane.t1));
  });

  it("checkForUpdate: the highest covered release with this platform's files, or none above the running version", async () => {
    // Nothing held yet.
    agree(await everyone((lane) => ({ op: 'download', filename: LINUX.filename, to: lane.stateDir })), failed('NO_UPDATE'));
    const found = await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.0.0', ...linuxQuery }));
    each(found, (lane) => ok({ update: expectedUpdate(lane, newest, [LINUX]), blocked: null }));
    each(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.0.0', platform: 'windows', arch: 'x86_64' })), (lane) =>
      ok({ update: expectedUpdate(lane, newest, [WINDOWS]), blocked: null }),
    );
    agree(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.2.0', ...linuxQuery })), ok({ update: null, blocked: null }));
    agree(await everyone((lane) => ({ op: 'download', filename: LINUX.filename, to: lane.stateDir })), failed('NO_UPDATE'));
    // What the feed would refuse is refused before anything is sent.
    const requests = lanes.map((lane) => lane.proxy.requests);
    for (const bad of [
      { currentVersion: 'v1.0.0', ...linuxQuery },
      { currentVersion: '1.0.0+build', ...linuxQuery },
      { currentVersion: '1.0.0', platform: 'beos', arch: 'x86_64' },
      { currentVersion: '1.0.0', platform: 'linux', arch: 'sparc' },
      { currentVersion: '1.0.0', ...linuxQuery, channel: 'nightly' },
    ])
      agree(await everyone(() => ({ op: 'checkForUpdate', ...bad })), failed('INVALID_OPTIONS'), { label: JSON.stringify(bad) });
    expect(
      lanes.map((lane) => lane.proxy.requests),
      'nothing was sent',
    ).toEqual(requests);
  });

  it("download keeps the file only when its size and SHA-256 are the manifest's; a forged manifest is BAD_MANIFEST", async () => {
    agree(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.1.0', ...linuxQuery })), ok({ update: expect.any(Object), blocked: null }));
    const folder = (lane: Lane, name: string) => {
      const dir = path.join(lane.stateDir, name);
      mkdirSync(dir, { recursive: true });
      return dir;
    };
    const size = Buffer.byteLength(LINUX.content);
    each(await everyone((lane) => ({ op: 'download', filename: LINUX.filename, to: folder(lane, 'good') })), (lane) =>
      ok({ path: path.join(lane.stateDir, 'good', LINUX.filename), size, sha256: sha256(LINUX.content) }),
    );
    for (const lane of lanes) {
      expect(readdirSync(path.join(lane.stateDir, 'good')), `${lane.lang}: the file alone, no temporary one`).toEqual([LINUX.filename]);
      expect(readFileSync(path.join(lane.stateDir, 'good', LINUX.filename), 'utf8'), lane.lang).toBe(LINUX.content);
    }
    // A file the update does not list (another platform's).
    agree(await everyone((lane) => ({ op: 'download', filename: WINDOWS.filename, to: folder(lane, 'good') })), failed('INVALID_OPTIONS'));

    setMode('corruptFile');
    agree(await everyone((lane) => ({ op: 'download', filename: LINUX.filename, to: folder(lane, 'tampered') })), failed('DIGEST_MISMATCH'));
    for (const lane of lanes) expect(readdirSync(path.join(lane.stateDir, 'tampered')), `${lane.lang}: nothing kept`).toEqual([]);

    setMode('forgeManifest');
    agree(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.1.0', ...linuxQuery })), failed('BAD_MANIFEST'));
    // A check that failed holds no update.
    agree(await everyone((lane) => ({ op: 'download', filename: LINUX.filename, to: folder(lane, 'tampered') })), failed('NO_UPDATE'));
    setMode('pass');
  });

  it('the feed token is kept across restarts; after reset-download-links it is refused and asked for again, once', async () => {
    for (const lane of lanes) {
      lane.driver.stop();
      lane.driver = startDriver(lane.lang, found.find((f) => f.lang === lane.lang)!.driver);
    }
    agree(await everyone((lane) => configureUpdates(lane, licences.get(lane)!.licenseString)), ok({}));
    agree(await everyone(() => ({ op: 'setFingerprint', fingerprint: FINGERPRINT })), ok({}));
    let since = lanes.map((lane) => lane.proxy.paths.length);
    agree(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.0.0', ...linuxQuery })), ok({ update: expect.any(Object), blocked: null }));
    for (const [i, lane] of lanes.entries()) expect(asked(lane, since[i]!), `${lane.lang}: the kept token`).toEqual(['GET latest.json']);

    for (const lane of lanes) await call('POST', `/licenses/${licences.get(lane)!.lid}/reset-download-links`);
    since = lanes.map((lane) => lane.proxy.paths.length);
    const answers = await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.0.0', ...linuxQuery }));
    each(answers, (lane) => ok({ update: expectedUpdate(lane, newest, [LINUX]), blocked: null }));
    for (const [i, lane] of lanes.entries())
      expect(asked(lane, since[i]!), `${lane.lang}: refused, asked again once`).toEqual(['GET latest.json', 'POST feed-token', 'GET latest.json']);
    const dir = path.join(lanes[0]!.stateDir, 'after-reset');
    each(await everyone((lane) => ({ op: 'download', filename: LINUX.filename, to: path.join(lane.stateDir, 'after-reset') })), (lane) =>
      ok({ path: path.join(lane.stateDir, 'after-reset', LINUX.filename), size: Buffer.byteLength(LINUX.content), sha256: sha256(LINUX.content) }),
    );
    expect(readdirSync(dir)).toEqual([LINUX.filename]);
  });

  it('feedUrls: the four feed URLs, which fetch the feeds; the kept ones when the service cannot be reached', async () => {
    const answers = await everyone(() => ({ op: 'feedUrls' }));
    for (const [i, answer] of answers.entries()) {
      const lane = lanes[i]!;
      const base = `${lane.proxy.url}/o/${h.slug}/api/public/feeds/`;
      expect(answer, lane.lang).toEqual(ok({ electron: expect.any(String), tauri: expect.any(String), sparkle: expect.any(String), json: expect.any(String) }));
      const urls = (answer as { result: Record<string, string> }).result;
      const tokenOf = urls.json!.slice(base.length, -'/latest.json'.length);
      expect(urls, lane.lang).toEqual({
        electron: `${base}${tokenOf}/electron/`,
        tauri: `${base}${tokenOf}/tauri/{{target}}/{{arch}}/{{current_version}}`,
        sparkle: `${base}${tokenOf}/sparkle/appcast.xml`,
        json: `${base}${tokenOf}/latest.json`,
      });
      expect(tokenOf, lane.lang).toMatch(/^SVCF1\./);
      const latest = await fetch(`${urls.json}?platform=linux&arch=x86_64&version=1.0.0`);
      expect(latest.status, lane.lang).toBe(200);
      expect(((await latest.json()) as { update: { version: string } }).update.version, lane.lang).toBe('1.2.0');
      const yaml = await fetch(`${urls.electron}latest-linux.yml`);
      expect(yaml.status, lane.lang).toBe(200);
      expect(await yaml.text(), lane.lang).toMatch(/^version: "1\.2\.0"\nfiles:\n {2}- url: ".*\/files\/1\.2\.0\/App-1\.2\.0\.AppImage"\n/);
      expect((await fetch(urls.sparkle!)).status, lane.lang).toBe(200);
    }
    setMode('down');
    for (const [i, answer] of (await everyone(() => ({ op: 'feedUrls' }))).entries()) expect(answer, lanes[i]!.lang).toEqual(answers[i]);
    setMode('pass');
  });

  it('an expired update window: what was published within it still comes, the newer release is blocked UPDATES_EXPIRED; a revoked licence is HTTP_STATUS 403 with its reason', async () => {
    // A window of 0 months ended at the start of the issue date: 1.2.0 came after it, 1.1.0 before.
    const expired = new Map<Lane, { lid: string; licenseString: string }>();
    for (const lane of lanes)
      expired.set(lane, await call('POST', '/licenses', { productId: updates.id, licensee: 'Lapsed Customer', validityMonths: 12, updatesMonths: 0 }));
    agree(await everyone((lane) => configureUpdates(lane, expired.get(lane)!.licenseString)), ok({}));
    agree(await everyone(() => ({ op: 'check' })), checked({}));
    const blocked = { version: '1.2.0', publishedAt: newest.publishedAt, reason: 'UPDATES_EXPIRED' };
    agree(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.1.0', ...linuxQuery })), ok({ update: null, blocked }));
    const fallback = await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.0.0', ...linuxQuery }));
    each(fallback, (lane) => ok({ update: expectedUpdate(lane, older, [OLDER]), blocked }));

    for (const lane of lanes) await call('POST', `/licenses/${expired.get(lane)!.lid}/revoke`, {});
    agree(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.0.0', ...linuxQuery })), {
      ok: false,
      error: { code: 'HTTP_STATUS', status: 403, reason: 'REVOKED' },
    });
  });

  it('after a key rotation, an application that ships only the old key still verifies the new release (signed by both)', async () => {
    const before = updates.publicKeyPem;
    await call('PUT', `/products/${updates.id}`, { regenerateKey: true });
    const rotated = await ship('1.3.0', [{ ...LINUX, filename: 'App-1.3.0.AppImage', content: 'the linux build of 1.3.0\n' }]);
    expect(rotated.manifestSignatures).toHaveLength(2);
    agree(await everyone((lane) => ({ ...configureUpdates(lane, licences.get(lane)!.licenseString), publicKeys: [before] })), ok({}));
    agree(await everyone(() => ({ op: 'check' })), checked({}));
    each(await everyone(() => ({ op: 'checkForUpdate', currentVersion: '1.2.0', ...linuxQuery })), (lane) =>
      ok({ update: expectedUpdate(lane, rotated, [{ ...LINUX, filename: 'App-1.3.0.AppImage', content: 'the linux build of 1.3.0\n' }]), blocked: null }),
    );
  });
});
