// Floating licences in the SDK (DESIGN.md 13): SVCR2 answers, the lease end, the lease helper, borrowing.
import { createPublicKey } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildFingerprint, parseLicence } from '@licensor/protocol';
import { LicenceClient, memoryStore, type LeaseOptions, type LicenceClientOptions } from '@licensor/sdk';
import { loadVectors } from '../../protocol/test-vectors/index.js';
import { checkToken, floatingLicence, genuineAnswer, leased, licensed, myFingerprint, T0, testClient, type Answer, type SentRequest } from './fake-service.js';

const LEASE = 900;

const client = (respond: (request: SentRequest) => Answer | Promise<Answer>, options: Partial<LicenceClientOptions> = {}) =>
  testClient(respond, { licence: floatingLicence(), ...options });

const down = (): Answer => ({ status: 503, body: { error: 'down' } });

afterEach(() => {
  vi.useRealTimers();
});

describe("a floating licence's check", () => {
  it('verifies an SVCR2 answer and counts it as licensed until its signed leaseEndsAt, whatever max says', async () => {
    let online = true;
    const { client: c, clock } = client((request) => (online ? { status: 200, body: genuineAnswer(request, leased()) } : down()));
    const first = await c.check();
    expect(first).toMatchObject({ state: 'VALID', noAnswer: null });
    expect(first.answer).toMatchObject({ tag: 'SVCR2', leaseEndsAt: new Date(T0 + LEASE * 1000).toISOString() });

    online = false;
    clock.now = T0 + LEASE * 1000 - 1;
    expect((await c.check()).state).toBe('VALID');
    // The licence's max is a day; the lease ends after fifteen minutes, and with it the licence here.
    clock.now = T0 + LEASE * 1000;
    const stale = await c.check();
    expect(stale).toMatchObject({ state: 'STALE', noAnswer: { code: 'HTTP_STATUS', status: 503 } });
    expect(stale.answer!.fresh).toBe(false);
  });

  it('refuses an answer whose leaseEndsAt was edited on the way, and one signed as SVCR1', async () => {
    const edited = client((request) => ({ status: 200, body: { ...genuineAnswer(request, leased()), leaseEndsAt: new Date(T0 + 86_400_000).toISOString() } }));
    expect(await edited.client.check()).toMatchObject({ state: 'STALE', noAnswer: { code: 'BAD_RECEIPT' }, answer: null });
    const downgraded = client((request) => ({ status: 200, body: genuineAnswer(request, licensed(), { tag: 'SVCR1' }) }));
    expect(await downgraded.client.check()).toMatchObject({ state: 'STALE', noAnswer: { code: 'BAD_RECEIPT' } });
  });

  it('treats a cached answer with an edited leaseEndsAt as no answer', async () => {
    const store = memoryStore();
    let online = true;
    const { client: c, clock } = client((request) => (online ? { status: 200, body: genuineAnswer(request, leased()) } : down()), { store });
    await c.check();
    online = false;
    const { org, prd, lid } = parseLicence(c.licence).claims;
    await store.update({ slug: org, productKey: prd, lid }, (state) => ({
      ...state,
      answer: { ...state.answer!, leaseEndsAt: new Date(T0 + 86_400_000).toISOString() },
    }));
    clock.now = T0 + 60_000;
    expect(await c.check()).toMatchObject({ state: 'STALE', answer: null });
  });

  it('judges the lease end with the remembered clock offset clamped to ±60 s', async () => {
    let online = true;
    // The service's clock is ten minutes ahead of this machine's.
    const ahead = 10 * 60_000;
    const { client: c, clock } = client((request) => (online ? { status: 200, body: genuineAnswer(request, leased(T0 + ahead)) } : down()));
    expect((await c.check()).state).toBe('VALID');
    online = false;
    // By the service's clock the lease ended at T0 + 25 min (local T0 + 15 min); the offset counts for a minute only.
    clock.now = T0 + ahead + LEASE * 1000 - 60_000 - 1;
    expect((await c.check()).state).toBe('VALID');
    clock.now += 1;
    expect((await c.check()).state).toBe('STALE');
  });

  it('says INVALID for a verified SEATS_FULL answer', async () => {
    const { client: c } = client((request) => ({
      status: 200,
      body: { ...genuineAnswer(request, { status: 'ACTIVE' }), reason: 'SEATS_FULL', retryAfterSeconds: 60 },
    }));
    expect(await c.check()).toMatchObject({ state: 'INVALID', reasons: ['NO_SEAT'], serverReason: 'SEATS_FULL' });
  });

  it.each(loadVectors().algorithms)('verifies the golden SVCR2 receipts of $algorithm from the store', async (vector) => {
    const floating = vector.floating!;
    // FP_A of the vectors script: every receipt is signed for it.
    const fingerprint = buildFingerprint({
      machine: 'alpha-machine-id',
      host: 'alpha.example',
      mac: '52:54:00:12:34:56',
      cpu: 'AMD EPYC 7B13',
      disk: 'WD-alpha',
    });
    const checkedAt = Date.parse(floating.receipts[0]!.fields.checkedAt!);
    for (const receipt of floating.receipts) {
      const store = memoryStore();
      const f = receipt.fields;
      const { org, prd, lid } = parseLicence(floating.licence).claims;
      await store.update({ slug: org, productKey: prd, lid }, () => ({
        newestIat: null,
        offsetMs: 0,
        answer: {
          tag: 'SVCR2',
          lid: f.lid ?? '',
          status: f.status ?? '',
          nonce: f.nonce ?? '',
          checkedAt: f.checkedAt ?? '',
          boundAt: f.boundAt ?? '',
          fpDigest: f.fpDigest ?? '',
          leaseEndsAt: f.leaseEndsAt ?? '',
          receipt: receipt.receipt,
          renewed: false,
          converted: false,
        },
      }));
      const c = new LicenceClient({
        baseUrl: 'https://licensing.example.com',
        slug: 'acme',
        checkId: 'abc123def456',
        checkToken,
        publicKeyPem: createPublicKey(vector.publicKeyPem),
        licence: floating.licence,
        fingerprint,
        store: store,
        fetchImpl: (async () => new Response('{}', { status: 503 })) as typeof fetch,
        clock: () => checkedAt + 1000,
      });
      const result = await c.check();
      expect({ name: receipt.name, state: result.state }).toEqual({ name: receipt.name, state: receipt.grants ? 'VALID' : 'INVALID' });
      expect(result.answer?.receipt).toBe(receipt.receipt);
    }
  });
});

describe('borrow()', () => {
  it('sends until, and the borrowed lease counts until then', async () => {
    const until = T0 + 3 * 86_400_000;
    const {
      client: c,
      requests,
      clock,
    } = client((request) =>
      request.url.endsWith('/borrow') ? { status: 200, body: genuineAnswer(request, { ...leased(), leaseEndsAt: new Date(until).toISOString() }) } : down(),
    );
    const result = await c.borrow(new Date(until));
    expect(requests[0]!.url).toMatch(/\/borrow$/);
    expect(requests[0]!.body).toMatchObject({ until: new Date(until).toISOString(), fingerprint: myFingerprint });
    expect(result.state).toBe('VALID');
    expect(c.borrowedUntil).toBe(until);
    clock.now = until - 1;
    expect((await c.check()).state).toBe('VALID');
    clock.now = until;
    expect((await c.check()).state).toBe('STALE');
  });

  it("answers the service's refusal as no answer with its status, and refuses a node-locked licence before sending", async () => {
    const { client: c } = client(() => ({ status: 403, body: { error: 'borrowing is off' } }));
    expect(await c.borrow(T0 + 60_000)).toMatchObject({ state: 'STALE', answer: null, noAnswer: { code: 'HTTP_STATUS', status: 403 } });
    expect(c.borrowedUntil).toBe(0);
    const { client: node, requests } = client(() => down(), { licence: floatingLicence({ lse: undefined }) });
    await expect(node.borrow(T0 + 60_000)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await expect(c.borrow('next week')).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(requests).toHaveLength(0);
  });
});

/** A floating service in memory: leases renewed as the real one does, seats, releases and a switch. */
function floatingService(options: { seats?: boolean; renewed?: boolean } = {}) {
  const state = { online: true, seats: options.seats ?? true, end: 0, released: 0, fetched: 0, renewed: options.renewed ?? false };
  const respond = (request: SentRequest): Answer => {
    if (!state.online) return down();
    const now = Date.now();
    if (request.url.endsWith('/release')) {
      state.released++;
      state.end = 0;
      return {
        status: 200,
        body: {
          lid: JSON.parse(Buffer.from(request.body.license!.split('.')[0]!, 'base64url').toString()).lid,
          released: true,
          releasedAt: new Date(now).toISOString(),
          nonce: request.body.nonce,
        },
      };
    }
    if (request.url.endsWith('/fetch')) {
      state.fetched++;
      state.renewed = false;
      return { status: 200, body: { license: request.body.license } };
    }
    if (!state.seats && state.end <= now)
      return { status: 200, body: { ...genuineAnswer(request, { status: 'ACTIVE', checkedAt: new Date(now).toISOString() }), reason: 'SEATS_FULL' } };
    if (state.end - now < (LEASE * 1000) / 2) state.end = now + LEASE * 1000;
    const body = genuineAnswer(request, { ...licensed(new Date(now).toISOString()), leaseEndsAt: new Date(state.end).toISOString() });
    return { status: 200, body: state.renewed ? { ...body, renewed: true } : body };
  };
  return { state, respond };
}

async function keeping(service: ReturnType<typeof floatingService>, options: LeaseOptions = {}) {
  vi.useFakeTimers({ now: T0 });
  const { client: c, requests } = client(service.respond, { clock: () => Date.now() });
  const keeper = await c.keepLease({ releaseOnSignals: false, random: () => 0.5, ...options });
  return { c, requests, keeper };
}

const checks = (requests: SentRequest[]) => requests.filter((r) => r.url.endsWith('/check')).length;

describe('keepLease()', () => {
  it('takes the lease, checks every lse / 3 with ±10% jitter, and the lease never lapses', async () => {
    const service = floatingService();
    const { requests, keeper } = await keeping(service);
    expect(keeper.held).toBe(true);
    expect(checks(requests)).toBe(1);
    await vi.advanceTimersByTimeAsync((LEASE / 3) * 1000 - 1);
    expect(checks(requests)).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(checks(requests)).toBe(2);
    await vi.advanceTimersByTimeAsync(10 * LEASE * 1000);
    expect(checks(requests)).toBe(32);
    expect(keeper.held).toBe(true);
    expect(keeper.leaseEndsAt!.getTime()).toBeGreaterThan(Date.now());
    await keeper.stop();
  });

  it('jitters by up to 10% either way, and never below 60 s', async () => {
    const low = await keeping(floatingService(), { random: () => 0 });
    await vi.advanceTimersByTimeAsync(270_000 - 1);
    expect(checks(low.requests)).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(checks(low.requests)).toBe(2);
    await low.keeper.stop();
    vi.useRealTimers();

    const short = floatingService();
    vi.useFakeTimers({ now: T0 });
    const { client: c, requests } = client(short.respond, { clock: () => Date.now(), licence: floatingLicence({ lse: 60, chk: 20, max: 60 }) });
    const keeper = await c.keepLease({ releaseOnSignals: false, random: () => 0.999999 });
    await vi.advanceTimersByTimeAsync(65_999);
    expect(checks(requests)).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(checks(requests)).toBe(2);
    await keeper.stop();
  });

  it('retries a failed renewal at once, reports the lease at risk, then lost at its end', async () => {
    const service = floatingService();
    const events: string[] = [];
    const { requests, keeper } = await keeping(service, {
      onAtRisk: ({ leaseEndsAt }) => events.push(`at risk until ${leaseEndsAt.toISOString()}`),
      onLost: ({ reason }) => events.push(`lost ${reason}`),
    });
    const end = keeper.leaseEndsAt!.toISOString();
    service.state.online = false;
    await vi.advanceTimersByTimeAsync(300_000);
    // The renewal and its immediate retry.
    expect(checks(requests)).toBe(3);
    expect(events).toEqual([`at risk until ${end}`]);
    expect(keeper.held).toBe(true);
    await vi.advanceTimersByTimeAsync(600_000);
    expect(events).toEqual([`at risk until ${end}`, 'lost LAPSED']);
    expect(keeper.held).toBe(false);
    // It keeps trying, and a check that grants again holds the lease again.
    service.state.online = true;
    await vi.advanceTimersByTimeAsync(300_000);
    expect(keeper.held).toBe(true);
    await keeper.stop();
  });

  it('reports a lost lease when the service gives the seat to others', async () => {
    const service = floatingService();
    const lost: string[] = [];
    const { keeper } = await keeping(service, { onLost: ({ reason, result }) => lost.push(`${reason} ${result?.serverReason}`) });
    service.state.seats = false;
    service.state.end = 0;
    await vi.advanceTimersByTimeAsync(300_000);
    expect(lost).toEqual(['REFUSED SEATS_FULL']);
    expect(keeper.held).toBe(false);
    await keeper.stop();
    expect(service.state.released).toBe(0);
  });

  it('fetches the renewed term, and releases on stop()', async () => {
    const service = floatingService({ renewed: true });
    const { keeper } = await keeping(service);
    expect(service.state.fetched).toBe(1);
    expect(await keeper.stop()).toMatchObject({ released: true });
    expect(service.state.released).toBe(1);
    expect(await keeper.stop()).toBeNull();
    expect(service.state.released).toBe(1);
  });

  it('never releases a borrowed lease', async () => {
    const service = floatingService();
    const { c, keeper } = await keeping(service);
    const until = Date.now() + 86_400_000;
    // The borrow answer: the lease kept until then.
    service.state.end = until;
    expect((await c.borrow(until)).noAnswer).toBeNull();
    expect(await keeper.stop()).toBeNull();
    expect(service.state.released).toBe(0);
  });

  it("releases on SIGTERM and lets the process go on to the signal's end", async () => {
    const service = floatingService();
    const { keeper } = await keeping(service, { releaseOnSignals: true });
    // Another listener stands in for the default action, which would end the test process.
    const other = vi.fn();
    process.on('SIGTERM', other);
    try {
      process.emit('SIGTERM', 'SIGTERM');
      await vi.advanceTimersByTimeAsync(0);
      expect(service.state.released).toBe(1);
      expect(keeper.held).toBe(false);
      expect(process.listenerCount('SIGTERM')).toBe(1);
    } finally {
      process.off('SIGTERM', other);
    }
  });

  it('refuses a node-locked licence', async () => {
    const { client: c } = client(() => down(), { licence: floatingLicence({ lse: undefined }) });
    await expect(c.keepLease({ releaseOnSignals: false })).rejects.toMatchObject({ code: 'NOT_CHECKABLE' });
  });
});
