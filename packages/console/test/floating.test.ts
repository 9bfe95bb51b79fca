// Floating licences in the console (DESIGN.md 13): the product form's seat model, and the leases on a licence's page.
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint } from '@licensor/protocol';
import { LicenceClient, memoryStore } from '@licensor/sdk';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;

beforeAll(async () => {
  c = await startConsole({ LICENSOR_CHECK_RATE_ADDRESS: '600' });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

describe('floating licences in the console', () => {
  it('creates a floating product, warning when a full site would check faster than one address may', async () => {
    await page.goto('/o/default/products');
    await page.getByRole('button', { name: 'New product' }).click();
    const form = page.getByRole('dialog', { name: 'New product' });
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('Drafting Floor');
    await form.getByLabel('Product key').fill('drafting-floor');
    await form.getByText('Floating', { exact: true }).click();
    await expect.poll(() => form.getByRole('checkbox', { name: 'OFFLINE' }).isDisabled()).toBe(true);
    expect(await form.getByRole('checkbox', { name: 'ONLINE' }).isChecked()).toBe(true);
    await form.getByLabel('Max machines').fill('400');
    await form.getByLabel('Lease length (seconds)').fill('60');
    // 400 machines × 180 / 60 s = 1,200 checks a minute from one site, above 600.
    const warning = form.getByText(/checks about 1200 times a minute, more than this service allows from one address \(600 a/);
    await warning.waitFor();
    await expectAccessible(page, 'product form with the check-rate warning');
    await expectLayout(page, 'floating-product-form');
    await form.getByLabel('Lease length (seconds)').fill('900');
    await warning.waitFor({ state: 'detached' });
    await form.getByLabel('Longest borrow (seconds)').fill('86400');
    await form.getByLabel('Borrowed seats at once').fill('2');
    await form.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { level: 1, name: 'Drafting Floor' }).waitFor();
    await page.getByText('Floating: 15 minutes leases').waitFor();
    const product = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === 'drafting-floor');
    expect(product).toMatchObject({
      seatModel: 'FLOATING',
      leaseSeconds: 900,
      maxBorrowSeconds: 86_400,
      maxBorrowedSeats: 2,
      maxMachines: 400,
      licenceFetchEnabled: true,
    });
    // The first dashboard ticks the step done, the figures beside the steps still to do.
    await page.goto('/o/default/');
    const steps = page.getByRole('region', { name: 'First steps' });
    await steps.getByText(/1 of 4 done/).waitFor();
    await steps.getByText('(done)').waitFor();
    await page.getByLabel('Licence figures').waitFor();
  });

  it('shows live and lapsed leases; releasing one frees the seat for another machine', async () => {
    const product = await c.api('POST', '/products', {
      productKey: 'studio-seats',
      name: 'Studio Seats',
      seatModel: 'FLOATING',
      leaseSeconds: 600,
      maxBorrowSeconds: 86_400,
    });
    const { checkToken } = await c.api('POST', `/products/${product.id}/check-token`);
    const licence = await c.api('POST', '/licenses', { productId: product.id, licensee: 'Harbour Architects', maxMachines: 2 });
    const machine = (name: string) =>
      new LicenceClient({
        baseUrl: c.url,
        slug: 'default',
        checkId: product.checkId,
        checkToken,
        publicKeyPem: product.publicKeyPem,
        licence: licence.licenseString,
        store: memoryStore(),
        fingerprint: buildFingerprint({ machine: name, host: `${name}.example`, mac: name, cpu: 'cpu', disk: name }),
        machineLabel: name,
      });
    const [north, south, east, west] = ['North desk', 'South desk', 'East desk', 'West desk'].map(machine) as [
      LicenceClient,
      LicenceClient,
      LicenceClient,
      LicenceClient,
    ];
    expect((await north.check()).state).toBe('VALID');
    expect((await south.check()).state).toBe('VALID');
    expect(await east.check()).toMatchObject({ state: 'INVALID', serverReason: 'SEATS_FULL' });
    expect(await south.borrow(new Date(Date.now() + 3_600_000))).toMatchObject({ state: 'VALID', noAnswer: null });

    // North stops checking: its lease runs to its end, which the database is moved to (a lease lapses by time alone).
    const db = new Sqlite(path.join(c.dataDir, 'licensor.sqlite'));
    try {
      db.prepare("update machine_bindings set lease_ends_at = ? where label = 'North desk'").run(Date.now() - 60_000);
    } finally {
      db.close();
    }
    expect((await east.check()).state).toBe('VALID');

    await page.goto(`/o/default/licences/${licence.lid}`);
    await page.getByRole('heading', { name: 'In use now: 2 of 2' }).waitFor();
    const leases = page.getByRole('table', { name: 'Leases' });
    const row = (name: string) => leases.getByRole('row').filter({ hasText: name });
    await row('North desk').getByText('lapsed').waitFor();
    expect(await row('South desk').getByRole('button', { name: 'Release' }).count()).toBe(1);
    expect(await row('North desk').getByRole('button', { name: 'Release' }).count()).toBe(0);
    await page.getByRole('img', { name: /Daily peak of live leases: at most 2/ }).waitFor();
    await expectAccessible(page, 'licence page with leases');
    await expectLayout(page, 'floating-licence');

    expect(await west.check()).toMatchObject({ state: 'INVALID', serverReason: 'SEATS_FULL' });
    await row('South desk').getByRole('button', { name: 'Release' }).click();
    const confirm = page.getByRole('dialog', { name: 'Release South desk' });
    await confirm.getByText(/borrowed it: offline, it keeps working until its borrow ends/).waitFor();
    await confirm.getByRole('button', { name: 'Release' }).click();
    await page.getByRole('heading', { name: 'In use now: 1 of 2' }).waitFor();
    await row('South desk').getByText('released by admin').waitFor();
    expect((await west.check()).state).toBe('VALID');
    await page.reload();
    await page.getByRole('heading', { name: 'In use now: 2 of 2' }).waitFor();
    // Every first step done (a product, its token, a licence, a check): the dashboard is the figures alone.
    await page.goto('/o/default/');
    await page.getByLabel('Licence figures').waitFor();
    expect(await page.getByRole('region', { name: 'First steps' }).count()).toBe(0);
  });
});
