import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, PASSWORD, signIn, startConsole, type Console } from './harness.js';

let c: Console;
/** The one signed-in page that walks the navigation. */
let walker: Page | undefined;
beforeAll(async () => {
  c = await startConsole();
  const product = await c.api('POST', '/products', {
    productKey: 'atlas',
    name: 'Atlas Studio',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['OFFLINE', 'ONLINE'],
  });
  for (const [licensee, extra] of [
    ['Ada Labs', {}],
    ['Brook & Sons', { validityMonths: 1 }],
    ['Cobalt GmbH', { validityMonths: 0 }],
  ] as const) {
    await c.api('POST', '/licenses', { productId: product.id, licensee, licenseeEmail: `${licensee.split(' ')[0]!.toLowerCase()}@example.com`, ...extra });
  }
});
afterAll(() => c?.close());

describe('console basics', () => {
  it('serves the console with the headers of DESIGN 7, and the API with its own', async () => {
    const page = await fetch(`${c.url}/o/default/licences?q=x`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(
      /default-src 'self'.*script-src 'self';.*frame-ancestors 'none'.*object-src 'none'.*base-uri 'self'/,
    );
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('same-origin');
    const html = await page.text();
    expect(html).toMatch(/<div id="root">/);
    // Assets go out precompressed when the browser accepts it, and decode to the same bytes.
    const script = `${c.url}${/src="(\/assets\/[^"]+\.js)"/.exec(html)![1]}`;
    const plain = await fetch(script, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const raw = Buffer.from(await plain.arrayBuffer());
    for (const [accept, encoding] of [
      ['gzip, deflate, br', 'br'],
      ['gzip', 'gzip'],
      ['br;q=0, gzip', 'gzip'],
    ] as const) {
      const encoded = await fetch(script, { headers: { 'accept-encoding': accept } });
      expect(encoded.headers.get('content-encoding')).toBe(encoding);
      expect(encoded.headers.get('vary')).toBe('accept-encoding');
      expect(Buffer.from(await encoded.arrayBuffer())).toEqual(raw);
    }
    const apiAnswer = await fetch(`${c.url}/o/default/api/auth/me`);
    expect(apiAnswer.headers.get('cache-control')).toBe('no-store');
    expect(apiAnswer.headers.get('x-content-type-options')).toBe('nosniff');
    const unknownApi = await fetch(`${c.url}/o/default/api/nothing-here`);
    expect(unknownApi.status).toBe(404);
    expect(await unknownApi.json()).toMatchObject({ error: expect.any(String) });
  });

  it('asks for the organisation at /, remembering it, and shows a wrong password as the API says', async () => {
    const page = await c.page();
    await page.goto('/');
    await page.getByLabel('Organisation').fill('default');
    await expectAccessible(page, 'organisation chooser');
    await expectLayout(page, 'chooser');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(/\/o\/default\/sign-in/);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password', { exact: true }).fill('not the password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('wrong username or password');
    await expectAccessible(page, 'sign-in');
    await expectLayout(page, 'sign-in');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
    await page.context().close();
  });

  it('shows the dashboard figures, with a link for each licence expiring soon', async () => {
    const page = await c.page();
    await signIn(page);
    const figures = page.getByLabel('Licence figures');
    await expect.poll(() => figures.textContent()).toMatch(/Licences3/);
    await expect.poll(() => figures.textContent()).toMatch(/Active3/);
    const expiring = page.getByRole('link', { name: 'Brook & Sons' });
    await expiring.waitFor();
    for (const name of ['Dashboard', 'Licences', 'Products', 'Customers', 'Members', 'API tokens', 'Activity', 'Settings', 'Verify']) {
      await expect.poll(() => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).count()).toBe(1);
    }
    // The API reference the service serves, for the people who script what the console does.
    expect(
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: /^API reference/ })
        .getAttribute('href'),
    ).toBe('/docs');
    await expectAccessible(page, 'dashboard');
    await expectLayout(page, 'dashboard');
    await expiring.click();
    await page.getByRole('heading', { level: 1, name: 'Brook & Sons' }).waitFor();
    await page.context().close();
  });

  it('sends a page whose session ended elsewhere to sign-in, and back after signing in', async () => {
    const page = await c.page();
    await signIn(page);
    // Every request of the page answered first, and none for half a second after, so the next one
    // is the click's: a request still in flight at the sign-out would answer 401 and send the page
    // to sign-in before the click (a query mounted once the page's data came, on a loaded machine).
    // Playwright's network idleness raced the other way: quiet while the page's code still parsed.
    const inFlight = new Set<unknown>();
    const isApi = (request: { url(): string }) => new URL(request.url()).pathname.startsWith('/o/default/api/');
    page.on('request', (request) => isApi(request) && inFlight.add(request));
    page.on('requestfinished', (request) => inFlight.delete(request));
    page.on('requestfailed', (request) => inFlight.delete(request));
    const answered = (path: string) => page.waitForResponse((response) => new URL(response.url()).pathname === `/o/default/api${path}`);
    const pageAnswers = Promise.all([answered('/licenses/page'), answered('/licenses/windows')]);
    await page.goto('/o/default/licences?status=ACTIVE');
    await page.getByRole('heading', { level: 1, name: 'Licences' }).waitFor();
    await pageAnswers;
    for (let quietSince = Date.now(); Date.now() - quietSince < 500; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (inFlight.size > 0) quietSince = Date.now();
    }
    // The session ends elsewhere: the same cookie signs out through the API.
    const cookie = (await page.context().cookies()).find((k) => k.name === 'svc_session')!;
    await fetch(`${c.url}/o/default/api/auth/logout`, { method: 'POST', headers: { cookie: `svc_session=${cookie.value}` } });
    await page.getByRole('link', { name: 'Customers', exact: true }).click();
    await page.waitForURL(/\/sign-in\?next=/);
    // The page says why it asks again.
    await page.getByRole('status').getByText('Your session has ended').waitFor();
    await expectLayout(page, 'sign-in-ended');
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Customers' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/o/default/customers');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in$/);
    await page.context().close();
  });

  it.each([
    ['Products', 'products'],
    ['Customers', 'customers'],
    ['Members', 'members'],
    ['API tokens', 'tokens'],
    ['Activity', 'activity'],
    ['Settings', 'settings'],
  ])('shows %s from the navigation, accessible in both themes', async (name, file) => {
    if (!walker) {
      walker = await c.page();
      await signIn(walker);
    }
    await walker.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
    await walker.getByRole('heading', { level: 1, name }).waitFor();
    await walker
      .getByRole('main')
      .getByText(/Atlas Studio|Ada Labs|admin|UTC|No API token/)
      .first()
      .waitFor();
    await expectAccessible(walker, name);
    await expectLayout(walker, file);
  });

  it('checks the sign-in fields before sending, and says when a locked-out name may try again', async () => {
    const page = await c.page(390);
    await page.goto('/o/default/sign-in');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByText('Enter your username').waitFor();
    await page.getByText('Enter your password').waitFor();
    // Ten failures for one name from one address lock it out for a while (DESIGN.md 4).
    for (let i = 0; i < 10; i++) {
      await fetch(`${c.url}/o/default/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'mallory', password: `guess number ${i}` }),
      });
    }
    await page.getByLabel('Username').fill('mallory');
    await page.getByLabel('Password', { exact: true }).fill('one more guess');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toMatch(/Too many failed sign-in attempts\. Try again in \d+ minutes, at \d{1,2}:\d{2}/);
    expect(await alert.textContent()).not.toMatch(/service said/i);
    await expectAccessible(page, 'sign-in locked out');
    await expectLayout(page, 'sign-in-locked');
    await page.context().close();
  });

  it('says so for an organisation that does not exist', async () => {
    const page = await c.page();
    await page.goto('/o/nowhere/');
    await page.getByRole('heading', { level: 1, name: 'No such organisation' }).waitFor();
    await page.context().close();
  });
});
