import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fpDigest } from '@licensor/protocol';
import { LicensorError, memoryStore, type StateKey, type StateStore, type LicenceClientOptions, type LicenceClaims } from '@licensor/sdk';
import {
  checkToken,
  genuineAnswer,
  licensed,
  MAX_SECONDS,
  myFingerprint,
  onlineLicence,
  otherFingerprint,
  otherKeys,
  publicKeyPem,
  T0,
  testClient,
  type Answer,
  type SentRequest,
} from './fake-service.js';

const client = testClient;

/** Where a licence's state is kept: under its signed organisation and product. */
const keyOf = (claims: LicenceClaims | null): StateKey => ({ slug: claims!.org, productKey: claims!.prd, lid: claims!.lid });

const ok =
  (signed: Parameters<typeof genuineAnswer>[1] = licensed(), tweak: Parameters<typeof genuineAnswer>[2] = {}) =>
  (request: SentRequest): Answer => ({ status: 200, body: genuineAnswer(request, signed, tweak) });

describe('LicenceClient.check', () => {
  it('sends the licence, this machine and a fresh nonce to the check endpoint', async () => {
    const { client: c, requests } = client(ok());
    await c.check();
    await c.check();
    const [first, second] = requests;
    expect(first!.method).toBe('POST');
    expect(first!.url).toBe('https://licensing.example.com/o/acme/api/public/license/abc123def456/check');
    expect(first!.headers.authorization).toBe(`Bearer ${checkToken}`);
    expect(first!.headers['content-type']).toBe('application/json');
    expect(Object.keys(first!.body).sort()).toEqual(['fingerprint', 'license', 'nonce']);
    expect(first!.body).toMatchObject({ license: c.licence, fingerprint: myFingerprint });
    expect(first!.body.nonce).toMatch(/^[A-Za-z0-9_-]{16,128}$/);
    expect(second!.body.nonce).not.toBe(first!.body.nonce);
  });

  it('is VALID on a verified answer that grants, and caches it', async () => {
    const { client: c, store } = client(ok());
    const result = await c.check();
    expect(result).toMatchObject({ state: 'VALID', reasons: [], noAnswer: null, clockRollback: false, renewed: false, ageSeconds: 0 });
    expect(result.answer).toMatchObject({ fresh: true, grants: true, status: 'ACTIVE', fpDigest: fpDigest(myFingerprint) });
    const lid = result.licence.claims!.lid;
    expect(await store.load(keyOf(result.licence.claims))).toMatchObject({
      newestIat: result.licence.claims!.iat,
      offsetMs: 0,
      answer: { tag: 'SVCR1', lid, status: 'ACTIVE', checkedAt: new Date(T0).toISOString(), leaseEndsAt: '' },
    });
  });

  it("accepts a receipt signed by an older key of the product's history", async () => {
    const old = generateKeyPairSync('ed25519');
    const { client: c } = client(ok(licensed(), { key: old.privateKey }), { publicKeyPem: [publicKeyPem, old.publicKey] });
    expect((await c.check()).state).toBe('VALID');
  });

  it.each([
    ['revoked', { status: 'REVOKED', boundAt: '2026-01-05T09:30:12.345Z' }, 'REVOKED'],
    ['expired', { status: 'EXPIRED' }, 'EXPIRED'],
    ['unknown licence', {}, 'UNKNOWN_LICENCE'],
    ['no seat on this machine', { status: 'ACTIVE' }, 'NO_SEAT'],
  ])('is INVALID when the signed fields say %s', async (_name, signed, reason) => {
    const { client: c } = client(ok(signed));
    expect(await c.check()).toMatchObject({ state: 'INVALID', reasons: [reason], noAnswer: null });
  });

  it('surfaces renewed for a superseded term, which stays licensed', async () => {
    const { client: c } = client((request) => ({
      status: 200,
      body: { ...genuineAnswer(request, licensed()), valid: false, reason: 'SUPERSEDED', renewed: true },
    }));
    expect(await c.check()).toMatchObject({ state: 'VALID', renewed: true, serverReason: 'SUPERSEDED' });
  });

  it('takes the verdict from the signed fields, whatever the unsigned valid and reason say', async () => {
    // A genuine REVOKED answer with `valid` flipped to true must not leave a cached VALID in force.
    let respond = ok();
    const { client: c, clock } = client((r) => respond(r));
    expect((await c.check()).state).toBe('VALID');
    respond = (r) => ({ status: 200, body: { ...genuineAnswer(r, { status: 'REVOKED', boundAt: licensed().boundAt }), valid: true, reason: null } });
    clock.now = T0 + 60_000;
    expect(await c.check()).toMatchObject({ state: 'INVALID', reasons: ['REVOKED'], noAnswer: null });
    // A genuine ACTIVE answer with `valid` flipped to false is VALID, not STALE.
    respond = (r) => ({ status: 200, body: { ...genuineAnswer(r, licensed(new Date(T0 + 120_000).toISOString())), valid: false, reason: 'REVOKED' } });
    clock.now = T0 + 120_000;
    expect(await c.check()).toMatchObject({ state: 'VALID', reasons: [], noAnswer: null, serverReason: 'REVOKED' });
  });

  it('keeps a negative verdict, whatever its age, until a later verified answer says otherwise', async () => {
    let respond = ok({ status: 'REVOKED', boundAt: licensed().boundAt });
    const { client: c, clock } = client((r) => respond(r));
    expect((await c.check()).state).toBe('INVALID');
    respond = () => ({ status: 503, body: { error: 'down' } });
    clock.now = T0 + (MAX_SECONDS + 86_400) * 1000;
    expect(await c.check()).toMatchObject({ state: 'INVALID', reasons: ['REVOKED'], noAnswer: { code: 'HTTP_STATUS' } });
    respond = ok(licensed(new Date(clock.now).toISOString()));
    expect((await c.check()).state).toBe('VALID');
  });

  it('sends the machine label the application chose, and nothing when it chose none', async () => {
    const labelled = client(ok(), { machineLabel: 'Ada’s laptop' });
    await labelled.client.check();
    expect(labelled.requests[0]!.body.machineLabel).toBe('Ada’s laptop');
  });

  it('refuses a licence signed for another product or organisation, sending nothing', async () => {
    const { client: c, requests } = client(ok(), { productKey: 'other-product' });
    expect(await c.check()).toMatchObject({ state: 'INVALID', reasons: ['WRONG_PRODUCT'] });
    const elsewhere = client(ok(), { slug: 'globex' });
    expect(await elsewhere.client.check()).toMatchObject({ state: 'INVALID', reasons: ['WRONG_PRODUCT'] });
    expect([...requests, ...elsewhere.requests]).toEqual([]);
    expect((await client(ok(), { productKey: 'cad' }).client.check()).state).toBe('VALID');
  });

  it('refuses a stored term older than one already seen for the licence', async () => {
    const lid = '5b7c0a52-1111-4222-8333-444455556666';
    const store = memoryStore();
    const newer = onlineLicence({ lid, iat: T0 / 1000 - 86_400 });
    const older = onlineLicence({ lid, iat: T0 / 1000 - 86_400 * 40 });
    expect((await client(ok(), { licence: newer, store }).client.check()).state).toBe('VALID');
    const rolledBack = client(ok(), { licence: older, store });
    expect(await rolledBack.client.check()).toMatchObject({ state: 'INVALID', reasons: ['OLDER_TERM'] });
    expect(rolledBack.requests).toEqual([]);
  });

  it('keeps the newest term seen and the clock offset through release() and clearCache()', async () => {
    const lid = '5b7c0a52-1111-4222-8333-444455556667';
    const store = memoryStore();
    const newer = onlineLicence({ lid, iat: T0 / 1000 - 86_400 });
    const older = onlineLicence({ lid, iat: T0 / 1000 - 86_400 * 40 });
    const released = (request: SentRequest): Answer =>
      request.url.endsWith('/release')
        ? { status: 200, body: { lid, released: true, releasedAt: new Date(T0).toISOString(), nonce: request.body.nonce } }
        : ok(licensed(new Date(T0 + 5_000).toISOString()))(request);
    const here = client(released, { licence: newer, store });
    const first = await here.client.check();
    expect(first.state).toBe('VALID');
    const key = keyOf(first.licence.claims);
    expect(await here.client.release()).toEqual({ released: true, releasedAt: new Date(T0).toISOString() });
    expect(await store.load(key)).toEqual({ newestIat: T0 / 1000 - 86_400, offsetMs: 5_000, answer: null });

    const rolledBack = client(ok(), { licence: older, store });
    expect(await rolledBack.client.check()).toMatchObject({ state: 'INVALID', reasons: ['OLDER_TERM'], answer: null });
    expect(rolledBack.requests).toEqual([]);

    await here.client.check();
    await here.client.clearCache();
    expect(await store.load(key)).toEqual({ newestIat: T0 / 1000 - 86_400, offsetMs: 5_000, answer: null });
    expect(await client(ok(), { licence: older, store }).client.check()).toMatchObject({ state: 'INVALID', reasons: ['OLDER_TERM'] });
  });

  describe('counts a forged or failed answer as no answer', () => {
    const forgeries: Array<[string, (request: SentRequest) => Answer | Promise<Answer>, string]> = [
      [
        'a status changed to ACTIVE',
        (r) => ({ status: 200, body: { ...genuineAnswer(r, { status: 'REVOKED', boundAt: 'x' }), status: 'ACTIVE', valid: true } }),
        'BAD_RECEIPT',
      ],
      ['a receipt for another nonce', ok(licensed(), { nonce: 'another_nonce_0123456789' }), 'BAD_RECEIPT'],
      ['a receipt for another machine', ok(licensed(), { fingerprint: otherFingerprint }), 'BAD_RECEIPT'],
      ['a receipt for another licence of the product', ok(licensed(), { lid: '7d1e4c1a-0000-4000-8000-000000000000' }), 'BAD_RECEIPT'],
      ['a receipt signed by another key', ok(licensed(), { key: otherKeys.privateKey }), 'BAD_RECEIPT'],
      ['a receipt that is not base64url', (r) => ({ status: 200, body: { ...genuineAnswer(r, licensed()), receipt: 'a+b/c=' } }), 'BAD_RECEIPT'],
      ['a forged 403', () => ({ status: 403, body: { error: 'licence revoked', valid: false, status: 'REVOKED' } }), 'HTTP_STATUS'],
      ['a 401', () => ({ status: 401, body: { error: 'bad token' } }), 'HTTP_STATUS'],
      ['a 429', () => ({ status: 429, body: { error: 'slow down' } }), 'HTTP_STATUS'],
      ['a 500', () => ({ status: 500, body: { error: 'internal error' } }), 'HTTP_STATUS'],
      ['a 200 that is not JSON', () => ({ status: 200, body: '<html>' }), 'BAD_RESPONSE'],
      ['a 200 without a receipt', (r) => ({ status: 200, body: { ...genuineAnswer(r, licensed()), receipt: undefined } }), 'BAD_RESPONSE'],
      ['a timeout', () => new Promise<Answer>(() => {}), 'TIMEOUT'],
      ['a network failure', () => Promise.reject(new TypeError('fetch failed')), 'NETWORK'],
    ];

    it.each(forgeries)('%s', async (_name, respond, code) => {
      // First a genuine answer, an hour later the forgery: the state rests on the genuine one.
      let forged = false;
      const { client: c, clock, store } = client((request) => (forged ? respond(request) : ok()(request)));
      const genuine = await c.check();
      forged = true;
      clock.now = T0 + 3_600_000;
      const result = await c.check();
      expect(result.noAnswer?.code).toBe(code);
      expect(result).toMatchObject({ state: 'VALID', ageSeconds: 3600, renewed: false });
      expect(result.answer).toMatchObject({ fresh: false, nonce: genuine.answer!.nonce });
      expect((await store.load(keyOf(genuine.licence.claims))).answer).toMatchObject({ nonce: genuine.answer!.nonce });
      if (code === 'HTTP_STATUS') expect(result.noAnswer?.status).toBeGreaterThanOrEqual(400);

      // With nothing verified before, the same answer leaves the licence STALE, never INVALID.
      const fresh = client(respond);
      expect(await fresh.client.check()).toMatchObject({ state: 'STALE', answer: null, noAnswer: { code } });
    });
  });

  it('turns STALE once checkMaxSeconds pass without a verified answer', async () => {
    let up = true;
    const { client: c, clock } = client((request) => (up ? ok()(request) : { status: 503, body: { error: 'down' } }));
    await c.check();
    up = false;
    clock.now = T0 + MAX_SECONDS * 1000;
    expect(await c.check()).toMatchObject({ state: 'VALID', ageSeconds: MAX_SECONDS });
    clock.now = T0 + MAX_SECONDS * 1000 + 1000;
    expect(await c.check()).toMatchObject({ state: 'STALE', ageSeconds: MAX_SECONDS + 1, noAnswer: { code: 'HTTP_STATUS', status: 503 } });
    up = true;
    expect((await c.check()).state).toBe('VALID');
  });

  it.each([
    ['5 minutes behind', -300_000],
    ['5 minutes ahead', 300_000],
  ])("takes a client clock %s for skew, not rollback, and ages answers in the service's time", async (_name, skew) => {
    let up = true;
    // The service signs T0 while this machine's clock reads T0 + skew.
    const { client: c, clock } = client((request) => (up ? ok(licensed(new Date(T0).toISOString()))(request) : { status: 500, body: {} }));
    clock.now = T0 + skew;
    expect(await c.check()).toMatchObject({ state: 'VALID', clockRollback: false });
    up = false;
    clock.now = T0 + skew + 1000;
    expect(await c.check()).toMatchObject({ state: 'VALID', clockRollback: false, ageSeconds: 1 });
    clock.now = T0 + skew + (MAX_SECONDS + 1) * 1000;
    expect(await c.check()).toMatchObject({ state: 'STALE', clockRollback: false, ageSeconds: MAX_SECONDS + 1 });
    // Winding the clock back past the answer is still a rollback.
    clock.now = T0 + skew - 600_000;
    expect(await c.check()).toMatchObject({ state: 'STALE', clockRollback: true });
  });

  it('detects a clock rolled back before the last verified checkedAt', async () => {
    let up = true;
    const { client: c, clock } = client((request) => (up ? ok()(request) : { status: 500, body: {} }));
    await c.check();
    up = false;
    clock.now = T0 - 86_400_000;
    expect(await c.check()).toMatchObject({ state: 'STALE', clockRollback: true, ageSeconds: -86_400 });
    // A fresh answer proves itself by its nonce, and the rollback is still reported.
    up = true;
    expect(await c.check()).toMatchObject({ state: 'VALID', clockRollback: true });
    clock.now = T0 + 1000;
    expect(await c.check()).toMatchObject({ state: 'VALID', clockRollback: false });
  });

  it('ignores a cached answer that was edited, or belongs to another machine', async () => {
    const { client: c, store } = client(ok());
    const { licence } = await c.check();
    const key = keyOf(licence.claims);
    const saved = await store.load(key);
    const offline = client(() => ({ status: 500, body: {} }), { store, licence: c.licence, clock: () => T0 + 1000 });
    expect((await offline.client.check()).state).toBe('VALID');

    await store.update(key, () => ({ ...saved, answer: { ...saved.answer!, checkedAt: new Date(T0 + 86_400_000).toISOString() } }));
    expect(await offline.client.check()).toMatchObject({ state: 'STALE', answer: null });

    await store.update(key, () => saved);
    const elsewhere = client(() => ({ status: 500, body: {} }), { store, licence: c.licence, fingerprint: otherFingerprint });
    expect(await elsewhere.client.check()).toMatchObject({ state: 'STALE', answer: null });
  });

  it('treats a store that fails to load as empty, and reports one that fails to save', async () => {
    const broken: StateStore = {
      load: () => Promise.reject(new Error('disk gone')),
      update: () => Promise.reject(new Error('read-only')),
    };
    const { client: c } = client(ok(), { store: broken });
    const result = await c.check();
    expect(result.state).toBe('VALID');
    expect(result.storeError?.message).toBe('read-only');
  });

  it('never sends a licence that fails offline', async () => {
    const expired = onlineLicence({ iat: T0 / 1000 - 400 * 86_400, exp: T0 / 1000 - 10 * 86_400, grace: 7 });
    const { client: c, requests } = client(ok(), { licence: expired });
    expect(await c.check()).toMatchObject({ state: 'INVALID', reasons: ['EXPIRED'], noAnswer: null });
    const forged = client(ok(), { licence: onlineLicence({}, otherKeys.privateKey) });
    expect(await forged.client.check()).toMatchObject({ state: 'INVALID', reasons: ['BAD_SIGNATURE'] });
    expect(requests).toHaveLength(0);
    expect(forged.requests).toHaveLength(0);
  });

  it('refuses options it cannot work with', () => {
    const offline = onlineLicence({ typ: 'OFFLINE' });
    const attempt = (options: Partial<LicenceClientOptions>) => {
      try {
        client(ok(), options);
      } catch (error) {
        return (error as LicensorError).code;
      }
      return 'none';
    };
    expect(attempt({ licence: offline })).toBe('NOT_CHECKABLE');
    expect(attempt({ checkToken: `svcc_othercheckid1_${'a'.repeat(64)}` })).toBe('INVALID_OPTIONS');
    expect(attempt({ baseUrl: '' })).toBe('INVALID_OPTIONS');
    expect(attempt({ publicKeyPem: 'nope' })).toBe('INVALID_KEY');
  });
});

describe('LicenceClient.fetch', () => {
  it('is never called by check', async () => {
    const { client: c, requests } = client((request) => ({
      status: 200,
      body: { ...genuineAnswer(request, licensed()), valid: false, reason: 'SUPERSEDED', renewed: true },
    }));
    await c.check();
    expect(requests.map((r) => r.url.split('/').pop())).toEqual(['check']);
  });

  it('returns the new term after verifying it, and uses it from then on', async () => {
    const old = onlineLicence();
    const lid = JSON.parse(Buffer.from(old.split('.')[0]!, 'base64url').toString()).lid as string;
    const renewed = onlineLicence({ lid, exp: T0 / 1000 + 800 * 86_400 });
    const { client: c, requests } = client((request) => (request.url.endsWith('/fetch') ? { status: 200, body: { license: renewed } } : ok()(request)), {
      licence: old,
    });
    expect(await c.fetch()).toBe(renewed);
    expect(requests[0]!.url).toBe('https://licensing.example.com/o/acme/api/public/license/abc123def456/fetch');
    expect(requests[0]!.body).toEqual({ license: old, fingerprint: myFingerprint });
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${checkToken}`);
    expect(c.licence).toBe(renewed);
    await c.check();
    expect(requests[1]!.body.license).toBe(renewed);
  });

  it('refuses a term older than the one in use, keeping the one in use', async () => {
    const lid = '6c8d1b63-2222-4333-8444-555566667777';
    const current = onlineLicence({ lid, iat: T0 / 1000 - 86_400 });
    const superseded = onlineLicence({ lid, iat: T0 / 1000 - 86_400 * 60 });
    const { client: c } = client((request) => (request.url.endsWith('/fetch') ? { status: 200, body: { license: superseded } } : ok()(request)), {
      licence: current,
    });
    await c.check();
    await expect(c.fetch()).rejects.toMatchObject({ name: 'LicensorError', code: 'OLDER_TERM' });
    expect(c.licence).toBe(current);
  });

  it('remembers a fetched term before any answer was kept, so the older one is refused from then on', async () => {
    const lid = '6c8d1b63-2222-4333-8444-555566667778';
    const store = memoryStore();
    const current = onlineLicence({ lid, iat: T0 / 1000 - 86_400 * 60 });
    const renewed = onlineLicence({ lid, iat: T0 / 1000 - 86_400 });
    const { client: c } = client(() => ({ status: 200, body: { license: renewed } }), { licence: current, store });
    expect(await c.fetch()).toBe(renewed);
    const restarted = client(ok(), { licence: current, store });
    expect(await restarted.client.check()).toMatchObject({ state: 'INVALID', reasons: ['OLDER_TERM'] });
    expect(restarted.requests).toEqual([]);
  });

  it.each([
    ['a licence signed by another key', () => ({ status: 200, body: { license: onlineLicence({}, otherKeys.privateKey) } }), 'BAD_LICENCE'],
    ['another licence of the product', () => ({ status: 200, body: { license: onlineLicence() } }), 'LID_MISMATCH'],
    ['a body without a licence', () => ({ status: 200, body: { licence: 'x' } }), 'BAD_RESPONSE'],
    ['a 404 (fetch disabled)', () => ({ status: 404, body: { error: 'not found' } }), 'HTTP_STATUS'],
    ['a 403 (not bound)', () => ({ status: 403, body: { error: 'not bound' } }), 'HTTP_STATUS'],
    ['a timeout', () => new Promise<Answer>(() => {}), 'TIMEOUT'],
  ])('throws for %s and keeps the old term', async (_name, respond, code) => {
    const { client: c } = client(respond as () => Answer);
    const before = c.licence;
    await expect(c.fetch()).rejects.toMatchObject({ name: 'LicensorError', code });
    expect(c.licence).toBe(before);
  });
});

it('LicensorError carries its code and status', () => {
  const error = new LicensorError('HTTP_STATUS', 'the service answered 503', 503);
  expect(error).toBeInstanceOf(Error);
  expect(error).toMatchObject({ code: 'HTTP_STATUS', status: 503, name: 'LicensorError' });
});
