// DESIGN.md 22: concurrent deliveries on any number of instances never apply an event twice nor issue two licences for one order line.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, stopServe } from '../cli.js';
import { startHarness, type Harness } from '../harness.js';
import { createProduct } from '../licence-helpers.js';
import { invoicePaid, nowS, stripeHeaders } from '../stripe-helpers.js';

const SECRET = 'whsec_two_instances_secret_0123456789';

let h: Harness;
let product: { id: number };
const children: ChildProcess[] = [];
const urls: string[] = [];

// Two `serve` processes over the harness's database (SQLite's instances are processes too), started before the tests.
beforeAll(async () => {
  h = await startHarness();
  product = await createProduct(h.admin);
  for (const serve of await Promise.all([0, 1].map(() => startServe({ ...h.env, LOG_LEVEL: 'info' })))) {
    children.push(serve.child);
    urls.push(serve.url);
  }
});
afterAll(async () => {
  await Promise.all(children.map(stopServe));
  await h?.close();
});

async function connect(name: string, match: string): Promise<number> {
  const created = await h.admin('POST', '/integrations', {
    provider: 'stripe',
    name,
    signingSecret: SECRET,
    sendOnIssue: false,
    mappings: [{ match, productId: product.id }],
  });
  expect(created.statusCode).toBe(201);
  return created.data.id;
}

/** Each payload delivered to the instances in turn, all at once. */
const deliverAtOnce = (id: number, payloads: string[]) =>
  Promise.all(
    payloads.map(async (payload, i) => {
      const response = await fetch(`${urls[i % 2]}/o/${h.slug}/api/hooks/stripe/${id}`, {
        method: 'POST',
        headers: stripeHeaders(payload, SECRET),
        body: payload,
      });
      return { status: response.status, data: (await response.json()) as { eventId: string; outcome: string; duplicate: boolean; lids: string[] } };
    }),
  );

/** Every licence a connection issued, whether or not it linked it. */
const licencesOf = (name: string) => h.database.db.selectFrom('licences').select('lid').where('issued_by', '=', `integration/${name}`).execute();

describe('one Stripe invoice on two instances (DESIGN 22)', () => {
  it('ten deliveries of one invoice.paid at once issue one licence: one applies, nine answer its outcome as repeats', async () => {
    const id = await connect('two-instances', 'price_twice');
    const payload = invoicePaid({ periodEnd: nowS() + 30 * 86_400, lines: [{ price: 'price_twice' }] });
    const answers = await deliverAtOnce(id, Array(10).fill(payload));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.map((a) => a.data.outcome)).toEqual(Array(10).fill('ISSUED'));
    expect(answers.filter((a) => !a.data.duplicate)).toHaveLength(1);
    const lids = new Set(answers.map((a) => JSON.stringify(a.data.lids)));
    expect(lids.size).toBe(1);
    expect(answers[0]!.data.lids).toHaveLength(1);
    expect(await licencesOf('two-instances')).toHaveLength(1);
    const [entry, ...others] = (await h.admin('GET', `/integrations/${id}/events`)).data.items;
    expect(others).toEqual([]);
    expect(entry).toMatchObject({ outcome: 'ISSUED', deliveries: 10, lids: answers[0]!.data.lids });
  });

  it('two events naming one invoice line at once on the two instances issue one licence', async () => {
    const id = await connect('one-line', 'price_oneline');
    const invoice = { invoice: 'in_one_line', subscription: 'sub_one_line', periodEnd: nowS() + 30 * 86_400 };
    const line = [{ price: 'price_oneline', id: 'il_one_line' }];
    const answers = await deliverAtOnce(id, [invoicePaid({ ...invoice, lines: line }), invoicePaid({ ...invoice, lines: line })]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(new Set(answers.map((a) => a.data.eventId)).size).toBe(2);
    // The line is applied once, by whichever event came first; the other finds it applied.
    expect(answers.map((a) => a.data.outcome).sort()).toEqual(['ISSUED', 'UNCHANGED']);
    expect(answers.flatMap((a) => a.data.lids)).toHaveLength(1);
    expect(await licencesOf('one-line')).toHaveLength(1);
  });
});
