import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint } from '@licensor/protocol';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let operator: Page;
let licence: any;
let customerId: number;
let portalUrl: string;

beforeAll(async () => {
  c = await startConsole();
  const product = await c.api('POST', '/products', {
    productKey: 'studio',
    name: 'Studio Pro',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['ONLINE'],
    selfReleaseLimit: 2,
  });
  const { checkToken } = await c.api('POST', `/products/${product.id}/check-token`);
  licence = await c.api('POST', '/licenses', { productId: product.id, licensee: 'Kiwi Design', licenseeEmail: 'hello@kiwi.example', maxMachines: 2 });
  customerId = licence.customerId;
  for (const name of ['old-mac', 'studio-pc']) {
    const fingerprint = buildFingerprint({ machine: name, host: `${name}-host`, mac: `${name}-mac`, cpu: 'cpu', disk: 'disk' });
    const response = await fetch(`${c.url}/o/default/api/public/license/${product.checkId}/check`, {
      method: 'POST',
      headers: { authorization: `Bearer ${checkToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ license: licence.licenseString, fingerprint, nonce: randomBytes(18).toString('base64url') }),
    });
    expect(((await response.json()) as { valid: boolean }).valid).toBe(true);
  }
  operator = await c.page();
  await signIn(operator);
});
afterAll(() => c?.close());

describe('the customer portal', () => {
  it('lets the operator create a portal link, shown once with its expiry', async () => {
    await operator.goto(`/o/default/customers/${customerId}`);
    await operator.getByRole('button', { name: 'Portal link' }).click();
    const url = (await operator.getByLabel('portal link', { exact: true }).textContent())!;
    // The service's public URL (127.0.0.1 unless LICENSOR_PUBLIC_URL says otherwise).
    expect(url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${new URL(c.url).port}/o/default/portal/[0-9a-f]{64}$`));
    await operator.getByText('It will not be shown again').waitFor();
    await operator.getByRole('table', { name: 'Portal links' }).getByText('not yet').waitFor();
    await expectAccessible(operator, 'customer page with a portal link');
    portalUrl = url;
  });

  it('opens with the button only, then shows the licence, downloads it and releases a machine', async () => {
    const url = portalUrl;
    const customer = await c.page();
    await customer.goto(url);
    await customer.getByRole('button', { name: 'Open my licences' }).waitFor();
    await expectAccessible(customer, 'portal landing');
    await expectLayout(customer, 'portal-open');
    await customer.getByRole('button', { name: 'Open my licences' }).click();
    await customer.getByRole('heading', { level: 1, name: 'Licences of Kiwi Design' }).waitFor();
    const card = customer.getByRole('region', { name: 'Studio Pro' });
    await card.getByText('2 of 2').waitFor();
    await card.getByText('2 in the last 30 days').waitFor();
    // The product does not allow air-gapped activation, so the portal does not offer it.
    expect(await card.getByRole('button', { name: /air-gapped/ }).count()).toBe(0);

    const [file] = await Promise.all([customer.waitForEvent('download'), card.getByRole('button', { name: /Download/ }).click()]);
    expect(fs.readFileSync((await file.path())!, 'utf8')).toBe(licence.licenseString);
    await expectAccessible(customer, 'portal');
    await expectLayout(customer, 'portal');

    await card.getByRole('button', { name: 'Release' }).first().click();
    const dialog = customer.getByRole('dialog', { name: /^Release machine/ });
    await dialog.getByText('You have 2 releases left in these 30 days.').waitFor();
    await dialog.getByRole('button', { name: 'Release' }).click();
    await card.getByText('1 of 2').waitFor();
    await card.getByText('1 in the last 30 days').waitFor();

    // The operator sees who released it in the licence's activity.
    await operator.goto(`/o/default/licences/${licence.lid}`);
    await operator.getByText(`customer/${customerId}`).first().waitFor();
    // The link is used up: opening it again says so.
    const again = await c.page();
    await again.goto(url);
    await again.getByRole('button', { name: 'Open my licences' }).click();
    await again.getByRole('heading', { name: 'This link has expired' }).waitFor();
    await again.context().close();
    await customer.context().close();
  });
});
