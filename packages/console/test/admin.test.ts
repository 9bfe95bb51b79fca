import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let product: any;

async function choose(scope: ReturnType<Page['getByRole']>, label: string, option: string) {
  await scope.getByRole('combobox', { name: label, exact: true }).click();
  await page.getByRole('option', { name: option }).first().click();
}

beforeAll(async () => {
  c = await startConsole();
  product = await c.api('POST', '/products', { productKey: 'harbour', name: 'Harbour Desk' });
  // Its expiry reads 14 hours later in Pacific/Kiritimati (UTC+14) than in UTC.
  await c.api('POST', '/licenses', { productId: product.id, licensee: 'Timezone Test Co', validityMonths: 1 });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

describe('members', () => {
  it('adds a member, changes their role, and ends their session by deactivating them', async () => {
    await page.goto('/o/default/members');
    await page.getByRole('button', { name: 'Add member' }).click();
    const form = page.getByRole('dialog', { name: 'Add member' });
    await form.getByLabel('Username').fill('carol');
    await form.getByLabel('Display name').fill('Carol Chen');
    await form.getByLabel('Email').fill('carol@example.com');
    await form.getByRole('textbox', { name: 'Password', exact: true }).fill('carol password 1');
    await choose(form, 'Role', 'Issuer: also issues licences, edits products and customers');
    await form.getByRole('button', { name: 'Add member' }).click();
    await page.getByRole('table', { name: 'Members' }).getByText('Carol Chen').waitFor();

    const carol = await c.page();
    await signIn(carol, 'carol', 'carol password 1');
    await carol.goto('/o/default/members');
    await expect.poll(() => carol.getByRole('button', { name: 'Add member' }).isDisabled()).toBe(true);
    await carol
      .getByText(/Only an Administrator manages members/)
      .first()
      .waitFor();

    await page.getByRole('button', { name: 'Edit carol' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Carol Chen' });
    await choose(edit, 'Role', 'Viewer: reads everything');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page
      .getByRole('row', { name: /Carol Chen/ })
      .getByText('Viewer', { exact: true })
      .waitFor();
    await carol.reload();
    await carol.getByText('Carol Chen · Viewer').waitFor();

    await page.getByRole('button', { name: 'Edit carol' }).click();
    await page.getByRole('dialog', { name: 'Edit Carol Chen' }).getByLabel('Active').uncheck();
    await page.getByRole('dialog', { name: 'Edit Carol Chen' }).getByRole('button', { name: 'Save changes' }).click();
    await page
      .getByRole('row', { name: /Carol Chen/ })
      .getByText('inactive')
      .waitFor();
    // Her next request is refused, and the console sends her to sign in.
    await carol.goto('/o/default/licences');
    await carol.waitForURL(/\/o\/default\/sign-in/);
    await carol.context().close();
    await expectAccessible(page, 'members page');
    await expectLayout(page, 'members');
  });

  it('shows the last-administrator refusal as the API’s message', async () => {
    await page.getByRole('button', { name: 'Edit admin' }).click();
    const edit = page.getByRole('dialog', { name: /^Edit / });
    await choose(edit, 'Role', 'Viewer: reads everything');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit
      .getByRole('alert')
      .getByText(/at least one active ORG_ADMIN/)
      .waitFor();
    await edit.getByRole('button', { name: 'Cancel' }).click();
    expect((await c.api('GET', '/auth/me')).role).toBe('ORG_ADMIN');
  });

  it('deletes a member', async () => {
    await page
      .getByRole('row', { name: /Carol Chen/ })
      .getByRole('button', { name: 'Delete' })
      .click();
    await page.getByRole('dialog', { name: 'Delete Carol Chen' }).getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByRole('row', { name: /Carol Chen/ }).count()).toBe(0);
    expect((await c.api('GET', '/users')).map((u: { username: string }) => u.username)).toEqual(['admin']);
  });
});

describe('API tokens', () => {
  it('creates a token with two scopes, shows it once, and the API honours exactly those scopes until it is revoked', async () => {
    await page.goto('/o/default/tokens');
    await page.getByRole('button', { name: 'Create token' }).click();
    const form = page.getByRole('dialog', { name: 'Create token' });
    await form.getByLabel('Name').fill('ci-deploy');
    await form.getByLabel('licenses:write').check();
    // Write includes read, shown so.
    expect(await form.getByLabel('licenses:read').isChecked()).toBe(true);
    expect(await form.getByLabel('licenses:read').isDisabled()).toBe(true);
    await form.getByLabel('products:read').check();
    await expectAccessible(page, 'token form');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    const token = (await form.getByLabel('API token', { exact: true }).textContent())!;
    expect(token).toMatch(/^svc_/);
    await form.getByText('It will not be shown again').waitFor();
    await expectLayout(page, 'token-created');
    await form.getByRole('button', { name: 'Done' }).click();
    await page
      .getByRole('row', { name: /ci-deploy/ })
      .getByText('licenses:write')
      .waitFor();
    expect(await page.getByText(token).count()).toBe(0);

    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${c.url}/o/default/api${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    expect((await call('GET', '/products')).status).toBe(200);
    expect((await call('POST', '/licenses', { productId: product.id, licensee: 'Issued by CI' })).status).toBe(201);
    expect((await call('POST', '/customers', { name: 'Not allowed' })).status).toBe(403);

    await page
      .getByRole('row', { name: /ci-deploy/ })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await page.getByRole('dialog', { name: 'Revoke ci-deploy' }).getByRole('button', { name: 'Revoke' }).click();
    await page
      .getByRole('row', { name: /ci-deploy/ })
      .getByText('revoked')
      .waitFor();
    expect((await call('GET', '/products')).status).toBe(401);
    await expectAccessible(page, 'tokens page');
    await expectLayout(page, 'tokens');
  });
});

describe('settings', () => {
  it('changes the timezone, and the dashboard’s dates move with it', async () => {
    await page.goto('/o/default/');
    const expiry = page.getByRole('table').filter({ hasText: 'Timezone Test Co' }).locator('time');
    await expiry.first().waitFor();
    const before = await expiry.first().textContent();

    await page.goto('/o/default/settings');
    await page.getByRole('combobox', { name: 'Organisation timezone' }).fill('Kiritimati');
    await page.getByRole('option', { name: /^Pacific\/Kiritimati \(UTC\+14:00\)$/ }).click();
    await page.getByRole('button', { name: 'Save timezone' }).click();
    await page.getByText(/Changed by admin/).waitFor();
    expect((await c.api('GET', '/settings')).timezone).toBe('Pacific/Kiritimati');
    await expectAccessible(page, 'settings page');
    await expectLayout(page, 'settings');

    await page.goto('/o/default/');
    // Until the settings arrive a date shows in UTC: wait for the zone, not the first paint.
    await expect.poll(() => expiry.first().textContent()).not.toBe(before);
  });

  it('changes one’s own password, which then signs in', async () => {
    await c.api('POST', '/users', { username: 'dave', role: 'ISSUER', password: 'dave password 01' });
    const dave = await c.page();
    await signIn(dave, 'dave', 'dave password 01');
    await dave.goto('/o/default/settings');
    const own = dave.getByRole('region', { name: 'Your password' });
    await own.getByLabel('Current password').fill('dave password 01');
    await own.getByRole('textbox', { name: 'New password', exact: true }).fill('dave password 02');
    await own.getByLabel('Repeat the new password').fill('dave password 02');
    await own.getByRole('button', { name: 'Change password' }).click();
    await dave.getByRole('status').getByText('Password changed').waitFor();
    await dave.getByRole('button', { name: 'Sign out' }).click();
    await dave.waitForURL(/sign-in/);
    await signIn(dave, 'dave', 'dave password 02');
    await dave.context().close();
  });
});

describe('passkeys', () => {
  it('adds a passkey in settings, then signs in with it after signing out', async () => {
    await c.api('POST', '/users', { username: 'erin', role: 'VIEWER', password: 'erin password 01' });
    const erin = await c.page();
    // Chromium's virtual authenticator: internal, resident keys, user verification.
    const cdp = await erin.context().newCDPSession(erin);
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
    await signIn(erin, 'erin', 'erin password 01');
    await erin.goto('/o/default/settings');
    const form = erin.getByRole('form', { name: 'Add a passkey' });
    await form.getByLabel('Passkey name').fill('Test laptop');
    await form.getByRole('textbox', { name: 'Current password' }).fill('erin password 01');
    await form.getByRole('button', { name: 'Add a passkey' }).click();
    await erin.getByRole('table', { name: 'Passkeys' }).getByText('Test laptop').waitFor();
    await expectAccessible(erin, 'settings with a passkey');
    await expectLayout(erin, 'settings-passkeys');

    await erin.getByRole('button', { name: 'Sign out' }).click();
    await erin.waitForURL(/sign-in/);
    await erin.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await erin.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    expect((await c.api('GET', '/dashboard/activity?action=passkey.registered')).items[0].actor).toBe('erin');
    await erin.context().close();
  });
});

describe('activity', () => {
  it('links each entry to its subject and filters by a clicked actor', async () => {
    await page.goto('/o/default/activity');
    await page.getByRole('link', { name: /^Created product Harbour Desk/ }).click();
    await page.getByRole('heading', { level: 1, name: 'Harbour Desk' }).waitFor();
    await page.goto('/o/default/activity');
    await page.getByRole('button', { name: 'Only what token/ci-deploy did' }).first().click();
    await expect.poll(() => page.url()).toContain('actor=token%2Fci-deploy');
    // Only the token's own entries remain: no other actor's.
    await page.getByRole('link', { name: /licence of Harbour Desk to Issued by CI/ }).waitFor();
    await expect.poll(() => page.getByRole('button', { name: 'Only what admin did' }).count()).toBe(0);
    await page.getByRole('link', { name: /licence of Harbour Desk to Issued by CI/ }).click();
    await page.getByRole('heading', { level: 1, name: 'Issued by CI' }).waitFor();
    await page.goto('/o/default/activity');
    await expectAccessible(page, 'activity page');
    await expectLayout(page, 'activity');
  });
});
