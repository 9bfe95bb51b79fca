import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
const PASSWORD = 'platform console password';

beforeAll(async () => {
  c = await startConsole();
  await c.cli(['platform-account', 'create', '--username', 'ops', '--password', PASSWORD, '--role', 'PLATFORM_ADMIN']);
  await c.cli(['platform-account', 'create', '--username', 'helpdesk', '--password', PASSWORD, '--role', 'PLATFORM_SUPPORT']);
  page = await c.page();
});
afterAll(() => c?.close());

async function platformSignIn(p: Page, username: string) {
  await p.goto('/platform/');
  await p.waitForURL(/\/platform\/sign-in/);
  await p.getByLabel('Username').fill(username);
  await p.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  await p.getByRole('heading', { level: 1, name: 'Organisations' }).waitFor();
}

describe('the control plane console', () => {
  it('creates an organisation with its first administrator, who then signs in to it', async () => {
    await platformSignIn(page, 'ops');
    await expectAccessible(page, 'platform sign-in result');
    await page.getByRole('button', { name: 'New organisation' }).click();
    const form = page.getByRole('dialog', { name: 'New organisation' });
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('Initech');
    await form.getByRole('textbox', { name: 'Slug' }).fill('initech');
    await form.getByLabel('Plan limit').fill('3');
    await form.getByLabel('Trial limit').fill('5');
    await form.getByRole('textbox', { name: 'Password' }).fill('initech admin password');
    await expectAccessible(page, 'new organisation form');
    await form.getByRole('button', { name: 'Create organisation' }).click();
    const row = page.getByRole('row', { name: /Initech/ });
    await row.getByText('0 of 3').waitFor();
    await row.getByText('0 of 5 active trials').waitFor();
    await row.getByText('active', { exact: true }).waitFor();

    const person = await c.page();
    await person.goto('/o/initech/sign-in');
    await person.getByLabel('Username').fill('admin');
    await person.getByLabel('Password', { exact: true }).fill('initech admin password');
    await person.getByRole('button', { name: 'Sign in', exact: true }).click();
    await person.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    // A new organisation's dashboard is its first steps, not a wall of zeros.
    const steps = person.getByRole('region', { name: 'First steps' });
    await steps.getByText('0 of 4 done', { exact: false }).waitFor();
    expect(await steps.getByRole('link', { name: 'Create a product' }).getAttribute('href')).toBe('/o/initech/products');
    expect(await person.getByLabel('Licence figures').count()).toBe(0);
    await expectAccessible(person, 'first steps');
    await expectLayout(person, 'first-steps');
    await person.context().close();
  });

  it('changes the plan, and suspends and resumes after saying what follows', async () => {
    await page.getByRole('button', { name: 'Change plan of Initech' }).click();
    const plan = page.getByRole('dialog', { name: 'Change plan of Initech' });
    await plan.getByLabel('Plan limit').fill('10');
    await plan.getByLabel('Trial limit').fill('');
    await plan.getByRole('button', { name: 'Save plan' }).click();
    await page
      .getByRole('row', { name: /Initech/ })
      .getByText('0 of 10')
      .waitFor();
    await page
      .getByRole('row', { name: /Initech/ })
      .getByText('0 active trials, no trial limit')
      .waitFor();

    await page
      .getByRole('row', { name: /Initech/ })
      .getByRole('button', { name: 'Suspend' })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Suspend Initech' });
    await dialog.getByText(/keep checking in/).waitFor();
    await dialog.getByRole('button', { name: 'Suspend' }).click();
    await page
      .getByRole('row', { name: /Initech/ })
      .getByText('suspended')
      .waitFor();
    const refused = await fetch(`${c.url}/o/initech/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'initech admin password' }),
    });
    expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([403, 'organisation suspended']);
    await expectAccessible(page, 'organisations page');
    await expectLayout(page, 'platform-organisations');

    await page
      .getByRole('row', { name: /Initech/ })
      .getByRole('button', { name: 'Resume' })
      .click();
    await page.getByRole('dialog', { name: 'Resume Initech' }).getByRole('button', { name: 'Resume' }).click();
    await page
      .getByRole('row', { name: /Initech/ })
      .getByText('active', { exact: true })
      .waitFor();
  });

  it('shows the activity, and opens an organisation’s console as the platform', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('heading', { level: 1, name: 'Activity' }).waitFor();
    for (const action of ['Organisation: created', 'Member: created', 'Organisation: suspended', 'Organisation: resumed'])
      await page.getByText(action, { exact: true }).first().waitFor();
    // Details in words, never the recorded JSON.
    await page
      .getByText(/plan limit (unlimited|\d+) → 10/)
      .first()
      .waitFor();
    await page
      .getByText(/role Administrator/)
      .first()
      .waitFor();
    expect(await page.getByText(/[{"]/).count()).toBe(0);
    await expectAccessible(page, 'platform activity');
    await expectLayout(page, 'platform-activity');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Passkeys' }).click();
    await page.getByRole('form', { name: 'Add a passkey' }).waitFor();
    await expectAccessible(page, 'platform passkeys');

    await page.goto('/platform/');
    await page
      .getByRole('row', { name: /Initech/ })
      .getByRole('link', { name: 'Open console' })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    await page.getByText('platform/ops · Administrator').waitFor();
  });

  it('shows PLATFORM_SUPPORT the changes disabled, with the reason', async () => {
    const support = await c.page();
    await platformSignIn(support, 'helpdesk');
    await expect.poll(() => support.getByRole('button', { name: 'New organisation' }).isDisabled()).toBe(true);
    await support
      .getByText(/Only a platform administrator changes organisations/)
      .first()
      .waitFor();
    expect(await support.getByRole('button', { name: 'Change plan of Initech' }).count()).toBe(0);
    await support.context().close();
  });
});
