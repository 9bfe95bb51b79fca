import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let product: any;

beforeAll(async () => {
  c = await startConsole();
  product = await c.api('POST', '/products', { productKey: 'ledger', name: 'Ledger Pro' });
  // One more than a page, so "every licence of the filter" means more than the rows in view.
  for (let n = 1; n <= 52; n++) await c.api('POST', '/licenses', { productId: product.id, licensee: `Bulk Buyer ${String(n).padStart(2, '0')}` });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

describe('customers in the console', () => {
  it('creates a customer, edits them, and issues a licence from their page', async () => {
    await page.goto('/o/default/customers');
    await page.getByRole('button', { name: 'New customer' }).click();
    const form = page.getByRole('dialog', { name: 'New customer' });
    // Checked before sending, each message beside its field; nothing is created.
    await form.getByLabel('Email').fill('it at wombat');
    await form.getByRole('button', { name: 'Create customer' }).click();
    await form.getByText('Enter the customer’s name').waitFor();
    await form.getByText('An email address, such as it@example.com').waitFor();
    await expectAccessible(page, 'customer form, checked');
    await expectLayout(page, 'customer-form-checked');
    expect(await c.api('GET', '/customers?q=wombat')).toEqual([]);
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('Wombat Works');
    await form.getByLabel('Email').fill('it@wombat.example');
    await form.getByRole('button', { name: 'Create customer' }).click();
    await page.getByRole('heading', { level: 1, name: 'Wombat Works' }).waitFor();
    await page.getByText('Wombat Works holds no licence yet.').waitFor();

    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Wombat Works' });
    await edit.getByRole('textbox', { name: 'Name', exact: true }).fill('Wombat Works Pty');
    await edit.getByLabel('Notes').fill('Reseller in Perth');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    // The closing dialog still holds the notes for a moment.
    await edit.waitFor({ state: 'detached' });
    await page.getByRole('heading', { level: 1, name: 'Wombat Works Pty' }).waitFor();
    await page.getByText('Reseller in Perth').waitFor();

    await page.getByRole('button', { name: 'Issue licence' }).click();
    const issue = page.getByRole('dialog', { name: 'Issue licence' });
    expect(await issue.getByLabel('Customer name').inputValue()).toBe('Wombat Works Pty');
    expect(await issue.getByLabel('Customer email').inputValue()).toBe('it@wombat.example');
    await issue.getByRole('combobox', { name: 'Product', exact: true }).click();
    await page.getByRole('option', { name: 'Ledger Pro (ledger)' }).click();
    await issue.getByLabel('Validity (months)').waitFor();
    await issue.getByRole('button', { name: 'Issue', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Wombat Works Pty' }).waitFor();
    const [customer] = await c.api('GET', '/customers?q=wombat');
    expect(customer).toMatchObject({ name: 'Wombat Works Pty', email: 'it@wombat.example', notes: 'Reseller in Perth', licenseCount: 1 });

    await page.goto(`/o/default/customers/${customer.id}`);
    await page.getByRole('table', { name: 'Licences' }).getByText('Ledger Pro').waitFor();
    await expectAccessible(page, 'customer page');
    await expectLayout(page, 'customer');
  });

  it('refuses to delete a customer who holds licences with the API’s message, and deletes one who holds none', async () => {
    const [customer] = await c.api('GET', '/customers?q=wombat');
    await page.goto(`/o/default/customers/${customer.id}`);
    await page.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete Wombat Works Pty' });
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('alert').waitFor();
    expect(await dialog.getByRole('alert').textContent()).toMatch(/licen[cs]e/);
    expect((await c.api('GET', `/customers/${customer.id}`)).name).toBe('Wombat Works Pty');

    const spare = await c.api('POST', '/customers', { name: 'Spare Parts Inc' });
    await page.goto(`/o/default/customers/${spare.id}`);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete Spare Parts Inc' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { level: 1, name: 'Customers' }).waitFor();
    await page.getByLabel('Search customers').fill('spare');
    await page.getByText('No customer matches.').waitFor();
    await page.getByLabel('Search customers').fill('');
    await page.getByRole('link', { name: 'Wombat Works Pty' }).waitFor();
    await expectAccessible(page, 'customers list');
    await expectLayout(page, 'customers');
  });
});

describe('bulk actions on the licence list', () => {
  it('revokes two licences ticked on a phone, with one reason', async () => {
    await page.setViewportSize({ width: 390, height: 900 });
    await page.goto('/o/default/licences?q=bulk%20buyer&sort=licensee&asc=true');
    await page.getByRole('list', { name: 'Licences' }).getByRole('link', { name: 'Bulk Buyer 50' }).waitFor();
    await page.getByLabel(/^Select Bulk Buyer 01 /).check();
    await page.getByLabel(/^Select Bulk Buyer 02 /).check();
    const bar = page.getByRole('region', { name: 'Bulk actions' });
    await bar.getByText('2 selected').waitFor();
    await bar.getByRole('button', { name: 'Revoke selected' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke 2 licences' });
    await dialog.getByLabel('Reason').fill('Chargeback');
    await dialog.getByRole('button', { name: 'Revoke 2' }).click();
    await page.getByRole('status').getByText('2 licences revoked').waitFor();
    const items = (await c.api('GET', '/licenses/page?q=bulk%20buyer&sort=licensee&asc=true')).items;
    expect(items.slice(0, 3).map((l: { status: string }) => l.status)).toEqual(['REVOKED', 'REVOKED', 'ACTIVE']);
    expect(items.filter((l: { status: string }) => l.status === 'REVOKED')).toHaveLength(2);
    expect((await c.api('GET', `/licenses/${items[0].lid}`)).revokedReason).toBe('Chargeback');
    // Judged once the closing dialog has gone.
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await expectAccessible(page, 'licence cards after a bulk revoke');
    await expectLayout(page, 'licences-bulk');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('archives every licence of the filter, its count confirmed, listing each refusal with the API’s message', async () => {
    await page.goto('/o/default/licences?q=bulk%20buyer&sort=licensee&asc=true');
    await page.getByRole('link', { name: 'Bulk Buyer 50' }).waitFor();
    await page.getByLabel('Select every licence on this page').check();
    await page.getByRole('region', { name: 'Bulk actions' }).getByText('50 selected').waitFor();
    await page.getByRole('button', { name: 'Select all 52 matching licences' }).click();
    await page.getByRole('region', { name: 'Bulk actions' }).getByText('All 52 matching licences selected').waitFor();
    await page.getByRole('region', { name: 'Bulk actions' }).getByRole('button', { name: 'Archive selected' }).click();
    const dialog = page.getByRole('dialog', { name: 'Archive 52 licences' });
    await dialog.getByText('Every licence of the current filter: 52 now.').waitFor();
    await dialog.getByRole('button', { name: 'Archive 52' }).click();
    const result = page.getByRole('status').filter({ hasText: 'archived' });
    await result.getByText('2 licences archived; 50 refused').waitFor();
    expect(await result.getByRole('listitem').count()).toBe(50);
    expect(await result.getByRole('listitem').first().textContent()).toMatch(/only a REVOKED or EXPIRED|REVOKED or EXPIRED/i);
    // Judged once the closing dialog has gone.
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await expectAccessible(page, 'bulk result');
    const archived = (await c.api('GET', '/licenses/page?q=bulk%20buyer&window=archived')).total;
    expect(archived).toBe(2);
  });

  it('exports only the chosen licences', async () => {
    await page.goto('/o/default/licences?q=bulk%20buyer&sort=licensee&asc=true');
    await page.getByRole('link', { name: 'Bulk Buyer 50' }).waitFor();
    await page.getByLabel(/^Select Bulk Buyer 04 /).check();
    await page.getByRole('region', { name: 'Bulk actions' }).getByRole('button', { name: 'Export selected' }).click();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('dialog', { name: 'Export 1 licence' }).getByRole('button', { name: 'Export 1' }).click(),
    ]);
    const lines = fs
      .readFileSync((await download.path())!, 'utf8')
      .trim()
      .split('\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('Bulk Buyer 04');
  });
});
