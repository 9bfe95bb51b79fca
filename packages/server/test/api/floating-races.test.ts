// DESIGN.md 13: concurrent checks on several instances never hold more live leases than maxMachines.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveBinding } from '../../src/seats/live.js';
import { startHarness, type Harness } from '../harness.js';
import { startServe, stopServe } from '../cli.js';
import { checkBody, checkedProduct, type CheckedProduct } from '../check-helpers.js';
import { licenceRow } from '../licence-helpers.js';

let h: Harness;
let p: CheckedProduct;
const urls: string[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  h = await startHarness();
  p = await checkedProduct(h, { seatModel: 'FLOATING', allowedLicenceTypes: ['ONLINE'], leaseSeconds: 300 });
  // Two service processes on the harness's database (SQLite file or PostgreSQL schema), as two instances.
  for (let i = 0; i < 2; i++) {
    const serve = await startServe({ ...h.env, LOG_LEVEL: 'info', LICENSOR_CHECK_RATE_ADDRESS: '0', LICENSOR_CHECK_RATE_PRODUCT: '0' });
    children.push(serve.child);
    urls.push(serve.url);
  }
}, 60_000);
afterAll(async () => {
  await Promise.all(children.map(stopServe));
  await h?.close();
});

async function check(i: number, body: unknown) {
  const response = await fetch(`${urls[i % 2]}/o/${h.slug}/api/public/license/${p.checkId}/check`, {
    method: 'POST',
    headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, data: (await response.json()) as { valid: boolean; reason?: string; retryAfterSeconds?: number } };
}

describe('fifty machines on a five-seat floating licence, through two service processes', () => {
  it('end with exactly five live leases, every time', async () => {
    for (let round = 0; round < 20; round++) {
      const licence = await p.issue({ maxMachines: 5 });
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => check(i, checkBody(licence.licenseString, `round-${round}-machine-${i}`))));
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
      expect(answers.filter((a) => a.data.valid)).toHaveLength(5);
      const full = answers.filter((a) => a.data.reason === 'SEATS_FULL');
      expect(full).toHaveLength(45);
      // Counted from the refused check's own clock, which may be read a moment before the lease it lost to began.
      expect(full.map((a) => a.data.retryAfterSeconds).filter((s) => !(s! > 0 && s! <= 301))).toEqual([]);

      const row = await licenceRow(h, licence.lid);
      const live = await h.database.db
        .selectFrom('machine_bindings')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('licence_id', '=', row.id)
        .where(liveBinding('machine_bindings', Date.now()))
        .executeTakeFirstOrThrow();
      expect(Number(live.n)).toBe(5);
      const bound = await h.database.db.selectFrom('audit_entries').select('id').where('lid', '=', licence.lid).where('action', '=', 'machine.bound').execute();
      expect(bound).toHaveLength(5);
    }
  }, 240_000);
});
