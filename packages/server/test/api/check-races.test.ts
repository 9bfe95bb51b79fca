import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, startHarness, type Harness } from '../harness.js';
import { startServe, stopServe } from '../cli.js';
import { licenceRow } from '../licence-helpers.js';
import { checkBody, checkedProduct, nonce, type CheckedProduct } from '../check-helpers.js';

let h: Harness;
let p: CheckedProduct;

beforeAll(async () => {
  h = await startHarness();
  p = await checkedProduct(h);
});
afterAll(() => h?.close());

const parallel = <T>(n: number, run: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => run(i)));

async function seatsAndAudits(lid: string) {
  const licence = await licenceRow(h, lid);
  const seats = await h.database.db.selectFrom('machine_bindings').selectAll().where('licence_id', '=', licence.id).where('released_at', 'is', null).execute();
  const bound = await h.database.db.selectFrom('audit_entries').selectAll().where('lid', '=', lid).where('action', '=', 'machine.bound').execute();
  return { seats: seats.length, audits: bound.length };
}

/** Twenty machines on a three-seat licence, then twenty checks from one machine on another, through `send`. */
async function race(send: (i: number, body: unknown) => Promise<{ statusCode: number; data: any }>) {
  const shared = await p.issue({ maxMachines: 3 });
  const answers = await parallel(20, (i) => send(i, checkBody(shared.licenseString, `racer-${i}`)));
  expect(answers.map((a) => a.statusCode)).toEqual(answers.map(() => 200));
  expect(answers.filter((a) => a.data.valid)).toHaveLength(3);
  expect(answers.filter((a) => a.data.reason === 'SEATS_FULL')).toHaveLength(17);
  expect(await seatsAndAudits(shared.lid)).toEqual({ seats: 3, audits: 3 });

  const single = await p.issue({ maxMachines: 3 });
  const body = checkBody(single.licenseString, 'one-machine');
  const same = await parallel(20, (i) => send(i, { ...body, nonce: nonce() }));
  expect(same.every((a) => a.data.valid)).toBe(true);
  expect(new Set(same.map((a) => a.data.boundAt)).size).toBe(1);
  expect(await seatsAndAudits(single.lid)).toEqual({ seats: 1, audits: 1 });
}

describe('checks arriving together', () => {
  // On PostgreSQL their licence reads go to the database as one statement (check/licence-reads.ts).
  it('each get the verdict of their own licence, product and machine', async () => {
    const other = await checkedProduct(h);
    const [bound, revoked, mismatched, elsewhere] = await Promise.all([p.issue(), p.issue(), p.issue(), other.issue()]);
    for (const [product, licence] of [
      [p, bound],
      [p, revoked],
      [p, mismatched],
      [other, elsewhere],
    ] as const)
      expect((await product.check(checkBody(licence.licenseString, `home-${licence.lid}`))).data.valid).toBe(true);
    await h.admin('POST', `/licenses/${revoked.lid}/revoke`, { reason: 'refund' });
    const asked = [
      () => p.check(checkBody(bound.licenseString, `home-${bound.lid}`)),
      () => p.check(checkBody(revoked.licenseString, `home-${revoked.lid}`)),
      () => p.check(checkBody(mismatched.licenseString, 'a stranger')),
      () => other.check(checkBody(elsewhere.licenseString, `home-${elsewhere.lid}`)),
    ];
    for (let round = 0; round < 3; round++) {
      const answers = await parallel(12, (i) => asked[i % 4]!());
      expect(answers.map((a) => [a.statusCode, a.data.lid, a.data.reason ?? null])).toEqual(
        answers.map((_, i) => [200, [bound, revoked, mismatched, elsewhere][i % 4].lid, [null, 'REVOKED', 'FINGERPRINT_MISMATCH', null][i % 4]]),
      );
    }
  });
});

describe('binding under concurrency', () => {
  it('binds exactly the free seats, and one seat per machine, in one process', async () => {
    await race((_i, body) => p.check(body));
  });

  // Several processes on one database is how PostgreSQL deployments scale; SQLite serves one process.
  if (backend === 'postgres')
    describe('through two service processes sharing one PostgreSQL', () => {
      const children: ChildProcess[] = [];
      const urls: string[] = [];
      // Started before the test, under the hooks' longer timeout: two starts on a loaded machine take a while.
      beforeAll(async () => {
        for (let i = 0; i < 2; i++) {
          const serve = await startServe({ ...h.env, LOG_LEVEL: 'info' });
          children.push(serve.child);
          urls.push(serve.url);
        }
      });
      afterAll(() => Promise.all(children.map(stopServe)));

      it('binds exactly the free seats, and one seat per machine', async () => {
        await race(async (i, body) => {
          const response = await fetch(`${urls[i % 2]}/o/${h.slug}/api/public/license/${p.checkId}/check`, {
            method: 'POST',
            headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          return { statusCode: response.status, data: await response.json() };
        });
      });
    });
});
