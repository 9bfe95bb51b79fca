import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let product: { id: number };
let old: { id: number };
const SECRET = 'whsec_console_integration_secret_0123';
const NEW_SECRET = 'whsec_console_integration_rolled_4567';

/** Posts an event to a hook as Stripe signs it (DESIGN.md 22): `t=<s>,v1=hex(HMAC-SHA256(secret, t + "." + body))`. */
function deliver(hookUrl: string, event: object, secret = SECRET) {
  const body = JSON.stringify(event);
  const t = Math.floor(Date.now() / 1000);
  const v1 = crypto.createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${v1}` }, body });
}

/** A paid subscription invoice of one `price_atlas` line. */
const invoicePaid = (n: number) => ({
  id: `evt_console_${n}`,
  object: 'event',
  type: 'invoice.paid',
  created: Math.floor(Date.now() / 1000),
  data: {
    object: {
      id: `in_console_${n}`,
      object: 'invoice',
      customer: `cus_${n}`,
      customer_email: `buyer${n}@customer.example`,
      customer_name: `Buyer ${n}`,
      parent: { type: 'subscription_details', subscription_details: { subscription: `sub_console_${n}` } },
      lines: {
        object: 'list',
        has_more: false,
        data: [
          {
            id: `il_console_${n}`,
            amount: 1000,
            quantity: 1,
            period: { start: Math.floor(Date.now() / 1000), end: Math.floor(Date.now() / 1000) + 30 * 86_400 },
            pricing: { type: 'price_details', price_details: { price: 'price_atlas' } },
          },
        ],
      },
    },
  },
});

beforeAll(async () => {
  c = await startConsole();
  product = await c.api('POST', '/products', {
    productKey: 'atlas',
    name: 'Atlas Studio',
    licenceType: 'ONLINE',
    params: [{ key: 'edition', label: 'Edition', type: 'ENUM', options: ['basic', 'pro'], required: true, defaultValue: 'basic', help: null }],
    meters: [{ key: 'renders', label: 'Renders', limit: 100, period: 'MONTH' }],
  });
  old = await c.api('POST', '/products', { productKey: 'old', name: 'Old Tool', licenceType: 'ONLINE' });
  page = await c.page();
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.url });
  await signIn(page);
});
afterAll(async () => {
  await c?.close();
});

describe('Integrations', () => {
  it('adds a Stripe integration and lists it; its page shows the hook URL and the events with Retry, and edits, disables and deletes it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('heading', { level: 1, name: 'Integrations' }).waitFor();
    await page.getByText('No integration yet').waitFor();

    await page.getByRole('button', { name: 'Add integration' }).click();
    const form = page.getByRole('dialog', { name: 'Add integration' });
    await form.getByRole('textbox', { name: 'Name' }).fill('shop');
    await form.getByLabel('Signing secret').fill(SECRET);
    await form.getByLabel('Price ID').fill('price_atlas');
    // A product deleted while the form is open: the refusal shows beside Product.
    await form.getByRole('combobox', { name: 'Product' }).click();
    await page.getByRole('option', { name: 'Old Tool (old)' }).click();
    await c.api('DELETE', `/products/${old.id}`);
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByText(`No product ${old.id} in this organisation`).waitFor();
    await form.getByRole('combobox', { name: 'Product' }).click();
    await page.getByRole('option', { name: 'Atlas Studio (atlas)' }).click();
    await form.getByLabel('Renders limit').fill('500');
    await form.getByRole('combobox', { name: 'Edition' }).click();
    await page.getByRole('option', { name: 'pro' }).click();
    await expectAccessible(page, 'add integration form');
    await expectLayout(page, 'integration-form');
    // Meanwhile someone else took the name: the refusal shows beside it, in words.
    await c.api('POST', '/integrations', {
      provider: 'paddle',
      name: 'shop',
      signingSecret: 'pdl_ntfset_console_secret_0123',
      mappings: [{ match: 'pri_atlas', productId: product.id }],
    });
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByText('An integration named shop already exists').waitFor();
    await form.getByRole('textbox', { name: 'Name' }).fill('stripe-live');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.waitFor({ state: 'detached' });

    const list = page.getByRole('table', { name: 'Integrations' });
    await list
      .getByRole('row', { name: /stripe-live/ })
      .getByText('Stripe · 1 price')
      .waitFor();
    const [saved] = (await c.api('GET', '/integrations')).filter((i: { name: string }) => i.name === 'stripe-live');
    expect(saved.mappings).toEqual([
      { match: 'price_atlas', productId: product.id, validityMonths: null, params: { edition: 'pro' }, meters: { renders: { limit: 500 } } },
    ]);
    expect(saved).toMatchObject({ sendOnIssue: true, sendOnRenew: false, enabled: true });

    await list.getByRole('link', { name: 'stripe-live' }).click();
    await page.getByRole('heading', { level: 1, name: 'stripe-live' }).waitFor();
    const hookUrl = (await page.getByLabel('Hook URL', { exact: true }).textContent()) ?? '';
    expect(hookUrl).toBe(saved.hookUrl);
    expect(hookUrl).toMatch(new RegExp(`/o/default/api/hooks/stripe/${saved.id}$`));
    await page.getByRole('button', { name: 'Copy Hook URL' }).click();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(hookUrl);
    await page.getByRole('list', { name: 'Event types to send' }).getByText('invoice_payment.paid').waitFor();

    // One that fails (its product inactive), one that issues, and one whose signature is refused.
    await c.api('PUT', `/products/${product.id}`, { active: false });
    expect(await (await deliver(hookUrl, invoicePaid(1))).json()).toMatchObject({ outcome: 'FAILED' });
    await c.api('PUT', `/products/${product.id}`, { active: true });
    expect(await (await deliver(hookUrl, invoicePaid(2))).json()).toMatchObject({ outcome: 'ISSUED' });
    expect((await deliver(hookUrl, invoicePaid(3), 'whsec_not_the_secret_at_all')).status).toBe(400);

    await page.reload();
    const events = page.getByRole('table', { name: 'Events' });
    const failed = events.getByRole('row', { name: /evt_console_1/ });
    await failed.getByText('Failed').waitFor();
    await failed.getByText('Product ID: the product is inactive').waitFor();
    await events
      .getByRole('row', { name: /evt_console_2/ })
      .getByText('Issued')
      .waitFor();
    await page.getByText('1 failed').waitFor();
    await page.getByText('Signature refused').waitFor();
    await expectAccessible(page, 'integration page');
    await expectLayout(page, 'integration');

    await failed.getByRole('button', { name: /^Retry/ }).click();
    await failed.getByText('Issued').waitFor();
    await expect.poll(async () => (await failed.getByRole('link').count()) > 0).toBe(true);
    await page.getByText('None', { exact: true }).waitFor();

    await page.getByRole('combobox', { name: 'Outcome' }).click();
    await page.getByRole('option', { name: 'Failed' }).click();
    await page.getByText('No event with this outcome').waitFor();

    await page.getByRole('combobox', { name: 'Outcome' }).click();
    await page.getByRole('option', { name: 'All outcomes' }).click();

    // Edit: what the form does not touch is kept.
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = page.getByRole('dialog', { name: 'Edit stripe-live' });
    await edit.getByLabel('Grace days').fill('7');
    await edit.getByRole('button', { name: 'Add mapping' }).click();
    const second = edit.getByRole('group', { name: 'Mapping 2' });
    await second.getByLabel('Price ID').fill('plink_extra');
    await second.getByRole('combobox', { name: 'Product' }).click();
    await page.getByRole('option', { name: 'Atlas Studio (atlas)' }).click();
    await second.getByLabel('Follows the subscription').uncheck();
    await second.getByLabel('Validity (months)').fill('12');
    await edit.getByRole('button', { name: 'Add mapping' }).click();
    await edit.getByRole('button', { name: 'Remove mapping 3' }).click();
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    const prices = page.getByRole('table', { name: 'Mappings' });
    await prices.getByText('Follows the subscription, 7 days grace').waitFor();
    await prices
      .getByRole('row', { name: /plink_extra/ })
      .getByText('12 months')
      .waitFor();
    expect((await c.api('GET', `/integrations/${saved.id}`)).mappings).toEqual([
      { ...saved.mappings[0], graceDays: 7 },
      { match: 'plink_extra', productId: product.id, validityMonths: 12, params: { edition: 'basic' } },
    ]);

    // Replace secret: only the new one signs from now on.
    await page.getByRole('button', { name: 'Replace secret' }).click();
    const replace = page.getByRole('dialog', { name: 'Replace secret' });
    await replace.getByLabel('Signing secret').fill(NEW_SECRET);
    await replace.getByRole('button', { name: 'Replace secret' }).click();
    await replace.waitFor({ state: 'detached' });
    expect((await deliver(hookUrl, invoicePaid(4), NEW_SECRET)).status).toBe(200);
    expect((await deliver(hookUrl, invoicePaid(5))).status).toBe(400);

    // Disabled, the hook answers 503 so that the provider retries.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('dialog', { name: 'Disable stripe-live' }).getByRole('button', { name: 'Disable' }).click();
    await page.getByText('Disabled', { exact: true }).waitFor();
    expect((await deliver(hookUrl, invoicePaid(6), NEW_SECRET)).status).toBe(503);
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Disable' }).waitFor();

    await page.getByRole('link', { name: '← Integrations' }).click();
    const row = page.getByRole('table', { name: 'Integrations' }).getByRole('row', { name: /stripe-live/ });
    await row.getByText('Signature refused').waitFor();
    await page.getByRole('table', { name: 'Integrations' }).getByRole('row', { name: /shop/ }).getByText('Paddle · 1 price').waitFor();
    await expectAccessible(page, 'integrations page');
    await expectLayout(page, 'integrations');

    // Deleted, its licences stay.
    await page.getByRole('link', { name: 'shop', exact: true }).click();
    await page.getByText('transaction.completed').waitFor();
    await page.getByRole('button', { name: 'Delete' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete shop' });
    await confirm.getByText('The licences it issued stay').waitFor();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { level: 1, name: 'Integrations' }).waitFor();
    await expect.poll(() => page.getByRole('link', { name: 'shop', exact: true }).count()).toBe(0);
    expect((await c.api('GET', '/integrations')).map((i: { name: string }) => i.name)).toEqual(['stripe-live']);
  });

  it('shows anyone but an Administrator why the integrations are not theirs to see', async () => {
    await c.api('POST', '/users', { username: 'erin', role: 'VIEWER', password: 'erin password 01' });
    const viewer = await c.page(390);
    await signIn(viewer, 'erin', 'erin password 01');
    await viewer.goto('/o/default/integrations');
    await viewer.getByText('Only an Administrator manages members, API tokens, webhooks, integrations and settings').waitFor();
    expect(await viewer.getByRole('button', { name: 'Add integration' }).count()).toBe(0);
    await viewer.context().close();
  });
});
