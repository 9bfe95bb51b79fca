import path from 'node:path';
import Sqlite from 'better-sqlite3';
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
    await visitor.getByRole('button', { name: 'Use a password (break-glass)' }).waitFor();
    expect(await visitor.getByLabel('Username').count()).toBe(0);
    await expectAccessible(visitor, 'sign-in page with single sign-on required');
    await expectLayout(visitor, 'sign-in-sso-required');
    await visitor.getByRole('button', { name: 'Use a password (break-glass)' }).click();
    await signInHere(visitor);
    await visitor.context().close();
  });
});

describe('Single sign-on for one’s own account', () => {
  it('marks the roles the identity provider sets, links an administrator’s own account, and signs in again before a passkey', async () => {
    // Ada's role comes from the identity provider's groups; the break-glass administrator keeps theirs.
    await page.goto('/o/default/members');
    const ada = page.getByRole('row', { name: /Ada Lovelace/ });
    await ada.getByText('role managed by Test IdP').waitFor();
    await expectAccessible(page, 'members with a role single sign-on manages');
    await expectLayout(page, 'members-sso-role');
    await ada.getByRole('button', { name: 'Edit ada@example.com' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Ada Lovelace' });
    await dialog.getByText('Role managed by Test IdP: their next sign-in with it sets the role its rules give').waitFor();
    await expectAccessible(page, 'editing a member whose role single sign-on manages');
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    // The administrator links their own account in Settings: through the identity provider and back, linked.
    await page.goto('/o/default/settings');
    const own = page.getByRole('region', { name: 'Your Test IdP account' });
    await own.getByText('Not linked.', { exact: false }).waitFor();
    await expectAccessible(page, 'settings with an account to link');
    await expectLayout(page, 'settings-sso-link');
    idp.account = { sub: 'admin-at-idp', email: 'admin@example.com', email_verified: true, name: 'The administrator', groups: [] };
    await own.getByRole('button', { name: 'Link Test IdP' }).click();
    await page.waitForURL(/\/o\/default\/settings$/);
    await own.getByText('Linked on', { exact: false }).waitFor();
    const admin = (await c.api('GET', '/users')).find((m: { username: string }) => m.username === 'admin');
    expect(admin).toMatchObject({ role: 'ORG_ADMIN', ssoLinkedAt: expect.any(String) });
    expect((await c.api('GET', '/dashboard/activity?action=sso.linked')).items[0]).toMatchObject({ actor: 'admin' });
    await page.goto('/o/default/members');
    const adminRow = page.getByRole('row', { name: /admin/ }).filter({ hasText: 'you' });
    await adminRow.getByText('Single sign-on', { exact: true }).waitFor();
    expect(await adminRow.getByText('role managed by').count()).toBe(0);

    // Ada has no password: a passkey is added soon after a sign-in with the identity provider, else it asks for a fresh one first.
    idp.account = { sub: 'ada', email: 'ada@example.com', email_verified: true, name: 'Ada Lovelace', groups: ['licensor-admins'] };
    const visitor = await c.page(390);
    const cdp = await visitor.context().newCDPSession(visitor);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await visitor.goto('/o/default/sign-in?next=%2Fo%2Fdefault%2Fsettings');
    await visitor.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await visitor.waitForURL(/\/o\/default\/settings$/);
    const form = visitor.getByRole('form', { name: 'Add a passkey' });
    await form.getByText('Empty if you sign in only with Test IdP').waitFor();
    const db = new Sqlite(path.join(c.dataDir, 'licensor.sqlite'));
    try {
      db.prepare("update sessions set sso_at = sso_at - 360000 where user_id = (select id from users where username = 'ada@example.com')").run();
    } finally {
      db.close();
    }
    const signIns = async () => (await c.api('GET', '/dashboard/activity?action=auth.sso_login')).total as number;
    const before = await signIns();
    const requested: string[] = [];
    visitor.on('request', (request) => requested.push(request.url()));
    await form.getByLabel('Passkey name').fill('Ada’s phone');
    await form.getByRole('button', { name: 'Add a passkey' }).click();
    // Refused for want of a fresh sign-in: the console goes through the identity provider (prompt=login) and back.
    await expect.poll(signIns, { timeout: 20_000 }).toBe(before + 1);
    await visitor.waitForURL(/\/o\/default\/settings$/);
    expect(requested.some((url) => url.startsWith(`${c.url}/o/default/api/sso/start?prompt=login&returnTo=%2Fo%2Fdefault%2Fsettings`))).toBe(true);
    await expect.poll(async () => (await form.getByLabel('Passkey name').inputValue()) === '' && (await form.isVisible())).toBe(true);
    await form.getByLabel('Passkey name').fill('Ada’s phone');
    await form.getByRole('button', { name: 'Add a passkey' }).click();
    // Within 5 minutes of that sign-in it is added (at 390 px the passkeys are cards, not a table).
    await visitor.getByRole('region', { name: 'Passkeys' }).getByText('Ada’s phone').waitFor();
    await expectAccessible(visitor, 'settings of a member without a password, with a passkey');
    await expectLayout(visitor, 'settings-sso-passkey');
    const logins = (await c.api('GET', '/dashboard/activity?action=auth.sso_login')).items;
    expect(logins[0]).toMatchObject({ actor: 'ada@example.com' });
    await visitor.context().close();
  });
});

async function signInHere(visitor: Page) {
  await visitor.getByLabel('Username').fill('admin');
  await visitor.getByLabel('Password', { exact: true }).fill('console test password');
  await visitor.getByRole('button', { name: 'Sign in', exact: true }).click();
  await visitor.getByRole('navigation', { name: 'Main' }).waitFor();
}
