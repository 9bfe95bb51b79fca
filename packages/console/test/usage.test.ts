// Usage metering in the console (DESIGN.md 19): the dashboard's Top consumers card.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;

beforeAll(async () => {
  c = await startConsole();
  const product = await c.api('POST', '/products', {
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
    const licence = await c.api('POST', '/licenses', { productId: product.id, licensee });
    if (amount > 0) await c.api('POST', `/licenses/${licence.lid}/usage/adjust`, { meter: 'renders', amount, reason: 'Seeded for the test' });
  }
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

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
