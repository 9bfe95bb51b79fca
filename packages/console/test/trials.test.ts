// Trials in the console (DESIGN.md 18): the product form's Trial section, the Trials filter and badge,
// a trial's page with Extend, Convert and Reset, and the dashboard's Trials card.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let product: any;

beforeAll(async () => {
  c = await startConsole();
  product = await c.api('POST', '/products', {
    productKey: 'sketch',
    name: 'Sketch Pad',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['ONLINE', 'OFFLINE'],
    params: [
      { key: 'seats', label: 'Seats', type: 'INTEGER', required: true },
      { key: 'edition', label: 'Edition', type: 'ENUM', options: ['home', 'pro'], defaultValue: 'pro' },
    ],
  });
  await c.api('POST', '/licenses', { productId: product.id, licensee: 'Paying Customer Ltd', params: { seats: 3 } });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

describe('trials in the console', () => {
  it('turns trials on in the product form, saying in words what a trial needs', async () => {
    await page.goto(`/o/default/products/${product.id}`);
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const form = page.getByRole('dialog', { name: 'Edit Sketch Pad' });
    await form.getByLabel('Trial days').fill('14');
    await form.getByText('Each trial lasts 14 days').waitFor();
    expect(await form.getByLabel('Trials per address per day').inputValue()).toBe('20');
    await form.getByLabel('Trials per day').fill('500');
    // Seats is required and has no default: a trial needs a value for it before anything is sent.
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.getByText('Trials need a value for Seats: it is required and has no default').waitFor();
    await form.getByLabel('Trial value: Seats').fill('1');
    await form.getByText('Empty: the default, pro').waitFor();
    await expectAccessible(page, 'product form with its Trial section');
    await expectLayout(page, 'trial-product-form');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.waitFor({ state: 'detached' });
    await page.getByText('14 days each; at most 500 a day, 20 a day per address').waitFor();
    expect(await c.api('GET', `/products/${product.id}`)).toMatchObject({ trialDays: 14, trialDailyLimit: 500, trialAddressDailyLimit: 20, trialParams: { seats: 1 } });
  });
});
