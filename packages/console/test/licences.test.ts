import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LicenceClient, memoryStore } from '@licensor/sdk';
import type { Locator, Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let product: any;
let checkToken: string;
let expiredLid: string;
let page: Page;

const PARAMS = [
  { key: 'edition', label: 'Edition name', type: 'STRING', required: true },
  { key: 'seats', label: 'Seats', type: 'INTEGER', defaultValue: '5' },
  { key: 'beta', label: 'Beta features', type: 'BOOLEAN', defaultValue: 'false' },
  { key: 'support-until', label: 'Support until', type: 'DATE' },
  { key: 'modules', label: 'Modules', type: 'STRING_LIST' },
  { key: 'tier', label: 'Tier', type: 'ENUM', options: ['basic', 'pro'], defaultValue: 'basic' },
];

/** The value of a labelled line (a `dt` and its `dd`) inside a card or section. */
function line(scope: Locator, label: string) {
  return value(scope, label).textContent();
}
function value(scope: Locator, label: string) {
  return scope.locator('dt', { hasText: new RegExp(`^${label}$`) }).locator('xpath=following-sibling::dd[1]');
}

/** Pastes a string into the Verify page: its verdict. */
async function verify(text: string) {
  await page.goto('/o/default/verify');
  await page.getByLabel('Licence string').fill(text);
  await page.getByRole('button', { name: 'Verify', exact: true }).click();
  const verdict = page.getByLabel('Verdict');
  await verdict.waitFor();
  return verdict;
}

async function choose(label: string, option: string) {
  await page.getByRole('combobox', { name: label, exact: true }).click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

beforeAll(async () => {
  c = await startConsole();
  product = await c.api('POST', '/products', {
    productKey: 'atlas',
    name: 'Atlas Studio',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['OFFLINE', 'ONLINE'],
    maxMachines: 2,
    params: PARAMS,
  });
  checkToken = (await c.api('POST', `/products/${product.id}/check-token`)).checkToken;
  const expired = await c.api('POST', '/licenses', {
    productId: product.id,
    licensee: 'Old Timer Ltd',
    issueDate: '2024-01-10',
    validityMonths: 12,
    params: { edition: 'Legacy' },
  });
  expiredLid = expired.lid;
  await c.api('POST', '/users', { username: 'viewer', role: 'VIEWER', password: 'viewer password 1' });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

describe('the licence lifecycle in the console', () => {
  it('issues an ONLINE licence with a parameter of every type, showing a 400 beside its field', async () => {
    await page.goto('/o/default/licences');
    await page.getByRole('button', { name: 'Issue licence' }).click();
    const dialog = page.getByRole('dialog', { name: 'Issue licence' });
    await choose('Product', 'Atlas Studio (atlas)');
    await dialog.getByLabel('Customer name').fill('Quokka Systems');
    await dialog.getByLabel('Customer email').fill('ops@quokka.example');
    await expect.poll(() => dialog.getByRole('combobox', { name: 'Licence type' }).inputValue()).toBe('ONLINE');
    await dialog.getByLabel('Validity (months)').fill('1');
    await dialog.getByLabel('Grace days').fill('7');
    await dialog.getByLabel('Max machines').fill('2');
    await dialog.getByLabel('Notes').fill('Pilot for the Q1 rollout');
    await expectAccessible(page, 'issue form');
    await expectLayout(page, 'issue-form');
    await dialog.getByLabel('Edition name').fill('Studio');
    await dialog.getByLabel('Seats').fill('25');
    await dialog.getByLabel('Beta features').check();
    await dialog.getByLabel('Support until').fill('2027-06-30');
    const modules = dialog.getByLabel('Modules');
    await modules.fill('export');
    await modules.press('Enter');
    await modules.fill('api');
    await modules.press('Enter');
    // A fingerprint the service refuses: its 400 appears beside the field it names.
    const fingerprints = dialog.getByLabel('Fingerprints to bind at issue');
    await fingerprints.fill('SVC1.not-a-fingerprint');
    await fingerprints.press('Enter');
    await dialog.getByRole('button', { name: 'Issue', exact: true }).click();
    await dialog.getByText(/^Fingerprints item 1: /).waitFor();
    await fingerprints.press('Backspace');
    await choose('Tier', 'pro');
    await dialog.getByRole('button', { name: 'Issue', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Quokka Systems' }).waitFor();

    const lid = page.url().split('/').pop()!;
    const licence = await c.api('GET', `/licenses/${lid}`);
    expect(licence).toMatchObject({
      licenceType: 'ONLINE',
      graceDays: 7,
      maxMachines: 2,
      notes: 'Pilot for the Q1 rollout',
      licenseeEmail: 'ops@quokka.example',
    });
    expect(licence.claims).toMatchObject({ edition: 'Studio', seats: 25, beta: true, 'support-until': '2027-06-30', modules: ['export', 'api'], tier: 'pro' });
  });

  it('finds the licence by search and by window, with every filter in the URL', async () => {
    await page.goto('/o/default/licences');
    await page.getByLabel('Search').fill('quokka');
    await page.waitForURL(/q=quokka/);
    await page.getByRole('link', { name: 'Quokka Systems' }).waitFor();
    await expect.poll(() => page.getByRole('table', { name: 'Licences' }).getByRole('row').count()).toBe(2);
    await page.goto('/o/default/licences?window=90d');
    await expect.poll(() => page.getByRole('tab', { name: /90 days/ }).getAttribute('aria-selected')).toBe('true');
    await page.getByRole('link', { name: 'Quokka Systems' }).waitFor();
    expect(await page.getByRole('link', { name: 'Old Timer Ltd' }).count()).toBe(0);
    await page.getByRole('tab', { name: /Expired/ }).click();
    await page.waitForURL(/window=expired/);
    await page.getByRole('link', { name: 'Old Timer Ltd' }).waitFor();
    await page.getByRole('tab', { name: /All/ }).click();
    await page.getByRole('button', { name: /Licensee/ }).click();
    await page.waitForURL(/sort=licensee&asc=true/);
    await expectAccessible(page, 'licences list');
    await expectLayout(page, 'licences');
  });

  it('shows each licence as a card on a phone: licensee, status, product, expiry and seats in view, sortable', async () => {
    await page.setViewportSize({ width: 390, height: 900 });
    await page.goto('/o/default/licences');
    const card = page.getByRole('list', { name: 'Licences' }).getByRole('listitem').filter({ hasText: 'Quokka Systems' });
    await card.waitFor();
    expect(await page.getByRole('table').count()).toBe(0);
    expect(await line(card, 'Product')).toBe('Atlas Studio');
    expect(await line(card, 'Seats')).toBe('0 / 2');
    const parts = [
      card.getByRole('link', { name: 'Quokka Systems' }),
      card.getByText('ACTIVE', { exact: true }),
      card.locator('dd', { has: page.locator('time') }).first(),
    ];
    for (const part of parts) {
      const box = (await part.boundingBox())!;
      expect(box.x >= 0 && box.x + box.width <= 390, `${await part.textContent()} within the screen`).toBe(true);
    }
    await page.getByRole('combobox', { name: 'Sort by' }).click();
    await page.getByRole('option', { name: 'Licensee', exact: true }).click();
    await page.waitForURL(/sort=licensee&asc=true/);
    await page.getByRole('button', { name: /reverse/ }).click();
    await page.waitForURL((url) => url.searchParams.get('sort') === 'licensee' && !url.searchParams.has('asc'));
    await expectAccessible(page, 'licence cards');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('renews the licence and shows the superseded term; revokes with a reason and reinstates', async () => {
    await page.getByRole('link', { name: 'Quokka Systems' }).click();
    await page.getByRole('heading', { level: 1, name: 'Quokka Systems' }).waitFor();
    await page.getByRole('button', { name: 'Renew', exact: true }).click();
    const renew = page.getByRole('dialog', { name: 'Renew licence' });
    await expect.poll(() => renew.getByLabel('Edition name').inputValue()).toBe('Studio');
    await renew.getByLabel('Validity (months)').fill('12');
    await renew.getByRole('button', { name: 'Renew licence' }).click();
    await page.getByRole('button', { name: 'Download term 1' }).waitFor();

    await page.getByRole('button', { name: 'Revoke', exact: true }).click();
    const revoke = page.getByRole('dialog', { name: 'Revoke this licence' });
    await revoke.getByLabel('Reason').fill('Chargeback');
    await revoke.getByRole('button', { name: 'Revoke', exact: true }).click();
    await page.getByText('“Chargeback”').waitFor();
    await page.getByRole('button', { name: 'Reinstate' }).click();
    await page.getByRole('button', { name: 'Revoke', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Reinstate' }).count()).toBe(0);
  });

  it('shows the machine an SDK check bound, and releases it', async () => {
    const lid = page.url().split('/').pop()!;
    const licence = await c.api('GET', `/licenses/${lid}`);
    const client = new LicenceClient({
      baseUrl: c.url,
      slug: 'default',
      checkId: product.checkId,
      checkToken,
      publicKeyPem: product.publicKeyPem,
      licence: licence.licenseString,
      store: memoryStore(),
      stableId: 'console-test-machine',
      machineLabel: 'Reception PC',
    });
    expect((await client.check()).state).toBe('VALID');
    await page.reload();
    await page.getByText('Reception PC').waitFor();
    await expectAccessible(page, 'licence page');
    await expectLayout(page, 'licence');
    await page.getByRole('button', { name: 'Release', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Release Reception PC' });
    await dialog.getByRole('button', { name: 'Release', exact: true }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Release', exact: true }).count()).toBe(0);
    await expect
      .poll(async () => (await c.api('GET', `/licenses/${lid}/machines`))[0])
      .toMatchObject({ live: false, releasedBy: 'admin', label: 'Reception PC' });
  });

  it('edits the notes in place', async () => {
    await page.getByRole('button', { name: 'Edit notes' }).click();
    await page.getByLabel('Notes').fill('Renewed after the pilot');
    await page.getByRole('button', { name: 'Save notes' }).click();
    await page.getByText('Renewed after the pilot').waitFor();
  });

  it('archives an expired licence and finds it under the archived window', async () => {
    await page.goto(`/o/default/licences/${expiredLid}`);
    await page.getByRole('heading', { level: 1, name: 'Old Timer Ltd' }).waitFor();
    await page.getByRole('button', { name: 'Archive' }).click();
    await page.getByRole('dialog', { name: 'Archive this licence' }).getByRole('button', { name: 'Archive' }).click();
    await page.getByRole('button', { name: 'Restore' }).waitFor();
    await page.goto('/o/default/licences?window=archived');
    await page.getByRole('link', { name: 'Old Timer Ltd' }).waitFor();
  });

  it('exports the current filter as CSV', async () => {
    await page.goto('/o/default/licences?q=quokka');
    await page.getByRole('link', { name: 'Quokka Systems' }).waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const text = fs.readFileSync((await download.path())!, 'utf8');
    const lines = text.trim().split('\r\n');
    expect(lines[0]).toMatch(/^lid,licensee,licenseeEmail,productKey/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('Quokka Systems');
  });

  it('verifies a pasted licence string: whose it is, what it grants, until when, and whether the ledger agrees', async () => {
    await c.api('PUT', '/settings', { timezone: 'Pacific/Auckland' });
    const lid = (await c.api('GET', '/licenses/page?q=quokka')).items[0].lid;
    const full = await c.api('GET', `/licenses/${lid}`);
    // A machine its check bound, though the string names none.
    const client = new LicenceClient({
      baseUrl: c.url,
      slug: 'default',
      checkId: product.checkId,
      checkToken,
      publicKeyPem: product.publicKeyPem,
      licence: full.licenseString,
      store: memoryStore(),
      stableId: 'verify-test-machine',
    });
    expect((await client.check()).state).toBe('VALID');
    // Pasted as an email client wraps it: the service removes the line breaks and says so.
    const verdict = await verify(full.licenseString.match(/.{1,72}/g)!.join('\n'));
    await verdict.getByText('Valid', { exact: true }).waitFor();
    await page.getByRole('status').getByText('Line breaks and spaces were removed from the pasted text', { exact: false }).waitFor();
    const who = verdict.getByRole('region', { name: 'Who' });
    expect(await line(who, 'Licensee')).toBe('Quokka Systems');
    await who.getByRole('link', { name: 'Quokka Systems' }).waitFor();
    await who.getByText('ops@quokka.example').waitFor();
    const grants = verdict.getByRole('region', { name: 'What it grants' });
    expect(await line(grants, 'Product')).toBe('Atlas Studio (atlas)');
    expect(await line(grants, 'Type')).toBe('ONLINE');
    expect(await line(grants, 'Max machines')).toBe('2');
    await expect.poll(() => line(grants, 'Bound machines')).toBe('none signed in; 1 machine is bound now');
    // The product's parameters by their labels, in plain words.
    await expect.poll(() => line(grants, 'Edition name')).toBe('Studio');
    expect(await line(grants, 'Beta features')).toBe('yes');
    expect(await line(grants, 'Modules')).toBe('export, api');
    expect(await line(grants, 'Support until')).toBe('2027-06-30');
    const until = verdict.getByRole('region', { name: 'Until when' });
    expect(await line(until, 'Times in')).toBe('Pacific/Auckland');
    const graceEnd = value(until, 'Grace ends').locator('time');
    const graceEndsAt = await graceEnd.getAttribute('datetime');
    const inZone = await page.evaluate(
      (iso) => new Intl.DateTimeFormat(undefined, { timeZone: 'Pacific/Auckland', dateStyle: 'medium', timeStyle: 'short' }).format(new Date(iso)),
      graceEndsAt!,
    );
    expect(await graceEnd.textContent()).toBe(inZone);
    const ledger = verdict.getByRole('region', { name: 'Ledger' });
    await ledger.getByText('ACTIVE', { exact: true }).waitFor();
    expect(await line(ledger, 'Revoked')).toBe('no');
    expect(await line(ledger, 'This term')).toBe('current');
    expect(await ledger.getByRole('link', { name: 'Open the licence' }).getAttribute('href')).toBe(`/o/default/licences/${lid}`);
    await expectAccessible(page, 'verify page');
    await expectLayout(page, 'verify');

    // The term the renewal replaced: still signed, but the ledger says what replaced it.
    const old = await c.api('GET', `/licenses/${lid}/versions/1`);
    const superseded = await verify(old.licenseString);
    await superseded.getByText(/a renewal replaced this term/).waitFor();
    await superseded.getByRole('region', { name: 'Ledger' }).getByText('superseded', { exact: true }).waitFor();
    await superseded
      .getByRole('region', { name: 'Ledger' })
      .getByText(/the current term expires/)
      .waitFor();
    await c.api('PUT', '/settings', { timezone: 'UTC' });
  });

  it('says what is wrong with a string that is not a licence, or whose signature does not match', async () => {
    const malformed = await verify('not a licence string');
    await malformed.getByText('Not valid', { exact: true }).waitFor();
    await malformed.getByText('MALFORMED', { exact: true }).waitFor();
    await malformed.getByText(/it does not decode/).waitFor();

    const full = await c.api('GET', `/licenses/${expiredLid}`);
    const [payload, signature] = full.licenseString.split('.');
    const tampered = await verify(`${payload}.${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`);
    await tampered.getByText('BAD_SIGNATURE', { exact: true }).waitFor();
    await tampered.getByText(/matches none of the product’s keys/).waitFor();
    // Whose it claims to be is still shown, from the ledger.
    expect(await line(tampered.getByRole('region', { name: 'Who' }), 'Licensee')).toBe('Old Timer Ltd');
    await expectAccessible(page, 'verify page, refused');
    await expectLayout(page, 'verify-refused');
  });

  it('shows every refusal where it happened: Reinstate at the plan limit, Restore of a licence restored elsewhere', async () => {
    const licence = await c.api('POST', '/licenses', { productId: product.id, licensee: 'Plan Limit Co', params: { edition: 'Lite' } });
    await c.api('POST', `/licenses/${licence.lid}/revoke`, { reason: 'Unpaid' });
    // The plan is full: reinstating would make one more licence count.
    await c.cli(['platform-account', 'create', '--username', 'ops', '--password', 'platform password 1', '--role', 'PLATFORM_ADMIN']);
    const login = await fetch(`${c.url}/platform/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ops', password: 'platform password 1' }),
    });
    const platform = { 'content-type': 'application/json', cookie: login.headers.get('set-cookie')!.split(';')[0]! };
    const plan = (planLimit: number | null) =>
      fetch(`${c.url}/platform/api/organisations/default`, { method: 'PUT', headers: platform, body: JSON.stringify({ planLimit }) });
    await plan((await c.api('GET', '/dashboard')).plan.used);
    await page.goto(`/o/default/licences/${licence.lid}`);
    await page.getByRole('heading', { level: 1, name: 'Plan Limit Co' }).waitFor();
    // Claims in words, the raw claims a switch away; an ONLINE licence that never checked in says so.
    const claims = page.getByRole('table', { name: 'Claims' });
    await claims.getByRole('row', { name: /^Grace 0 days$/ }).waitFor();
    await claims.getByRole('row', { name: /^Edition name Lite$/ }).waitFor();
    expect(
      await claims
        .getByRole('row', { name: /^Expires / })
        .locator('time')
        .count(),
    ).toBe(1);
    await page.getByText('Never checked in', { exact: true }).waitFor();
    await page.getByLabel('Show the raw claims').check();
    await claims.getByRole('row', { name: /^grace 0$/ }).waitFor();
    await page.getByLabel('Show the raw claims').uncheck();
    await page.getByRole('button', { name: 'Reinstate' }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'Not reinstated' });
    await refused.getByText(/plan's limit of \d+ active licences is reached/).waitFor();
    expect((await c.api('GET', `/licenses/${licence.lid}`)).revoked).toBe(true);
    await expectAccessible(page, 'licence page, reinstate refused');
    await expectLayout(page, 'licence-refused');
    await plan(null);

    await c.api('POST', `/licenses/${licence.lid}/archive`, {});
    await page.reload();
    await page.getByRole('button', { name: 'Restore' }).waitFor();
    // Someone else restores it first: this page's Restore is refused, and says so beside the button.
    await c.api('POST', `/licenses/${licence.lid}/restore`, {});
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('alert').filter({ hasText: 'Not restored' }).getByText('the licence is not archived').waitFor();
  });

  it('finds a licence from the command palette by keyboard', async () => {
    await page.goto('/o/default/');
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    await page.keyboard.press('Control+k');
    await page.getByLabel('Find a licence, product, customer or page').fill('quokka');
    await page.getByRole('option', { name: /Quokka Systems.*licence/ }).waitFor();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Quokka Systems' }).waitFor();
  });

  it('shows a VIEWER the write actions disabled, with the reason', async () => {
    const viewer = await c.page();
    await signIn(viewer, 'viewer', 'viewer password 1');
    await viewer.goto('/o/default/licences');
    await expect.poll(() => viewer.getByRole('button', { name: 'Issue licence' }).isDisabled()).toBe(true);
    await viewer
      .getByLabel(/can read but not change/)
      .first()
      .waitFor();
    await viewer.getByRole('link', { name: 'Quokka Systems' }).click();
    await expect.poll(() => viewer.getByRole('button', { name: 'Renew', exact: true }).isDisabled()).toBe(true);
    await viewer.context().close();
  });
});
