// Trials in the console (DESIGN.md 18): the product form's Trial section, the Trials filter and badge,
// a trial's page with Extend, Convert and Reset, and the dashboard's Trials card.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint, parseLicence } from '@licensor/protocol';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let product: any;
let checkToken: string;

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
  checkToken = (await c.api('POST', `/products/${product.id}/check-token`)).checkToken;
  await c.api('POST', '/licenses', { productId: product.id, licensee: 'Paying Customer Ltd', params: { seats: 3 } });
  await c.api('POST', '/users', { username: 'ivy', role: 'ISSUER', password: 'ivy password 0001' });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

/** What the application does on its first run: starts a trial for its machine with only the check token. */
async function startTrial(machine: string, email?: string) {
  const response = await fetch(`${c.url}/o/default/api/public/license/${product.checkId}/trial`, {
    method: 'POST',
    headers: { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      fingerprint: buildFingerprint({ machine, host: `${machine}-host`, mac: `${machine}-mac`, cpu: `${machine}-cpu`, disk: `${machine}-disk` }),
      nonce: randomBytes(18).toString('base64url'),
      devicePublicKey: randomBytes(32).toString('base64url'),
      machineLabel: `${machine} laptop`,
      ...(email ? { email } : {}),
    }),
  });
  const body = (await response.json()) as { license: string; error?: string };
  expect(response.status, body.error).toBe(201);
  return { lid: parseLicence(body.license).claims.lid as string };
}

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
    expect(await c.api('GET', `/products/${product.id}`)).toMatchObject({
      trialDays: 14,
      trialDailyLimit: 500,
      trialAddressDailyLimit: 20,
      trialParams: { seats: 1 },
    });
  });

  it('lists trials apart with the Trials filter and a Trial badge', async () => {
    await startTrial('alpha', 'alpha@prospect.example');
    await startTrial('beta');
    await page.goto('/o/default/licences');
    await page.getByRole('combobox', { name: 'Trials', exact: true }).click();
    await page.getByRole('option', { name: 'Trials only', exact: true }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('trial')).toBe('true');
    const table = page.getByRole('table', { name: 'Licences' });
    await expect.poll(() => table.getByRole('row').count()).toBe(3);
    expect(await table.getByText('Trial', { exact: true }).count()).toBe(4); // two licensees, two badges
    await table.getByText('alpha@prospect.example').waitFor();
    await expectAccessible(page, 'licences, trials only');
    await expectLayout(page, 'trial-licences');
    await page.getByRole('combobox', { name: 'Trials', exact: true }).click();
    await page.getByRole('option', { name: 'Without trials', exact: true }).click();
    await table.getByRole('link', { name: 'Paying Customer Ltd' }).waitFor();
    await expect.poll(() => table.getByRole('row').count()).toBe(2);
  });

  it('on a trial’s page: extends it, showing the refusal beside the days, and converts it keeping the machine', async () => {
    const trial = await startTrial('gamma', 'gamma@prospect.example');
    await page.goto(`/o/default/licences/${trial.lid}`);
    await page.getByRole('heading', { level: 1, name: 'Trial' }).waitFor();
    const card = page.locator('.mantine-Card-root', { has: page.getByRole('heading', { name: 'Trial', exact: true, level: 2 }) });
    await card.getByRole('table', { name: 'Installations' }).getByText('#1').waitFor();
    expect(await page.getByRole('button', { name: 'Renew' }).count()).toBe(0);
    await page.getByText('yes: started by the application').waitFor();
    await expectAccessible(page, 'a trial’s page');
    await expectLayout(page, 'trial-page');

    const endOf = async () => (await c.api('GET', `/licenses/${trial.lid}`)).expiresAt as string;
    const before = await endOf();
    await card.getByRole('button', { name: 'Extend trial' }).click();
    const extend = page.getByRole('dialog', { name: 'Extend trial' });
    await extend.getByLabel('Days to add').fill('365');
    await extend.getByRole('button', { name: 'Extend trial' }).click();
    // A trial ends at most 365 days after it started: the service's refusal, beside the field.
    await extend.getByText('A trial ends at most 365 days after it started', { exact: true }).waitFor();
    expect(await endOf()).toBe(before);
    await extend.getByLabel('Days to add').fill('7');
    await expectAccessible(page, 'extend dialog');
    await extend.getByRole('button', { name: 'Extend trial' }).click();
    await extend.waitFor({ state: 'detached' });
    expect(Date.parse(await endOf()) - Date.parse(before)).toBe(7 * 86_400_000);

    await card.getByRole('button', { name: 'Convert to paid licence' }).click();
    const convert = page.getByRole('dialog', { name: 'Convert to paid licence' });
    expect(await convert.getByRole('combobox', { name: 'Product' }).count()).toBe(0);
    expect(await convert.getByLabel('Customer email').inputValue()).toBe('gamma@prospect.example');
    await convert.getByLabel('Customer name').fill('Gamma Graphics');
    await convert.getByLabel('Seats').fill('4');
    await convert.getByRole('switch', { name: 'Keep this machine' }).click();
    await expectAccessible(page, 'convert dialog');
    await expectLayout(page, 'trial-convert');
    await convert.getByRole('button', { name: 'Convert', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Gamma Graphics' }).waitFor();
    await page.getByRole('table', { name: 'Machines' }).getByText('gamma laptop').waitFor();
    await page.getByRole('link', { name: 'Converted from a trial' }).click();
    await page.getByRole('heading', { level: 1, name: 'Trial' }).waitFor();
    await card.getByRole('link', { name: 'Paid licence' }).waitFor();
    expect(await card.getByRole('button', { name: 'Convert to paid licence' }).isDisabled()).toBe(true);
  });

  it('shows a conversion refused where it happened (converted meanwhile)', async () => {
    const trial = await startTrial('delta');
    await page.goto(`/o/default/licences/${trial.lid}`);
    await page.getByRole('button', { name: 'Convert to paid licence' }).click();
    const convert = page.getByRole('dialog', { name: 'Convert to paid licence' });
    await convert.getByLabel('Customer name').fill('Delta Designs');
    await convert.getByLabel('Seats').fill('2');
    // Someone else converts it first.
    await c.api('POST', `/licenses/${trial.lid}/convert`, { licensee: 'Delta Elsewhere', params: { seats: 1 } });
    await convert.getByRole('button', { name: 'Convert', exact: true }).click();
    await convert.getByRole('alert').waitFor();
    expect(await convert.getByRole('alert').textContent()).toMatch(/convert/i);
    await convert.getByRole('button', { name: 'Cancel' }).click();
  });

  it('resets the trial ledger for an administrator only, saying what follows', async () => {
    const trial = await startTrial('epsilon');
    const ivy = await c.page();
    await signIn(ivy, 'ivy', 'ivy password 0001');
    await ivy.goto(`/o/default/licences/${trial.lid}`);
    await ivy.getByRole('button', { name: 'Reset trial ledger' }).waitFor();
    expect(await ivy.getByRole('button', { name: 'Reset trial ledger' }).isDisabled()).toBe(true);
    await ivy.getByLabel('Only an Administrator resets the trial ledger; your role is Issuer.').waitFor();
    await ivy.context().close();

    await page.goto(`/o/default/licences/${trial.lid}`);
    await page.getByRole('button', { name: 'Reset trial ledger' }).click();
    const confirm = page.getByRole('dialog', { name: 'Reset the trial ledger' });
    await confirm.getByText('that machine, and machines like it, may then start a new trial').waitFor();
    await expectAccessible(page, 'reset confirmation');
    await confirm.getByRole('button', { name: 'Reset', exact: true }).click();
    await confirm.waitFor({ state: 'detached' });
    await page.getByText(/^reset /).waitFor();
    expect(await page.getByRole('button', { name: 'Reset trial ledger' }).isDisabled()).toBe(true);
    expect((await c.api('GET', `/licenses/${trial.lid}`)).trialLedgerResetAt).not.toBeNull();
    // The machine may start a new trial now.
    await startTrial('epsilon');
  });

  it('shows trials on the dashboard apart from every other figure', async () => {
    await page.goto('/o/default/');
    const card = page.locator('.mantine-Card-root', { has: page.getByRole('heading', { name: 'Trials', exact: true }) });
    await card.getByText('running now').waitFor();
    const dashboard = await c.api('GET', '/dashboard');
    expect(await card.getByText('running now').locator('xpath=preceding-sibling::*[1]').textContent()).toBe(String(dashboard.trials.active));
    await card.getByText(/^converted \(\d+%\)$/).waitFor();
    await card.getByRole('img', { name: /^Trials started per day: 6 over the last/ }).waitFor();
    await expectAccessible(page, 'dashboard with trials');
    await expectLayout(page, 'trial-dashboard');
    await card.getByRole('link', { name: /running now/ }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('trial')).toBe('true');
  });
});
