import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startIdp, type TestIdp } from '../../server/test/sso-helpers.js';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let idp: TestIdp;
let page: Page;

beforeAll(async () => {
  c = await startConsole({ LICENSOR_SSO_ALLOW_NETWORKS: '127.0.0.0/8' });
  idp = await startIdp(`${c.url}/o/default/api/sso/callback`);
  idp.account = { sub: 'ada', email: 'ada@example.com', email_verified: true, name: 'Ada Lovelace', groups: ['licensor-admins'] };
  page = await c.page();
  await signIn(page);
});
afterAll(async () => {
  await c?.close();
  await idp?.close();
});

describe('Single sign-on', () => {
  it('is set up in Settings, tested, and signs a new member in through the identity provider', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    const card = page.getByRole('region', { name: 'Single sign-on' });
    await card.waitFor();
    await card.getByLabel('Name on the sign-in page').fill('Test IdP');
    await card.getByLabel('Issuer URL').fill(idp.issuer);
    await card.getByLabel('Client ID').fill('licensor-console');
    await card.getByLabel('Client secret').fill('a client secret of the test identity provider');
    await card.getByLabel('Scopes').fill('groups');
    await card.getByLabel('Scopes').press('Enter');
    await card.getByLabel('Allowed email domains').fill('example.com');
    await card.getByLabel('Allowed email domains').press('Enter');
    await card.getByLabel('Role claim').fill('groups');
    await card.getByRole('button', { name: 'Add rule' }).click();
    await card.getByLabel('Claim value').fill('licensor-admins');
    await card.getByLabel('Role', { exact: true }).click();
    await page.getByRole('option', { name: 'Administrator' }).click();
    await card.getByLabel('Create members at first sign-in').check();
    await card.getByRole('button', { name: 'Save single sign-on' }).click();
    await card.getByRole('status').getByText('Single sign-on saved.').waitFor();
    expect(await card.getByLabel('Require single sign-on').isDisabled()).toBe(true);
    await card.getByRole('button', { name: 'Test connection' }).click();
    await card.getByText('The identity provider answers').waitFor();
    await expectAccessible(page, 'single sign-on settings');
    await expectLayout(page, 'settings-sso');

    // Another browser: the sign-in page offers the IdP, and the whole sign-in runs through it.
    const visitor = await c.page();
    await visitor.goto('/o/default/sign-in?next=%2Fo%2Fdefault%2Fsettings');
    const button = visitor.getByRole('link', { name: 'Sign in with Test IdP' });
    await button.waitFor();
    await expectAccessible(visitor, 'sign-in page with single sign-on');
    await expectLayout(visitor, 'sign-in-sso');
    await button.click();
    await visitor.waitForURL(/\/o\/default\/settings$/);
    await visitor.getByRole('navigation', { name: 'Main' }).waitFor();
    const me = await visitor.evaluate(async () => (await fetch('/o/default/api/auth/me')).json());
    expect(me).toMatchObject({ username: 'ada@example.com', displayName: 'Ada Lovelace', role: 'ORG_ADMIN' });
    await visitor.context().close();

    // Verified by that sign-in: it can be required, with the administrator as break-glass.
    await page.reload();
    await card.getByText('ada@example.com signed in as Administrator', { exact: false }).waitFor();
    await card.getByLabel('Require single sign-on').check();
    await card.getByRole('group', { name: 'Break-glass administrators' }).getByLabel('admin', { exact: true }).check();
    await card.getByRole('button', { name: 'Save single sign-on' }).click();
    await card.getByRole('status').getByText('Single sign-on saved.').waitFor();
    expect(await c.api('GET', '/sso')).toMatchObject({ enforce: true, breakGlass: ['admin'] });

    // The new member is marked on the members page, with the way to unlink them.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
    const row = page.getByRole('row', { name: /Ada Lovelace/ });
    await row.getByText('Single sign-on', { exact: true }).waitFor();
    await row.getByRole('button', { name: 'Unlink single sign-on' }).waitFor();
  });

  it('puts the password behind break-glass while required, and says why a sign-in was refused', async () => {
    const visitor = await c.page(390);
    await visitor.goto('/o/default/sign-in?ssoError=DOMAIN_NOT_ALLOWED');
    await visitor.getByRole('alert').getByText('Your email address’s domain is not allowed to sign in here.').waitFor();
    expect(await visitor.getByLabel('Username').count()).toBe(0);
    await expectAccessible(visitor, 'sign-in page with single sign-on required');
    await expectLayout(visitor, 'sign-in-sso-required');
    await visitor.getByRole('button', { name: 'Use a password (break-glass)' }).click();
    await signInHere(visitor);
    await visitor.context().close();
  });
});

async function signInHere(visitor: Page) {
  await visitor.getByLabel('Username').fill('admin');
  await visitor.getByLabel('Password', { exact: true }).fill('console test password');
  await visitor.getByRole('button', { name: 'Sign in', exact: true }).click();
  await visitor.getByRole('navigation', { name: 'Main' }).waitFor();
}
