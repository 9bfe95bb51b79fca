// startTrial() and a trial's judgement (DESIGN.md 18) against a fake trial endpoint whose answers
// are built as the service builds them: the trial licence plus a check of that term.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fpDigest, signLicence, signReceipt, type ClaimsInput } from '@licensor/protocol';
import { fileStore, LicenceClient, LicensorError, memoryStore, type TrialOptions } from '@licensor/sdk';
import {
  checkToken,
  fakeFetch,
  genuineAnswer,
  keys,
  licensed,
  testClient,
  myFingerprint,
  otherFingerprint,
  otherKeys,
  publicKeyPem,
  T0,
  type Answer,
  type SentRequest,
} from './fake-service.js';

const DAY = 86_400_000;
const LID = randomUUID();

/** A trial licence as the service signs it: ONLINE, grace 0, this machine's fp, `trl` after `max`. */
function trialLicence(overrides: Partial<ClaimsInput> = {}, trl: string | boolean | null = true, key: KeyObject = keys.privateKey): string {
  const iat = T0 / 1000;
  return signLicence(
    {
      lid: LID,
      prd: 'cad',
      org: 'acme',
      typ: 'ONLINE',
      iat,
      exp: iat + 14 * 86_400,
      grace: 0,
      fp: myFingerprint,
      fpn: 3,
      mm: 1,
      chk: 3600,
      max: 86_400,
      params: { trl },
      ...overrides,
    },
    key,
  );
}

/** The service's answer to a start (or a check of the trial): the term and its SVCR1 receipt for this request. */
function trialAnswer(
  request: SentRequest,
  licence = trialLicence(),
  signed: { status?: string; checkedAt?: number; nonce?: string } = {},
  extra: Record<string, unknown> = {},
) {
  const fields = {
    lid: LID,
    status: signed.status ?? 'ACTIVE',
    nonce: signed.nonce ?? request.body.nonce!,
    checkedAt: new Date(signed.checkedAt ?? T0).toISOString(),
    boundAt: new Date(T0).toISOString(),
    fpDigest: fpDigest(request.body.fingerprint!),
  };
  return {
    license: licence,
    valid: fields.status === 'ACTIVE',
    lid: LID,
    status: fields.status,
    checkedAt: fields.checkedAt,
    serverTime: fields.checkedAt,
    boundAt: fields.boundAt,
    nonce: fields.nonce,
    receipt: signReceipt(fields, keys.privateKey, 'SVCR1'),
    ...extra,
  };
}

function trialClient(respond: (request: SentRequest) => Answer | Promise<Answer>, options: Partial<TrialOptions> = {}) {
  const { fetchImpl, requests } = fakeFetch(respond);
  const clock = { now: T0 };
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'licensor-sdk-trial-'));
  const config: TrialOptions = {
    baseUrl: 'https://licensing.example.com/',
    slug: 'acme',
    productKey: 'cad',
    checkId: 'abc123def456',
    checkToken,
    publicKeyPem,
    fingerprint: myFingerprint,
    fetchImpl,
    store: fileStore(stateDir),
    clock: () => clock.now,
    timeoutMs: 500,
    ...options,
  };
  return { start: (email?: string) => LicenceClient.startTrial(config, email === undefined ? {} : { email }), requests, clock, config };
}

const started =
  (status = 201, licence?: string, signed?: Parameters<typeof trialAnswer>[2], extra?: Record<string, unknown>) =>
  (request: SentRequest): Answer => ({
    status,
    body: trialAnswer(request, licence, signed, extra),
  });

async function refusal(promise: Promise<unknown>): Promise<LicensorError> {
  const error = await promise.then(
    () => expect.fail('expected a refusal'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LicensorError);
  return error as LicensorError;
}

describe('LicenceClient.startTrial', () => {
  it('sends this machine, a nonce, the device key and the email to the trial endpoint, and holds the trial', async () => {
    const { start, requests } = trialClient(started());
    const trial = await start('ada@example.com');
    const [sent] = requests;
    expect(sent!.url).toBe('https://licensing.example.com/o/acme/api/public/license/abc123def456/trial');
    expect(sent!.headers.authorization).toBe(`Bearer ${checkToken}`);
    expect(Object.keys(sent!.body).sort()).toEqual(['devicePublicKey', 'email', 'fingerprint', 'nonce']);
    expect(sent!.body).toMatchObject({ fingerprint: myFingerprint, email: 'ada@example.com' });
    expect(sent!.body.devicePublicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(trial).toMatchObject({ created: true, licence: trialLicence(), endsAt: new Date(T0 + 14 * DAY).toISOString() });
    expect(trial.result).toMatchObject({
      state: 'VALID',
      reasons: [],
      trial: { endsAt: new Date(T0 + 14 * DAY).toISOString(), secondsLeft: 14 * 86_400, converted: false },
    });
    expect(trial.client.licence).toBe(trialLicence());
  });

  it('sends the same device key every time, and no email when none is given', async () => {
    const { start, requests } = trialClient(started(200));
    expect((await start()).created).toBe(false);
    await start();
    expect(requests[0]!.body.email).toBeUndefined();
    expect(requests[1]!.body.devicePublicKey).toBe(requests[0]!.body.devicePublicKey);
  });

  it.each([
    ['TRIALS_OFF', { error: 'this product offers no trials', reason: 'TRIALS_OFF' }, { code: 'TRIALS_OFF' }],
    [
      'TRIAL_USED',
      { error: 'this machine had a trial', reason: 'TRIAL_USED', matched: ['machine', 'disk'] },
      { code: 'TRIAL_USED', matched: ['machine', 'disk'] },
    ],
    ['another 403', { error: 'product inactive' }, { code: 'HTTP_STATUS', status: 403 }],
  ])('a 403 %s is its own code', async (_name, body, expected) => {
    const { start } = trialClient(() => ({ status: 403, body }));
    expect(await refusal(start())).toMatchObject(expected);
  });

  it('a 429 is HTTP_STATUS with retryAfterSeconds', async () => {
    const limited = (async () =>
      new Response(JSON.stringify({ error: 'too many trials', reason: 'TRIAL_LIMIT' }), { status: 429, headers: { 'retry-after': '3600' } })) as typeof fetch;
    const { start } = trialClient(() => ({ status: 200, body: {} }), { fetchImpl: limited });
    expect(await refusal(start())).toMatchObject({ code: 'HTTP_STATUS', status: 429, retryAfterSeconds: 3600, reason: 'TRIAL_LIMIT' });
    // Without the header (or with a date), no retryAfterSeconds.
    const bare = (async () => new Response('{"error":"too many trials"}', { status: 429 })) as typeof fetch;
    expect((await refusal(trialClient(() => ({ status: 200, body: {} }), { fetchImpl: bare }).start())).retryAfterSeconds).toBeUndefined();
  });

  it.each([
    ['no trl', () => trialLicence({}, null)],
    ['trl not the boolean true', () => trialLicence({}, 'true')],
    ['another machine', () => trialLicence({ fp: otherFingerprint })],
    ['another product', () => trialLicence({ prd: 'cam' })],
    ['another key', () => trialLicence({}, true, otherKeys.privateKey)],
  ])('refuses a licence with %s (BAD_LICENCE)', async (_name, licence) => {
    const { start } = trialClient(started(201, licence()));
    expect((await refusal(start())).code).toBe('BAD_LICENCE');
  });

  it('refuses a receipt for another nonce (BAD_RECEIPT) and an older term than one seen (OLDER_TERM)', async () => {
    const forged = trialClient(started(201, undefined, { nonce: 'x'.repeat(32) }));
    expect((await refusal(forged.start())).code).toBe('BAD_RECEIPT');

    let licence = trialLicence({ iat: T0 / 1000 + 60 });
    const { start } = trialClient((request) => ({ status: 200, body: trialAnswer(request, licence) }));
    await start();
    licence = trialLicence();
    expect((await refusal(start())).code).toBe('OLDER_TERM');
  });

  it('needs the file store and the product key (INVALID_OPTIONS)', async () => {
    expect((await refusal(trialClient(started(), { store: memoryStore() }).start())).code).toBe('INVALID_OPTIONS');
    expect((await refusal(trialClient(started(), { productKey: undefined }).start())).code).toBe('INVALID_OPTIONS');
  });

  it('judges an answered trial that has ended INVALID EXPIRED', async () => {
    const { start } = trialClient(started(200, undefined, { status: 'EXPIRED', checkedAt: T0 + 15 * DAY }));
    const trial = await start();
    expect(trial.result).toMatchObject({ state: 'INVALID', reasons: ['EXPIRED'], trial: { secondsLeft: 0 } });
  });
});

describe('a trial client', () => {
  it('judges the end by the service time: a clock running behind does not stretch it', async () => {
    // The service's clock is twelve hours ahead of this machine's.
    const { start, clock, requests } = trialClient((request) => ({ status: 200, body: trialAnswer(request, undefined, { checkedAt: T0 + DAY / 2 }) }));
    const { client, result } = await start();
    expect(result.trial!.secondsLeft).toBe(13.5 * 86_400);
    clock.now = T0 + 13.75 * DAY;
    const check = await client.check();
    expect(check).toMatchObject({ state: 'INVALID', reasons: ['EXPIRED'], clockRollback: false, trial: { secondsLeft: 0 } });
    expect(requests).toHaveLength(1);
  });

  it('a clock set back never revives an ended trial, and says the clock moved back', async () => {
    let status = 'ACTIVE';
    let checkedAt = T0;
    const { start, clock, requests } = trialClient((request) => ({ status: 200, body: trialAnswer(request, undefined, { status, checkedAt }) }));
    const { client } = await start();
    // This machine's clock says two days before the trial's end; the service signs it has ended.
    clock.now = T0 + 12 * DAY;
    checkedAt = T0 + 15 * DAY;
    status = 'EXPIRED';
    expect(await client.check()).toMatchObject({ state: 'INVALID', reasons: ['EXPIRED'], clockRollback: false });
    clock.now = T0 + DAY;
    const rolledBack = await client.check();
    expect(rolledBack).toMatchObject({ state: 'INVALID', reasons: ['EXPIRED'], clockRollback: true, trial: { secondsLeft: 0 } });
    expect(requests).toHaveLength(2);
  });

  it("carries the last answer's converted, kept with the answer", async () => {
    const { start, clock, config } = trialClient(started(200, undefined, {}, { converted: true }));
    const { client, result } = await start();
    expect(result.trial!.converted).toBe(true);
    clock.now = T0 + 3600_000;
    const down = new LicenceClient({ ...config, licence: client.licence, fetchImpl: (async () => new Response('', { status: 503 })) as typeof fetch });
    expect(await down.check()).toMatchObject({
      state: 'VALID',
      noAnswer: { code: 'HTTP_STATUS' },
      trial: { converted: true, secondsLeft: 14 * 86_400 - 3600 },
    });
  });

  it('has no trial block for a licence without trl', async () => {
    const { client } = testClient((request) => ({ status: 200, body: genuineAnswer(request, licensed()) }));
    expect((await client.check()).trial).toBeNull();
  });
});
