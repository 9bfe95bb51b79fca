import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, startHarness, type Harness } from '../harness.js';
import { startServe, stopServe } from '../cli.js';
import { machine, startBody, trialProduct } from '../trial-helpers.js';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const parallel = <T>(n: number, run: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => run(i)));
const statuses = (answers: Array<{ statusCode: number }>) => answers.map((a) => a.statusCode).sort((a, b) => a - b);
const trialsOf = async (productId: number) =>
  Number(
    (
      await h.database.db
        .selectFrom('licences')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('product_id', '=', productId)
        .where('trial', '=', 1)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('trial starts under concurrency', () => {
  it('gives one machine one trial: twenty concurrent starts, one 201', async () => {
    const p = await trialProduct(h);
    const fp = machine('one');
    const answers = await parallel(20, () => p.start(startBody(fp)));
    expect(statuses(answers)).toEqual([...Array(19).fill(200), 201]);
    expect(new Set(answers.map((a) => a.data.lid)).size).toBe(1);
    expect(answers.every((a) => a.data.valid)).toBe(true);
    expect(await trialsOf(p.id)).toBe(1);
  });

  it('gives twenty machines twenty trials', async () => {
    const p = await trialProduct(h);
    const answers = await parallel(20, (i) => p.start(startBody(machine(`many-${i}`))));
    expect(statuses(answers)).toEqual(Array(20).fill(201));
    expect(await trialsOf(p.id)).toBe(20);
  });

  it('gives machines that match each other one trial', async () => {
    const p = await trialProduct(h);
    const answers = await parallel(20, (i) => p.start(startBody(machine('alike', { cpu: `cpu-${i}` }))));
    expect(statuses(answers)).toEqual([...Array(19).fill(200), 201]);
    expect(new Set(answers.map((a) => a.data.lid)).size).toBe(1);
    expect(await trialsOf(p.id)).toBe(1);
  });

  it('never passes the daily limit', async () => {
    const p = await trialProduct(h, { trialDailyLimit: 5 });
    const answers = await parallel(20, (i) => p.start(startBody(machine(`limited-${i}`))));
    expect(statuses(answers)).toEqual([...Array(5).fill(201), ...Array(15).fill(429)]);
    expect(await trialsOf(p.id)).toBe(5);
  });

  // Several processes on one database is how PostgreSQL deployments scale; SQLite serves one process.
  if (backend === 'postgres')
    describe('through two service processes sharing one PostgreSQL', () => {
      const children: ChildProcess[] = [];
      afterAll(() => Promise.all(children.map(stopServe)));

      it('holds the product and address limits exactly, and one trial per machine', async () => {
        const urls: string[] = [];
        for (let i = 0; i < 2; i++) {
          const serve = await startServe({ ...h.env, LOG_LEVEL: 'info' });
          children.push(serve.child);
          urls.push(serve.url);
        }
        const p = await trialProduct(h, { trialDailyLimit: 7, trialAddressDailyLimit: 4 });
        const send = async (i: number, body: unknown) => {
          const response = await fetch(`${urls[i % 2]}/o/${h.slug}/api/public/license/${p.checkId}/trial`, {
            method: 'POST',
            headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          return { statusCode: response.status, data: (await response.json()) as any };
        };
        // Every request comes from 127.0.0.1: the address limit (4) binds before the product's (7).
        const distinct = await parallel(20, (i) => send(i, startBody(machine(`instances-${i}`))));
        expect(statuses(distinct)).toEqual([...Array(4).fill(201), ...Array(16).fill(429)]);
        const q = await trialProduct(h, { trialDailyLimit: 7, trialAddressDailyLimit: null });
        const product = await parallel(20, async (i) => {
          const response = await fetch(`${urls[i % 2]}/o/${h.slug}/api/public/license/${q.checkId}/trial`, {
            method: 'POST',
            headers: { authorization: `Bearer ${q.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(startBody(machine(`instances-q-${i}`))),
          });
          return { statusCode: response.status };
        });
        expect(statuses(product)).toEqual([...Array(7).fill(201), ...Array(13).fill(429)]);
        const fp = machine('instances-one');
        const same = await parallel(20, (i) => send(i, startBody(fp)));
        // The address has its four already: this machine is refused alike on both instances, and starts nothing.
        expect(new Set(same.map((a) => a.statusCode))).toEqual(new Set([429]));
        expect(await trialsOf(p.id)).toBe(4);
        expect(await trialsOf(q.id)).toBe(7);
      }, 120_000);
    });
});
