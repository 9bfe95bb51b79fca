import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transaction } from '../../src/db/database.js';
import { queueLicenceEmail } from '../../src/mail/queue.js';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { startHarness, type Harness } from '../harness.js';
import { createProduct, issueOk } from '../licence-helpers.js';
import { parseMime, startSmtp } from '../mail-helpers.js';

let h: Harness;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let product: { id: number };
let orgId: number;
let platformCookie: string;

const platform = (body: unknown) => h.request('PUT', '/platform/api/organisations/acme', { cookies: { svc_platform: platformCookie }, body });
const queue = (lid: string, trigger: 'issued' | 'renewed' = 'issued') =>
  transaction(h.database, (trx) => queueLicenceEmail(trx, { orgId: String(orgId), lid, trigger, actor: 'integration/stripe-live' }));
const issue = (n: string) => issueOk(h.admin, { productId: product.id, licensee: `Buyer ${n}`, licenseeEmail: `buyer-${n}@customer.example` });
/** Moves every admitted email a day back, as if the day had passed (the sessions stay signed in). */
const dayPasses = () =>
  h.database.db
    .updateTable('emails')
    .set((eb) => ({ admitted_at: eb('admitted_at', '-', 86_401_000), created_at: eb('created_at', '-', 86_401_000) }))
    .where('admitted_at', 'is not', null)
    .execute();
const sentTo = () => smtp.received.map((m) => parseMime(m.raw).headers.to);

beforeAll(async () => {
  smtp = await startSmtp();
  h = await startHarness({ ...smtp.env, LICENSOR_MAIL_DAILY_LIMIT: '2' });
  await h.app.mail.stop();
  product = await createProduct(h.admin);
  orgId = Number((await h.database.db.selectFrom('organisations').select('id').where('slug', '=', 'acme').executeTakeFirstOrThrow()).id);
  await createPlatformAccount(h.database, { username: 'ops', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
  const login = await h.request('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'platform password 1' } });
  platformCookie = login.cookies.find((c) => c.name === 'svc_platform')!.value;
});
afterAll(async () => {
  await h?.close();
  await smtp?.close();
});

describe("an integration's licence emails (queueLicenceEmail, DESIGN 22)", () => {
  it('queues in the caller\'s transaction; past the daily limit held pending "daily mail limit", admitted oldest first when the count allows', async () => {
    const [a, b, c] = [await issue('a'), await issue('b'), await issue('c')];
    const first = await queue(a.lid);
    expect(first).toMatchObject({ to: 'buyer-a@customer.example', trigger: 'issued', status: 'pending', createdBy: 'integration/stripe-live' });
    await queue(b.lid, 'renewed');
    const held = await queue(c.lid);
    expect(held).toMatchObject({ status: 'pending', lastError: 'daily mail limit', nextAttemptAt: null });
    await h.app.mail.drain();
    expect(sentTo().sort()).toEqual(['buyer-a@customer.example', 'buyer-b@customer.example']);
    // The manual send is refused while the day's count is full.
    expect((await h.admin('POST', `/licenses/${c.lid}/send`)).statusCode).toBe(429);
    await dayPasses();
    await h.app.mail.drain();
    expect(sentTo()).toContain('buyer-c@customer.example');
    const [record] = (await h.admin('GET', `/licenses/${c.lid}/emails`)).data;
    expect(record).toMatchObject({ id: held!.id, status: 'sent', lastError: null });
  });

  it('queues nothing for a licence without customer email, or while the platform turned mail off (PUT mailEnabled), and holds pending ones', async () => {
    await dayPasses();
    const noEmail = await issueOk(h.admin, { productId: product.id, licensee: 'No Mail Ltd' });
    expect(await queue(noEmail.lid)).toBeNull();
    const pending = await issue('held');
    await queue(pending.lid);
    const off = await platform({ mailEnabled: false });
    expect([off.statusCode, off.data.mailEnabled]).toEqual([200, false]);
    const later = await issue('off');
    expect(await queue(later.lid)).toBeNull();
    const refused = await h.admin('POST', `/licenses/${later.lid}/send`);
    expect([refused.statusCode, refused.data.reason]).toEqual([403, 'MAIL_DISABLED']);
    await h.app.mail.drain();
    expect(sentTo()).not.toContain('buyer-held@customer.example');
    expect((await platform({ mailEnabled: true })).data.mailEnabled).toBe(true);
    await h.app.mail.drain();
    expect(sentTo()).toContain('buyer-held@customer.example');
  });

  it('goes on sending for a suspended organisation, whose members get 403 ORG_SUSPENDED', async () => {
    await dayPasses();
    const licence = await issue('suspended');
    await queue(licence.lid);
    expect((await platform({ suspended: true })).statusCode).toBe(200);
    try {
      for (const [method, path] of [
        ['POST', `/licenses/${licence.lid}/send`],
        ['POST', '/settings/mail/test'],
        ['PUT', '/settings'],
      ] as const) {
        const answer = await h.admin(method, path, method === 'PUT' ? { mail: { subject: 'x' } } : undefined);
        expect([answer.statusCode, answer.data.reason], path).toEqual([403, 'ORG_SUSPENDED']);
      }
      await h.app.mail.drain();
      expect(sentTo()).toContain('buyer-suspended@customer.example');
    } finally {
      await platform({ suspended: false });
    }
  });
});
