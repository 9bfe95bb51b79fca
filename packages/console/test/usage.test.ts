// Usage metering in the console (DESIGN.md 19): the product form's Meters, per-licence limits at
// issue, the licence page's Usage with Adjust usage, the customer portal's Usage, and the
// dashboard's Top consumers card.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint } from '@licensor/protocol';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let product: any;
const lids: Record<string, string> = {};
/** Far from UTC, so a reset shown in the browser's zone rather than the organisation's would show another date. */
const TIMEZONE = 'Pacific/Auckland';

beforeAll(async () => {
  c = await startConsole();
  await c.api('PUT', '/settings', { timezone: TIMEZONE });
  product = await c.api('POST', '/products', {
    productKey: 'render-farm',
    name: 'Render Farm',
    licenceType: 'ONLINE',
    meters: [
      { key: 'renders', label: 'Renders', limit: 100, period: 'MONTH' },
      { key: 'exports', label: 'Exports', limit: null, period: 'NONE' },
    ],
  });
  const used: Array<[string, number]> = [
    ['Northwind Studios', 92],
    ['Blue Harbour Films', 40],
    ['Quiet Licensee Ltd', 0],
  ];
  for (const [licensee, amount] of used) {
    const licence = await c.api('POST', '/licenses', { productId: product.id, licensee, licenseeEmail: `it@${licensee.split(' ')[0]!.toLowerCase()}.example` });
    lids[licensee] = licence.lid;
    if (amount > 0) await c.api('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'renders', amount, reason: 'Seeded for the test' });
  }
  // The application on Quiet Licensee's machine checks in, then reports more renders than its limit: recorded, not counted.
  const { checkToken } = await c.api('POST', `/products/${product.id}/check-token`);
  const quiet = await c.api('GET', `/licenses/${lids['Quiet Licensee Ltd']}`);
  const fingerprint = buildFingerprint({ machine: 'quiet', host: 'quiet-host', mac: 'quiet-mac', cpu: 'cpu', disk: 'disk' });
  for (const [endpoint, extra] of [
    ['check', {}],
    ['usage', { events: [{ id: 'e-1', meter: 'renders', amount: 500 }] }],
  ] as const) {
    const response = await fetch(`${c.url}/o/default/api/public/license/${product.checkId}/${endpoint}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ license: quiet.licenseString, fingerprint, nonce: randomBytes(18).toString('base64url'), ...extra }),
    });
    expect(response.status).toBe(200);
  }
  await c.api('POST', '/users', { username: 'vera', role: 'VIEWER', password: 'vera password 0001' });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

async function choose(scope: ReturnType<Page['getByRole']>, label: string, option: string) {
  await scope.getByRole('combobox', { name: label, exact: true }).click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

/** A progressbar's value and maximum as assistive technology reads them. */
const bar = (scope: ReturnType<Page['getByRole']>, name: string) =>
  scope
    .getByRole('progressbar', { name, exact: true })
    .evaluate((el) => ({ now: el.getAttribute('aria-valuenow'), max: el.getAttribute('aria-valuemax'), text: el.getAttribute('aria-valuetext') }));

/** The first instant of next month in the organisation's zone, as the browser (en-US) writes a date. */
function nextMonthStart(): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: TIMEZONE, year: 'numeric', month: 'numeric' }).formatToParts(new Date()).map((p) => [p.type, p.value]),
  );
  const [year, month] = [Number(parts.year), Number(parts.month)];
  // Midnight UTC of the 1st is that same date in Auckland (12 or 13 hours ahead): only the date is compared.
  const first = new Date(Date.UTC(month === 12 ? year + 1 : year, month % 12, 1));
  return new Intl.DateTimeFormat('en-US', { timeZone: TIMEZONE, dateStyle: 'medium' }).format(first);
}

describe('usage on the dashboard', () => {
  it('lists the top consumers of each meter this period, most first, with their share of the limit', async () => {
    await page.goto('/o/default/');
    const card = page.locator('.mantine-Card-root', { has: page.getByRole('heading', { name: 'Top consumers', exact: true }) });
    await card.waitFor();
    const bars = card.getByRole('progressbar');
    await bars.first().waitFor();
    expect(await bars.evaluateAll((els) => els.map((el) => el.getAttribute('aria-label')))).toEqual([
      'Renders used by Northwind Studios',
      'Renders used by Blue Harbour Films',
    ]);
    await card.getByText('92 of 100').waitFor();
    await card.getByText('40 of 100').waitFor();
    expect(await card.getByText('Quiet Licensee Ltd').count()).toBe(0);
    // The meter nobody used this period says so; one without a period never resets.
    await card.getByText('No use this period.').waitFor();
    await card.getByText('never resets').waitFor();
    await card.getByRole('link', { name: 'Northwind Studios' }).click();
    await page.waitForURL(/\/o\/default\/licences\/[^/]+$/);
    await page.goto('/o/default/');
    await card.waitFor();
    await expectAccessible(page, 'dashboard with top consumers');
    await expectLayout(page, 'usage-dashboard');
  });
});

describe('meters in the product form', () => {
  it('creates a product with meters, shown on its page, and edits them', async () => {
    await page.goto('/o/default/products');
    await page.getByRole('button', { name: 'New product' }).click();
    const form = page.getByRole('dialog', { name: 'New product' });
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('Export Hub');
    await form.getByLabel('Product key').fill('export-hub');
    await form.getByRole('button', { name: 'Add meter' }).click();
    await form.getByRole('button', { name: 'Add meter' }).click();
    const first = form.getByRole('group', { name: 'Meter 1' });
    const second = form.getByRole('group', { name: 'Meter 2' });
    // Nothing is sent while a meter lacks its key or limit; each says so beside itself.
    await form.getByRole('button', { name: 'Create product' }).click();
    await first.getByText('A letter, then up to 63 letters, digits, _ . or -').waitFor();
    await first.getByText('Enter the limit, or switch on Unlimited').waitFor();
    await first.getByLabel('Meter key').fill('exports');
    await first.getByLabel('Meter label').fill('Exports');
    await first.getByRole('textbox', { name: 'Limit' }).fill('1000');
    await first.getByRole('textbox', { name: 'Overage' }).fill('50');
    await second.getByLabel('Meter key').fill('exports');
    await second.getByText('Declared twice').waitFor();
    await second.getByLabel('Meter key').fill('api-calls');
    await choose(second, 'Period', 'Each day');
    await second.getByRole('switch', { name: 'Unlimited' }).click();
    expect(await second.getByRole('textbox', { name: 'Overage' }).isDisabled()).toBe(true);
    await expectAccessible(page, 'product form with meters');
    await expectLayout(page, 'usage-product-form');
    await form.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { level: 1, name: 'Export Hub' }).waitFor();
    const table = page.getByRole('region', { name: 'Meters' });
    await table.getByText('1,000 a month').waitFor();
    await table.getByText('50 more').waitFor();
    await table.getByText('Each calendar month').waitFor();
    await table.getByText('No limit').waitFor();
    await table.getByText('Each day').waitFor();
    const id = Number(page.url().split('/').pop());
    expect((await c.api('GET', `/products/${id}`)).meters).toEqual([
      { key: 'exports', label: 'Exports', limit: 1000, period: 'MONTH', overage: 50 },
      { key: 'api-calls', label: 'api-calls', limit: null, period: 'DAY', overage: 0 },
    ]);

    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Export Hub' });
    const exports = edit.getByRole('group', { name: 'Meter 1' });
    expect(await exports.getByRole('textbox', { name: 'Limit' }).inputValue()).toBe('1,000');
    await exports.getByRole('switch', { name: 'No ceiling' }).click();
    await edit.getByRole('group', { name: 'Meter 2' }).getByRole('button', { name: 'Remove meter' }).click();
    // A trial grants its own limit of a meter (DESIGN.md 18's trialMeters), prefilled with the product's.
    await edit.getByLabel('Trial days').fill('14');
    expect(await edit.getByLabel('Trial Exports limit').inputValue()).toBe('1,000');
    await edit.getByLabel('Trial Exports limit').fill('10');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    await table.getByText('No ceiling', { exact: true }).waitFor();
    await table.getByText('10 a month, no ceiling past it').waitFor();
    expect(await c.api('GET', `/products/${id}`)).toMatchObject({
      meters: [{ key: 'exports', label: 'Exports', limit: 1000, period: 'MONTH', overage: null }],
      trialMeters: { exports: { limit: 10 } },
    });
    await expectLayout(page, 'usage-product-page');
  });
});

describe('usage of a licence', () => {
  it('issues a licence with its own limit for a meter', async () => {
    await page.goto('/o/default/licences');
    await page.getByRole('button', { name: 'Issue licence' }).click();
    const dialog = page.getByRole('dialog', { name: 'Issue licence' });
    await choose(dialog, 'Product', 'Render Farm (render-farm)');
    await dialog.getByLabel('Customer name').fill('Big Render Co');
    // Prefilled with the product's: Renders 100 with no overage, Exports without a limit.
    expect(await dialog.getByLabel('Renders limit').inputValue()).toBe('100');
    expect(await dialog.getByLabel('Exports overage').isDisabled()).toBe(true);
    await dialog.getByLabel('Renders limit').fill('250');
    await dialog.getByLabel('Renders overage').fill('25');
    await expectLayout(page, 'usage-issue-form');
    await dialog.getByRole('button', { name: 'Issue', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Big Render Co' }).waitFor();
    const lid = page.url().split('/').pop()!;
    expect((await c.api('GET', `/licenses/${lid}`)).meters).toEqual([
      { key: 'renders', label: 'Renders', period: 'MONTH', limit: 250, overage: 25 },
      { key: 'exports', label: 'Exports', period: 'NONE', limit: null, overage: 0 },
    ]);
    const usage = page.getByRole('region', { name: 'Usage' });
    expect(await bar(usage, 'Renders')).toEqual({ now: '0', max: '250', text: '0 of 250' });

    // Renewal keeps the licence's own limits unless changed there.
    await page.getByRole('button', { name: 'Renew', exact: true }).click();
    const renew = page.getByRole('dialog', { name: 'Renew licence' });
    expect(await renew.getByLabel('Renders limit').inputValue()).toBe('250');
    await renew.getByLabel('Renders limit').fill('300');
    await renew.getByRole('button', { name: 'Renew licence' }).click();
    await renew.waitFor({ state: 'detached' });
    expect((await c.api('GET', `/licenses/${lid}`)).meters[0]).toEqual({ key: 'renders', label: 'Renders', period: 'MONTH', limit: 300, overage: 25 });
    expect(await bar(usage, 'Renders')).toEqual({ now: '0', max: '300', text: '0 of 300' });
  });

  it('shows each meter this period with when it resets, its events, and adjusts it, a refusal beside the amount', async () => {
    await page.goto(`/o/default/licences/${lids['Northwind Studios']}`);
    const usage = page.getByRole('region', { name: 'Usage' });
    await usage.getByText('92 of 100 this month').waitFor();
    // The signed meters in words among the claims, never as raw objects.
    await page.getByRole('table', { name: 'Claims' }).getByText('renders: 100 a month; exports: no limit').waitFor();
    expect(await bar(usage, 'Renders')).toEqual({ now: '92', max: '100', text: '92 of 100' });
    // Exports has no limit: a bar without a maximum, saying so.
    expect(await bar(usage, 'Exports')).toEqual({ now: '0', max: null, text: '0 used, no limit' });
    await usage.getByText('No limit').waitFor();
    await usage.getByText(`8 left · resets ${nextMonthStart()}`).waitFor();
    await usage.getByText('never resets').waitFor();
    const events = usage.getByRole('table', { name: 'Recent usage events' });
    await events.getByText('“Seeded for the test”').waitFor();

    await usage.getByRole('button', { name: 'Adjust usage' }).click();
    const dialog = page.getByRole('dialog', { name: 'Adjust usage' });
    await dialog.getByLabel('Amount').fill('-200');
    await dialog.getByLabel('Reason').fill('Refund of failed renders');
    await dialog.getByRole('button', { name: 'Adjust', exact: true }).click();
    // The service's refusal, beside the amount it concerns.
    await dialog.getByText('The count would fall below 0 (used 92)').waitFor();
    await expectAccessible(page, 'Adjust usage with a refusal');
    await expectLayout(page, 'usage-adjust');
    await dialog.getByLabel('Amount').fill('-12');
    await dialog.getByRole('button', { name: 'Adjust', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    await usage.getByText('80 of 100 this month').waitFor();
    await events.getByText('12 credited').waitFor();
    await events.getByText('“Refund of failed renders”').waitFor();
    await expectAccessible(page, 'licence page with its usage');
    await expectLayout(page, 'usage-licence');
  });

  it('shows a Viewer the application’s events, and Adjust usage disabled, saying why', async () => {
    const viewer = await c.page();
    await signIn(viewer, 'vera', 'vera password 0001');
    await viewer.goto(`/o/default/licences/${lids['Quiet Licensee Ltd']}`);
    const usage = viewer.getByRole('region', { name: 'Usage' });
    await usage.getByText('0 of 100 this month').waitFor();
    // The application's event past the limit: recorded as refused, nothing counted.
    const event = usage.getByRole('table', { name: 'Recent usage events' }).getByRole('row', { name: /Refused: limit reached/ });
    await event.getByText('The application on machine').waitFor();
    expect(await usage.getByRole('button', { name: 'Adjust usage' }).isDisabled()).toBe(true);
    await usage.getByLabel('Your role (Viewer) can read but not change licences, products or customers.').waitFor();
    await viewer.context().close();
  });

  it('says in words what meters a pasted licence string signs', async () => {
    const licence = await c.api('GET', `/licenses/${lids['Northwind Studios']}`);
    await page.goto('/o/default/verify');
    await page.getByLabel('Licence string').fill(licence.licenseString);
    await page.getByRole('button', { name: 'Verify', exact: true }).click();
    const grants = page.getByLabel('Verdict').getByRole('region', { name: 'What it grants' });
    await grants.getByText('renders: 100 a month; exports: no limit').waitFor();
  });

  it('shows the customer their usage in the portal', async () => {
    const licence = await c.api('GET', `/licenses/${lids['Blue Harbour Films']}`);
    const link = await c.api('POST', `/customers/${licence.customerId}/portal-links`);
    const customer = await c.page();
    await customer.goto(link.url);
    await customer.getByRole('button', { name: 'Open my licences' }).click();
    const usage = customer.getByRole('region', { name: 'Render Farm' }).getByRole('region', { name: 'Usage' });
    await usage.getByText('40 of 100 this month').waitFor();
    expect(await bar(usage, 'Renders')).toEqual({ now: '40', max: '100', text: '40 of 100' });
    await usage.getByText(/60 left · resets/).waitFor();
    await expectAccessible(customer, 'portal with usage');
    await expectLayout(customer, 'usage-portal');
    await customer.context().close();
  });
});
