// Licence email and personal data in the console (DESIGN.md 22): the licence page's Send to
// customer and Emails, Erase personal data on a licence and a customer, Settings → Email with its
// test email, and the control plane's Mail enabled; mail goes to an SMTP relay on loopback.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint, parseLicence } from '@licensor/protocol';
import type { Page } from 'playwright-core';
import { startSmtp } from '../../server/test/mail-helpers.js';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let page: Page;
let product: any;
const lids: Record<string, string> = {};
const PLATFORM_PASSWORD = 'platform console password';

beforeAll(async () => {
  smtp = await startSmtp();
  c = await startConsole(smtp.env);
  await c.cli(['platform-account', 'create', '--username', 'ops', '--password', PLATFORM_PASSWORD, '--role', 'PLATFORM_ADMIN']);
  product = await c.api('POST', '/products', { productKey: 'atlas', name: 'Atlas Desktop', licenceType: 'ONLINE', trialDays: 14 });
  for (const [name, licensee, email] of [
    ['northwind', 'Northwind Traders', 'buyer@northwind.example'],
    ['harbour', 'Blue Harbour Films', 'office@harbour.example'],
    ['quiet', 'Quiet Licensee Ltd', undefined],
  ] as const) {
    lids[name] = (await c.api('POST', '/licenses', { productId: product.id, licensee, ...(email ? { licenseeEmail: email } : {}) })).lid;
  }
  await c.api('PUT', `/licenses/${lids.northwind}/notes`, { notes: 'Call Dana at Northwind before renewing' });
  lids.trial = await startTrial();
  const admin = (await c.api('GET', '/users')).find((u: { username: string }) => u.username === 'admin');
  await c.api('PUT', `/users/${admin.id}`, { email: 'admin@vendor.example' });
  await c.api('POST', '/users', { username: 'vera', role: 'VIEWER', password: 'vera password 0001' });
  await c.api('POST', '/users', { username: 'ivy', role: 'ISSUER', password: 'ivy password 0001' });
  page = await c.page();
  await signIn(page);
});
afterAll(async () => {
  await c?.close();
  await smtp?.close();
});

/** What the application does on its first run: starts a trial for its machine with only the check token. */
async function startTrial(): Promise<string> {
  const { checkToken } = await c.api('POST', `/products/${product.id}/check-token`);
  const response = await fetch(`${c.url}/o/default/api/public/license/${product.checkId}/trial`, {
    method: 'POST',
    headers: { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      fingerprint: buildFingerprint({ machine: 'trial', host: 'trial-host', mac: 'trial-mac', cpu: 'trial-cpu', disk: 'trial-disk' }),
      nonce: randomBytes(18).toString('base64url'),
      devicePublicKey: randomBytes(32).toString('base64url'),
      email: 'tries@somewhere.example',
    }),
  });
  const body = (await response.json()) as { license: string; error?: string };
  expect(response.status, body.error).toBe(201);
  return parseLicence(body.license).claims.lid as string;
}

const emails = (p: Page) => p.getByRole('region', { name: 'Emails' });
const sendButton = (p: Page) => emails(p).getByRole('button', { name: 'Send to customer' });

describe('sending a licence to its customer', () => {
  it('confirms the address, then lists the email until the relay has it, and a refused one with the reply', async () => {
    await page.goto(`/o/default/licences/${lids.northwind}`);
    await emails(page).getByText('No email sent yet.').waitFor();
    await sendButton(page).click();
    const dialog = page.getByRole('dialog', { name: 'Send the licence to its customer' });
    await dialog.getByText(/go to buyer@northwind\.example/).waitFor();
    await dialog.getByRole('button', { name: 'Send', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    const row = emails(page).getByRole('row', { name: /buyer@northwind\.example/ });
    await row.getByText('Sent by hand').waitFor();
    await row.getByText('sent', { exact: true }).waitFor();
    await row.getByRole('cell', { name: '1', exact: true }).waitFor();
    await expect.poll(() => smtp.received.flatMap((m) => m.to)).toContain('buyer@northwind.example');

    // A relay that refuses the mailbox fails the email at once, with its reply in words.
    smtp.setMode('reject');
    await sendButton(page).click();
    await dialog.getByRole('button', { name: 'Send', exact: true }).click();
    await emails(page).getByText('failed', { exact: true }).waitFor();
    await emails(page)
      .getByText(/no such mailbox here/)
      .waitFor();
    smtp.setMode('ok');
    // Newest first.
    const rows = emails(page).getByRole('row');
    await expect.poll(() => rows.count()).toBe(3);
    expect(await rows.nth(1).textContent()).toContain('failed');
    expect(await emails(page).textContent()).not.toMatch(/\b1[78]\d{11}\b|manual|pending/);
    await expectAccessible(page, 'licence page with emails');
    await expectLayout(page, 'mail-licence');
  });

  it('says why a licence cannot be sent (a trial, a customer without email, a Viewer) and why an Issuer cannot erase', async () => {
    await page.goto(`/o/default/licences/${lids.trial}`);
    await emails(page).getByText('A trial has no customer to send it to.').waitFor();
    expect(await sendButton(page).isDisabled()).toBe(true);
    await page.goto(`/o/default/licences/${lids.quiet}`);
    await emails(page).getByText('The customer has no email address: add one on the customer’s page.').waitFor();
    expect(await sendButton(page).isDisabled()).toBe(true);

    const viewer = await c.page();
    await signIn(viewer, 'vera', 'vera password 0001');
    await viewer.goto(`/o/default/licences/${lids.harbour}`);
    await emails(viewer)
      .getByLabel(/Your role \(Viewer\) can read but not change licences/)
      .waitFor();
    expect(await sendButton(viewer).isDisabled()).toBe(true);
    expect(await viewer.getByRole('button', { name: 'Erase personal data' }).isDisabled()).toBe(true);
    await viewer.context().close();

    // An Issuer sends, but only an Administrator erases.
    const issuer = await c.page();
    await signIn(issuer, 'ivy', 'ivy password 0001');
    await issuer.goto(`/o/default/licences/${lids.harbour}`);
    expect(await sendButton(issuer).isDisabled()).toBe(false);
    await issuer.getByLabel('Only an Administrator erases personal data; your role is Issuer.').waitFor();
    expect(await issuer.getByRole('button', { name: 'Erase personal data' }).isDisabled()).toBe(true);
    await issuer.context().close();
  });
});

describe('Settings → Email', () => {
  it('saves the template, shows a refusal beside its field, resets a field to its default and sends a test email', async () => {
    await page.goto('/o/default/settings');
    const card = page.getByRole('region', { name: 'Email' });
    // The two emails of the licence page count against the daily limit, refused or not.
    await card.getByText('2 of 500 allowed').waitFor();
    await card.getByText('licences@vendor.example').waitFor();
    const subject = card.getByRole('textbox', { name: 'Subject' });
    expect(await subject.inputValue()).toBe('Your licence for {{product}}');
    await subject.fill('Your {{price}} licence');
    await card.getByRole('button', { name: 'Save', exact: true }).click();
    await card.getByText(/^Unknown placeholder \{\{price\}\}/).waitFor();
    await subject.fill('{{product}}: your licence from {{organisation}}');
    await card.getByRole('textbox', { name: 'Sender name' }).fill('Atlas Software');
    await card.getByRole('button', { name: 'Save', exact: true }).click();
    await card.getByText('Email settings saved.').waitFor();
    const saved = (await c.api('GET', '/settings')).mail;
    expect(saved).toMatchObject({ subject: '{{product}}: your licence from {{organisation}}', senderName: 'Atlas Software' });

    await card.getByRole('button', { name: 'Reset to default: Subject' }).click();
    await expect.poll(() => subject.inputValue()).toBe('Your licence for {{product}}');
    expect((await c.api('GET', '/settings')).mail.subject).toBe('Your licence for {{product}}');

    await card.getByRole('button', { name: 'Send test email' }).click();
    await card.getByText('Test email sent to admin@vendor.example: the mail relay accepted it.').waitFor();
    await expect.poll(() => smtp.received.flatMap((m) => m.to)).toContain('admin@vendor.example');
    smtp.setMode('reject');
    await card.getByRole('button', { name: 'Send test email' }).click();
    await card
      .getByRole('alert')
      .filter({ hasText: 'Test email not sent' })
      .getByText(/no such mailbox here/)
      .waitFor();
    smtp.setMode('ok');
    await expectAccessible(page, 'settings email');
    await expectLayout(page, 'mail-settings');
  });
});

describe('erasing personal data', () => {
  it('erases a licence’s notes and email addresses after saying what stays', async () => {
    await page.goto(`/o/default/licences/${lids.northwind}`);
    await page.getByText('Call Dana at Northwind before renewing').waitFor();
    await page.getByRole('button', { name: 'Erase personal data' }).click();
    const dialog = page.getByRole('dialog', { name: 'Erase this licence’s personal data' });
    await dialog.getByRole('listitem').filter({ hasText: 'the addresses its emails went to' }).waitFor();
    await dialog.getByRole('listitem').filter({ hasText: 'a signature cannot be edited' }).waitFor();
    await expectAccessible(page, 'erase confirmation');
    await expectLayout(page, 'mail-erase-confirm');
    await dialog.getByRole('button', { name: 'Erase', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByText('No notes.').waitFor();
    await expect.poll(() => emails(page).getByText('erased', { exact: true }).count()).toBe(2);
    expect(await emails(page).getByText('buyer@northwind.example').count()).toBe(0);
  });

  it('erases a customer: its name, email and notes, and its licences’', async () => {
    const licence = await c.api('GET', `/licenses/${lids.harbour}`);
    await page.goto(`/o/default/customers/${licence.customerId}`);
    await page.getByRole('heading', { level: 1, name: 'Blue Harbour Films' }).waitFor();
    await page.getByRole('button', { name: 'Erase personal data' }).click();
    const dialog = page.getByRole('dialog', { name: 'Erase Blue Harbour Films’s personal data' });
    await dialog
      .getByRole('listitem')
      .filter({ hasText: `it becomes “Erased customer ${licence.customerId}”` })
      .waitFor();
    await dialog.getByRole('listitem').filter({ hasText: 'the licences themselves, which keep working' }).waitFor();
    await dialog.getByRole('button', { name: 'Erase', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: `Erased customer ${licence.customerId}` }).waitFor();
    await expect.poll(() => page.getByText('office@harbour.example').count()).toBe(0);
    const erased = await c.api('GET', `/licenses/${lids.harbour}`);
    expect(erased).toMatchObject({ licensee: `Erased customer ${licence.customerId}`, licenseeEmail: null });
  });
});

describe('the control plane’s Mail enabled', () => {
  it('switched off, the licence page says why Send is disabled; switched on, it can send again', async () => {
    const ops = await c.page();
    await ops.goto('/platform/');
    await ops.waitForURL(/\/platform\/sign-in/);
    await ops.getByLabel('Username').fill('ops');
    await ops.getByLabel('Password', { exact: true }).fill(PLATFORM_PASSWORD);
    await ops.getByRole('button', { name: 'Sign in', exact: true }).click();
    const row = ops.getByRole('row', { name: /default/ });
    const toggle = row.getByRole('switch', { name: 'Mail enabled' });
    await toggle.waitFor();
    expect(await toggle.isChecked()).toBe(true);
    await toggle.click({ force: true });
    await expect.poll(async () => (await c.api('GET', '/settings')).mail.enabled).toBe(false);
    await expect.poll(() => toggle.isChecked()).toBe(false);

    await page.goto(`/o/default/licences/${lids.quiet}`);
    await emails(page).getByText('Email is switched off for this organisation by the platform’s operator.').waitFor();
    expect(await sendButton(page).isDisabled()).toBe(true);
    await page.goto('/o/default/settings');
    await page.getByRole('region', { name: 'Email' }).getByText('switched off by the platform’s operator').waitFor();
    expect(await page.getByRole('button', { name: 'Send test email' }).isDisabled()).toBe(true);

    await toggle.click({ force: true });
    await expect.poll(async () => (await c.api('GET', '/settings')).mail.enabled).toBe(true);
    await ops.context().close();
  });
});
