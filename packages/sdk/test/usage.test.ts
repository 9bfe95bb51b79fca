import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLicence } from '@licensor/protocol';
import { fileStore, LicensorError, memoryStore } from '@licensor/sdk';
import { genuineAnswer, licensed, onlineLicence, otherKeys, T0, testClient, usageAnswer, type Answer, type SentRequest } from './fake-service.js';

const exports = (used: number) => ({ key: 'exports', used, limit: 1000, overage: 0, remaining: 1000 - used, resetsAt: '2026-12-01T00:00:00.000Z' });

/** A usage answer that counts every event it is sent (and signs `exports`' new total). */
function counting(signed: Parameters<typeof usageAnswer>[1] = {}, tweak: Parameters<typeof usageAnswer>[2] = {}) {
  let used = 0;
  return (request: SentRequest): Answer => {
    for (const event of request.body.events) used += event.amount;
    return { status: 200, body: usageAnswer(request, { ...licensed(), meters: [exports(used)], ...signed }, tweak) };
  };
}

function metered(
  respond: (request: SentRequest) => Answer | Promise<Answer>,
  dir = mkdtempSync(path.join(os.tmpdir(), 'licensor-sdk-usage-')),
  licence = onlineLicence(),
) {
  const made = testClient(respond, { store: fileStore(dir), licence });
  const lid = parseLicence(licence).claims.lid;
  const folder = path.join(dir, 'usage', lid);
  const queued = () => {
    try {
      return readdirSync(folder).sort();
    } catch {
      return [];
    }
  };
  return { ...made, dir, lid, folder, queued, licence };
}

const down = (): Answer => {
  throw new TypeError('fetch failed');
};

describe('recordUsage', () => {
  it('queues the event as one file before sending it, then removes it once its receipt verifies', async () => {
    const seen: string[][] = [];
    const respond = counting();
    const { client, folder, queued, requests } = metered((request) => {
      seen.push(readdirSync(folder));
      return respond(request);
    });
    const report = await client.recordUsage('exports', 3);
    const [request] = requests;
    expect(request!.url).toBe('https://licensing.example.com/o/acme/api/public/license/abc123def456/usage');
    expect(Object.keys(request!.body).sort()).toEqual(['events', 'fingerprint', 'license', 'nonce']);
    const [event] = request!.body.events;
    expect(Object.keys(event).sort()).toEqual(['amount', 'at', 'id', 'meter']);
    expect(event).toMatchObject({ meter: 'exports', amount: 3, at: new Date(T0).toISOString() });
    expect(event.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(seen).toEqual([[`${event.id}.json`]]);
    expect(queued()).toEqual([]);
    expect(report).toEqual({
      licensed: true,
      reason: null,
      events: [{ id: event.id, meter: 'exports', amount: 3, result: 'ACCEPTED' }],
      meters: [{ ...exports(3), pending: 0 }],
      fresh: true,
      pending: 0,
      noAnswer: null,
      storeError: null,
    });
  });

  it('keeps the event on disk, exactly {id, meter, amount, at}, when there is no answer, and sends it on the next call', async () => {
    let up = false;
    const respond = counting();
    const { client, folder, queued, clock, requests } = metered((request) => (up ? respond(request) : down()));
    const first = await client.recordUsage('exports');
    expect(first).toMatchObject({ licensed: null, reason: null, meters: null, fresh: null, noAnswer: { code: 'NETWORK' } });
    expect(first.events).toEqual([{ id: expect.any(String), meter: 'exports', amount: 1, result: 'QUEUED' }]);
    const file = path.join(folder, `${first.events[0]!.id}.json`);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ id: first.events[0]!.id, meter: 'exports', amount: 1, at: new Date(T0).toISOString() });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(folder).mode & 0o777).toBe(0o700);

    up = true;
    clock.now += 60_000;
    const second = await client.recordUsage('exports', 2);
    // Oldest first, each event sent as stored.
    expect(requests.at(-1)!.body.events).toEqual([
      { id: first.events[0]!.id, meter: 'exports', amount: 1, at: new Date(T0).toISOString() },
      { id: second.events[1]!.id, meter: 'exports', amount: 2, at: new Date(T0 + 60_000).toISOString() },
    ]);
    expect(second).toMatchObject({ fresh: true, noAnswer: null, meters: [{ used: 3, pending: 0 }] });
    expect(second.events.map((e) => e.result)).toEqual(['ACCEPTED', 'ACCEPTED']);
    expect(queued()).toEqual([]);
  });

  it('dates events by the service clock as the last check remembered it', async () => {
    let now = T0 + 5 * 60_000;
    const { client, requests, clock } = metered((request) =>
      request.url.endsWith('/check') ? { status: 200, body: genuineAnswer(request, licensed(new Date(now).toISOString())) } : counting()(request),
    );
    await client.check();
    clock.now += 1000;
    now += 1000;
    await client.recordUsage('exports');
    expect(requests.at(-1)!.body.events[0].at).toBe(new Date(T0 + 5 * 60_000 + 1000).toISOString());
  });

  it('a new client on the same state directory (a restart) sends what the old one queued, and nothing twice', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'licensor-sdk-usage-'));
    const licence = onlineLicence();
    const first = metered(down, dir, licence);
    await first.client.recordUsage('exports', 4);
    expect(first.queued()).toHaveLength(1);
    const respond = counting();
    const second = metered(respond, dir, licence);
    const report = await second.client.usage();
    expect(report.events).toEqual([expect.objectContaining({ amount: 4, result: 'ACCEPTED' })]);
    expect(second.queued()).toEqual([]);
    expect((await second.client.usage()).events).toEqual([]);
    expect(second.requests.at(-1)!.body.events).toEqual([]);
  });

  it.each([
    ['a meter that is not a key', '1exports', 1],
    ['an empty meter', '', 1],
    ['amount 0', 'exports', 0],
    ['a negative amount', 'exports', -1],
    ['a fraction', 'exports', 1.5],
    ['more than 10^9', 'exports', 1_000_000_001],
    ['a string amount', 'exports', '1'],
  ])('refuses %s with INVALID_OPTIONS, queueing and sending nothing', async (_name, meter, amount) => {
    const { client, queued, requests } = metered(counting());
    await expect(client.recordUsage(meter, amount as number)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(queued()).toEqual([]);
    expect(requests).toEqual([]);
  });

  it('needs a state directory: with a memory-only store it is INVALID_OPTIONS', async () => {
    const { client, requests } = testClient(counting(), { store: memoryStore() });
    await expect(client.recordUsage('exports')).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(requests).toEqual([]);
    // usage() still reads the balances.
    expect(await client.usage()).toMatchObject({ licensed: true, events: [], meters: [{ ...exports(0), pending: 0 }], fresh: true });
  });

  it('fails QUEUE_FULL at 1,000 queued events, adding nothing', async () => {
    const { client, folder, queued, requests } = metered(down);
    mkdirSync(folder, { recursive: true });
    for (let i = 0; i < 1000; i++) {
      const id = `event-${String(i).padStart(4, '0')}`;
      writeFileSync(path.join(folder, `${id}.json`), JSON.stringify({ id, meter: 'exports', amount: 1, at: new Date(T0).toISOString() }));
    }
    const error = await client.recordUsage('exports').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LicensorError);
    expect(error).toMatchObject({ code: 'QUEUE_FULL' });
    expect(queued()).toHaveLength(1000);
    expect(requests).toEqual([]);
  });

  it('sends at most 100 events a request, oldest first by at then id', async () => {
    const { client, folder, requests, queued } = metered(counting());
    mkdirSync(folder, { recursive: true });
    const ids: string[] = [];
    for (let i = 0; i < 150; i++) {
      const id = `e${String(149 - i).padStart(3, '0')}`;
      ids.push(id);
      // Two events at each instant: the id decides between them.
      writeFileSync(
        path.join(folder, `${id}.json`),
        JSON.stringify({ id, meter: 'exports', amount: 1, at: new Date(T0 - Math.floor(i / 2) * 1000).toISOString() }),
      );
    }
    const report = await client.recordUsage('exports');
    expect(requests.map((r) => r.body.events.length)).toEqual([100, 51]);
    const sent = requests.flatMap((r) => r.body.events as Array<{ id: string; at: string }>);
    const expected = [...sent].sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || (a.id < b.id ? -1 : 1));
    expect(sent).toEqual(expected);
    expect(sent[0]).toMatchObject({ id: 'e000', at: new Date(T0 - 74_000).toISOString() });
    expect(report.meters).toEqual([{ ...exports(151), pending: 0 }]);
    expect(queued()).toEqual([]);
  });

  it('keeps NOT_LICENSED events and drops every other result; the verdict comes from the signed fields', async () => {
    const { client, queued } = metered((request) => ({
      status: 200,
      body: { ...usageAnswer(request, { status: 'EXPIRED', meters: [exports(0)], result: () => 'NOT_LICENSED' }), valid: true },
    }));
    const report = await client.recordUsage('exports');
    expect(report).toMatchObject({ licensed: false, reason: 'EXPIRED', fresh: true, meters: [{ ...exports(0), pending: 1 }] });
    expect(report.events.map((e) => e.result)).toEqual(['NOT_LICENSED']);
    expect(queued()).toHaveLength(1);

    const results = ['LIMIT_REACHED', 'UNKNOWN_METER', 'TOO_OLD', 'EVENT_LIMIT', 'ID_REUSED'];
    const final = metered((request) => ({ status: 200, body: usageAnswer(request, { ...licensed(), result: () => results.shift()! }) }));
    for (let i = 0; i < 5; i++) await final.client.recordUsage('exports');
    expect(final.queued()).toEqual([]);
  });

  it.each([
    ['a receipt by another key', {}, { key: otherKeys.privateKey }],
    ["another request's nonce", {}, { nonce: 'another-nonce-abcdefgh' }],
    ['other event ids', {}, { ids: ['someone-else'] }],
  ])('treats %s as no answer (BAD_RECEIPT) and keeps the event', async (_name, signed, tweak) => {
    const { client, queued } = metered(counting(signed, tweak));
    expect(await client.recordUsage('exports')).toMatchObject({ noAnswer: { code: 'BAD_RECEIPT' }, fresh: null, licensed: null, meters: null });
    expect(queued()).toHaveLength(1);
  });

  it('treats an altered balance as no answer (BAD_RECEIPT)', async () => {
    const respond = counting();
    const { client, queued } = metered((request) => {
      const answer = respond(request);
      (answer.body as { meters: Array<{ used: number }> }).meters[0]!.used = 0;
      return answer;
    });
    expect((await client.recordUsage('exports')).noAnswer).toMatchObject({ code: 'BAD_RECEIPT' });
    expect(queued()).toHaveLength(1);
  });

  it.each([
    ['a body that is not an object', '[]'],
    ['no receipt', { events: [], meters: [], checkedAt: new Date(T0).toISOString() }],
    [
      'a used count that is not an integer',
      { events: [], meters: [{ key: 'exports', used: 1.5, limit: null, overage: null, remaining: null, resetsAt: null }], checkedAt: 'x', receipt: 'x' },
    ],
  ])('treats %s as no answer (BAD_RESPONSE)', async (_name, body) => {
    const { client, queued } = metered(() => ({ status: 200, body }));
    expect((await client.recordUsage('exports')).noAnswer).toMatchObject({ code: 'BAD_RESPONSE' });
    expect(queued()).toHaveLength(1);
  });

  it("sends nothing before a 429's Retry-After, then sends the queue", async () => {
    let refuse = true;
    const respond = counting();
    const { client, clock, requests, queued } = metered((request) => (refuse ? { status: 429, body: { error: 'too many' } } : respond(request)));
    expect((await client.recordUsage('exports')).noAnswer).toMatchObject({ code: 'HTTP_STATUS', status: 429 });
    refuse = false;
    clock.now += 10_000;
    expect((await client.recordUsage('exports')).noAnswer).toMatchObject({ code: 'HTTP_STATUS', status: 429 });
    expect(requests).toHaveLength(1);
    clock.now += 51_000;
    const report = await client.usage();
    expect(report).toMatchObject({ noAnswer: null, meters: [{ used: 2 }] });
    expect(requests).toHaveLength(2);
    expect(queued()).toEqual([]);
  });

  it('reports the last verified balances with what is queued for them when the service is down', async () => {
    let up = true;
    const respond = counting();
    const { client } = metered((request) => (up ? respond(request) : down()));
    await client.recordUsage('exports', 5);
    up = false;
    expect(await client.recordUsage('exports', 2)).toMatchObject({
      licensed: true,
      fresh: false,
      meters: [{ ...exports(5), pending: 2 }],
      noAnswer: { code: 'NETWORK' },
    });
  });

  it("reports other licences' queued events as pending and never sends them", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'licensor-sdk-usage-'));
    const trial = metered(down, dir);
    await trial.client.recordUsage('exports');
    await trial.client.recordUsage('exports');
    const paid = metered(counting(), dir);
    const report = await paid.client.recordUsage('exports');
    expect(report).toMatchObject({ pending: 2, events: [{ result: 'ACCEPTED' }] });
    expect(paid.requests.flatMap((r) => r.body.events)).toHaveLength(1);
    expect(trial.queued()).toHaveLength(2);
  });

  it('reads the signed meters of the licence (mtr)', () => {
    const mtr = [
      { k: 'exports', p: 'MONTH', l: 1000, o: 0 },
      { k: 'renders', p: 'NONE', l: null, o: null },
    ];
    const { client } = metered(counting(), undefined, onlineLicence({ mtr: mtr as never }));
    expect(client.meters).toEqual([
      { key: 'exports', period: 'MONTH', limit: 1000, overage: 0 },
      { key: 'renders', period: 'NONE', limit: null, overage: null },
    ]);
    expect(metered(counting()).client.meters).toEqual([]);
  });
});
