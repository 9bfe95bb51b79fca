import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { createProduct, issueOk } from '../licence-helpers.js';
import { decoded, parseMime, startSmtp, type Part } from '../mail-helpers.js';
import { MailOutbox } from '../../src/mail/outbox.js';

let h: Harness;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let product: { id: number; productKey: string };

const emailsOf = async (lid: string) => (await h.admin('GET', `/licenses/${lid}/emails`)).data;
const drain = () => h.app.mail.drain();
const moveClock = (ms: number) => vi.setSystemTime(Date.now() + ms);
const issue = (body: Record<string, unknown> = {}) =>
  issueOk(h.admin, { productId: product.id, licensee: 'Ada Lovelace', licenseeEmail: 'ada@customer.example', notes: 'internal: 40% discount', ...body });
const mailsFor = (emailId: number) => smtp.received.filter((m) => parseMime(m.raw).headers['x-licensor-email-id'] === String(emailId));

beforeAll(async () => {
  smtp = await startSmtp();
  h = await startHarness({
    ...smtp.env,
    LICENSOR_MAIL_FROM_NAME: 'Licensor Cloud',
    LICENSOR_MAIL_DAILY_LIMIT: '8',
    LICENSOR_PUBLIC_URL: 'https://licences.vendor.example',
  });
  product = await createProduct(h.admin, { name: 'Widget Pro' });
  // The tests make every turn themselves (drain), with the clock where they put it.
  await h.app.mail.stop();
});
afterAll(async () => {
  await h?.close();
  await smtp?.close();
});
afterEach(() => {
  vi.useRealTimers();
  smtp.setMode('ok');
});

describe('sending a licence by email (DESIGN 22)', () => {
  it('queues 202, then delivers one mail whose headers, parts and .lic attachment are right, with a working portal link and no secret', async () => {
    await h.admin('PUT', '/settings', { mail: { replyTo: 'support@vendor.example', senderName: 'Acme Sales' } });
    const licence = await issue();
    const queued = await h.admin('POST', `/licenses/${licence.lid}/send`);
    expect(queued.statusCode, queued.body).toBe(202);
    expect(queued.data).toMatchObject({ to: 'ada@customer.example', trigger: 'manual', status: 'pending', attempts: 0, createdBy: 'admin', sentAt: null });
    expect(await drain()).toBe(1);

    const [mail, ...more] = mailsFor(queued.data.id);
    expect(more).toEqual([]);
    expect(mail!.to).toEqual(['ada@customer.example']);
    expect(mail!.from).toBe('licences@vendor.example');
    const message = parseMime(mail!.raw);
    expect(message.headers.from).toMatch(/^"?Acme Sales via Licensor Cloud"? <licences@vendor\.example>$/);
    expect(message.headers['reply-to']).toBe('support@vendor.example');
    expect(message.headers['message-id']).toBe(`<email-${queued.data.id}@licences.vendor.example>`);
    expect(message.headers['x-licensor-lid']).toBe(licence.lid);
    expect(message.headers['auto-submitted']).toBe('auto-generated');
    expect(message.headers.subject).toBe('Your licence for Widget Pro');
    expect(message.headers['content-type']).toMatch(/^multipart\/mixed/);
    const [alternative, attachment] = message.parts as [Part, Part];
    expect(alternative.headers['content-type']).toMatch(/^multipart\/alternative/);
    expect(alternative.parts.map((p) => p.headers['content-type'])).toEqual(['text/plain; charset=utf-8', 'text/html; charset=utf-8']);
    expect(attachment.headers['content-type']).toMatch(/^application\/octet-stream/);
    expect(attachment.headers['content-disposition']).toContain(`filename=${product.productKey}-${licence.lid}.lic`);
    expect(attachment.headers['content-transfer-encoding']).toBe('base64');
    expect(decoded(attachment)).toBe(licence.licenseString);

    const text = decoded(alternative.parts[0]!);
    expect(text).toContain('Hello Ada Lovelace');
    const code = /\/o\/acme\/portal\/([0-9a-f]{64})/.exec(text)?.[1];
    expect(code).toBeDefined();
    expect(mail!.raw).not.toContain('40% discount');
    expect(mail!.raw).not.toContain('svc_');
    const opened = await h.request('POST', '/o/acme/api/portal/session', { body: { code } });
    expect(opened.statusCode, opened.body).toBe(200);

    const [record] = await emailsOf(licence.lid);
    expect(record).toMatchObject({ id: queued.data.id, status: 'sent', attempts: 1, lastError: null, termIssuedAt: licence.issuedAt });
    expect(record.portalLinkId).toEqual(expect.any(Number));
    const trail = await h.admin('GET', `/licenses/${licence.lid}/activity?limit=5`);
    expect(trail.data.items.map((e: { action: string }) => e.action)).toContain('licence.sent');
  });

  it('retries when the relay is down (lastError, backoff, the link revoked) and delivers once when it is up again', async () => {
    const licence = await issue();
    smtp.setMode('down');
    vi.useFakeTimers({ toFake: ['Date'] });
    const queued = (await h.admin('POST', `/licenses/${licence.lid}/send`)).data;
    await drain();
    let [record] = await emailsOf(licence.lid);
    expect(record).toMatchObject({ status: 'pending', attempts: 1 });
    expect(record.lastError).toMatch(/421|relay away/);
    expect(Date.parse(record.nextAttemptAt) - Date.now()).toBeGreaterThan(9_000);
    const link = await h.database.db.selectFrom('portal_links').select('revoked_at').where('id', '=', record.portalLinkId).executeTakeFirstOrThrow();
    expect(link.revoked_at).not.toBeNull();
    expect(await drain()).toBe(0);

    smtp.setMode('ok');
    moveClock(11_000);
    expect(await drain()).toBe(1);
    moveClock(120_000);
    await drain();
    [record] = await emailsOf(licence.lid);
    expect(record).toMatchObject({ status: 'sent', attempts: 2, lastError: null });
    expect(mailsFor(queued.id)).toHaveLength(1);
  });

  it('fails at once on an SMTP 5xx, with the reply as lastError', async () => {
    const licence = await issue();
    smtp.setMode('reject');
    await h.admin('POST', `/licenses/${licence.lid}/send`);
    await drain();
    const [record] = await emailsOf(licence.lid);
    expect(record).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAt: null });
    expect(record.lastError).toMatch(/550/);
  });

  it('refuses in order: a trial, no customer email, revoked or archived (400), a token without licenses:write (403)', async () => {
    const noEmail = await issueOk(h.admin, { productId: product.id, licensee: 'Nobody Mailed' });
    expect((await h.admin('POST', `/licenses/${noEmail.lid}/send`)).data.error).toMatch(/no email/);
    const revoked = await issue();
    await h.admin('POST', `/licenses/${revoked.lid}/revoke`, { reason: 'refund' });
    const answer = await h.admin('POST', `/licenses/${revoked.lid}/send`);
    expect([answer.statusCode, answer.data.error]).toEqual([400, 'the licence is revoked']);
    const trial = await issue();
    await h.database.db.updateTable('licences').set({ trial: 1 }).where('lid', '=', trial.lid).execute();
    expect((await h.admin('POST', `/licenses/${trial.lid}/send`)).data).toEqual({ error: 'a trial has no customer' });
    const reader = h.as({ token: await h.createToken(['licenses:read']) });
    expect((await reader('POST', `/licenses/${noEmail.lid}/send`)).statusCode).toBe(403);
    expect((await reader('GET', `/licenses/${noEmail.lid}/emails`)).statusCode).toBe(200);
    expect((await h.admin('POST', '/licenses/LIC-NOPE/send')).statusCode).toBe(404);
    expect(await emailsOf(revoked.lid)).toEqual([]);
  });

  it('MAIL_DISABLED from the control plane refuses send and the test, and holds what is pending', async () => {
    const licence = await issue();
    const queued = (await h.admin('POST', `/licenses/${licence.lid}/send`)).data;
    await h.database.db.updateTable('organisations').set({ mail_enabled: 0 }).where('slug', '=', 'acme').execute();
    try {
      const refused = await h.admin('POST', `/licenses/${licence.lid}/send`);
      expect([refused.statusCode, refused.data.reason]).toEqual([403, 'MAIL_DISABLED']);
      expect((await h.admin('POST', '/settings/mail/test')).data.reason).toBe('MAIL_DISABLED');
      expect((await h.admin('GET', '/settings')).data.mail.enabled).toBe(false);
      await drain();
      expect(mailsFor(queued.id)).toEqual([]);
      const metrics = await h.request('GET', '/metrics');
      expect(Number(/^licensor_mail_outbox_pending (\d+)$/m.exec(metrics.body)?.[1])).toBeGreaterThanOrEqual(1);
    } finally {
      await h.database.db.updateTable('organisations').set({ mail_enabled: 1 }).where('slug', '=', 'acme').execute();
    }
    await drain();
    expect(mailsFor(queued.id)).toHaveLength(1);
  });

  it('renders the template: placeholders filled, HTML-escaped in html, CR/LF dropped from the subject; unknown ones 400 naming them', async () => {
    const bad = await h.admin('PUT', '/settings', { mail: { text: 'Hi {{licensee}}, {{discount}} off' } });
    expect([bad.statusCode, bad.data.error]).toEqual([400, expect.stringContaining('{{discount}}')]);
    const long = await h.admin('PUT', '/settings', { mail: { subject: 'x'.repeat(201) } });
    expect(long.statusCode).toBe(400);
    const saved = await h.admin('PUT', '/settings', {
      mail: {
        subject: 'Licence {{lid}}\r\nBcc: evil@example.com',
        text: '{{licensee}} / {{product}} / {{expiry}} / {{organisation}}',
        html: '<p>{{licensee}}</p>',
      },
    });
    expect(saved.statusCode, saved.body).toBe(200);
    expect(saved.data.mail).toMatchObject({ configured: true, enabled: true, from: 'licences@vendor.example', dailyLimit: 8, senderName: 'Acme Sales' });
    const [audited] = (await h.admin('GET', '/dashboard/activity?limit=1')).data.items;
    expect(audited).toMatchObject({ action: 'settings.updated', details: { fields: ['mail.subject', 'mail.text', 'mail.html'] } });
    const licence = await issue({ licensee: 'Bob <b>&</b> Co', licenseeEmail: 'bob@customer.example', validityMonths: 12 });
    const queued = (await h.admin('POST', `/licenses/${licence.lid}/send`)).data;
    await drain();
    const message = parseMime(mailsFor(queued.id)[0]!.raw);
    expect(message.headers.subject).toBe(`Licence ${licence.lid}Bcc: evil@example.com`);
    expect(message.headers.bcc).toBeUndefined();
    const [text, html] = message.parts[0]!.parts.map(decoded);
    expect(text).toBe(`Bob <b>&</b> Co / Widget Pro / ${licence.expiresAt.slice(0, 10)} / Org acme`);
    expect(html).toBe('<p>Bob &lt;b&gt;&amp;&lt;/b&gt; Co</p>');
    const restored = await h.admin('PUT', '/settings', { mail: { subject: null, text: null, html: null } });
    expect(restored.data.mail.subject).toBe('Your licence for {{product}}');
    expect((await h.admin('PUT', '/settings', {})).statusCode).toBe(400);
  });

  it('answers 429 MAIL_LIMIT with Retry-After past the daily limit, and queues nothing', async () => {
    const licence = await issue();
    const used = (await h.admin('GET', '/settings')).data.mail.dailyUsed;
    for (let i = used; i < 8; i++) expect((await h.admin('POST', `/licenses/${licence.lid}/send`)).statusCode).toBe(202);
    const before = (await emailsOf(licence.lid)).length;
    const over = await h.admin('POST', `/licenses/${licence.lid}/send`);
    expect([over.statusCode, over.data.reason]).toEqual([429, 'MAIL_LIMIT']);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(80_000);
    expect((await emailsOf(licence.lid)).length).toBe(before);
    expect((await h.admin('GET', '/settings')).data.mail.dailyUsed).toBe(8);
  });

  it("sends the test email to the member's own address: 400 without one, 200 {to}, 502 with the relay's reply", async () => {
    // The day's count, spent by the limit's test, runs out.
    await h.database.db
      .updateTable('emails')
      .set((eb) => ({ admitted_at: eb('admitted_at', '-', 86_401_000) }))
      .where('admitted_at', 'is not', null)
      .execute();
    await h.database.db.updateTable('users').set({ email: null }).where('username', '=', 'admin').execute();
    expect((await h.admin('POST', '/settings/mail/test')).data.error).toMatch(/no email/);
    await h.database.db.updateTable('users').set({ email: 'admin@vendor.example' }).where('username', '=', 'admin').execute();
    const before = smtp.received.length;
    const sent = await h.admin('POST', '/settings/mail/test');
    expect([sent.statusCode, sent.data]).toEqual([200, { to: 'admin@vendor.example' }]);
    expect(smtp.received.slice(before).map((m) => m.to)).toEqual([['admin@vendor.example']]);
    smtp.setMode('reject');
    const refused = await h.admin('POST', '/settings/mail/test');
    expect([refused.statusCode, refused.data.error]).toEqual([502, expect.stringContaining('550')]);
    const viewer = h.as({ cookie: (await h.createMember('VIEWER')).cookie });
    expect((await viewer('POST', '/settings/mail/test')).statusCode).toBe(403);
  });

  it('keeps email records a year', async () => {
    const licence = await issue();
    const queued = (await h.admin('POST', `/licenses/${licence.lid}/send`)).data;
    await drain();
    await h.database.db
      .updateTable('emails')
      .set({ created_at: Date.now() - 366 * 86_400_000 })
      .where('id', '=', queued.id)
      .execute();
    const fresh = new MailOutbox(h.database, h.config, { error() {} });
    await fresh.drain();
    expect(await emailsOf(licence.lid)).toEqual([]);
  });
});
