// Releases in the console (DESIGN.md 20): a product's Releases page, a release's page (upload with
// its progress, publish with a backdate, yank, unyank), a Viewer's read-only view, the customer
// portal's Downloads, and the update window in the product, issue, renew and licence pages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let product: any;
let lid: string;
let bearer: string;
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

/** Creates a release through the API with one file, published at `publishedAt` (a backdate) or now. */
async function ship(version: string, file: string, content: string, extra: { requires?: object; publishedAt?: string } = {}) {
  const release = await c.api('POST', `/products/${product.id}/releases`, { version, requires: extra.requires ?? {} });
  const upload = await fetch(`${c.url}/o/default/api/releases/${release.id}/artifacts?filename=${encodeURIComponent(file)}&platform=any&arch=any`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/zip' },
    body: content,
  });
  expect(upload.status).toBe(201);
  return c.api('POST', `/releases/${release.id}/publish`, extra.publishedAt ? { publishedAt: extra.publishedAt } : {});
}

beforeAll(async () => {
  c = await startConsole();
  product = await c.api('POST', '/products', {
    productKey: 'studio',
    name: 'Studio',
    licenceType: 'OFFLINE',
    params: [{ key: 'edition', label: 'Edition', type: 'ENUM', options: ['std', 'pro'], required: false }],
  });
  bearer = (await c.api('POST', '/tokens', { name: 'ci', scopes: ['releases:read', 'releases:write'] })).token;
  // Updates for the licence ended ten days ago (a window of 0 months from its issue date).
  const licence = await c.api('POST', '/licenses', {
    productId: product.id,
    licensee: 'Harbour Design',
    licenseeEmail: 'it@harbour.example',
    issueDate: day(-10),
    updatesMonths: 0,
    params: { edition: 'std' },
  });
  lid = licence.lid;
  await ship('1.0.0', 'Studio-1.0.0.zip', 'the bytes of Studio 1.0.0', { publishedAt: `${day(-20)}T09:00:00Z` });
  await ship('2.0.0', 'Studio-2.0.0.zip', 'pro only', { requires: { edition: 'pro' } });
  await c.api('POST', '/users', { username: 'vera', role: 'VIEWER', password: 'vera password 0001' });
  page = await c.page();
  await signIn(page);
});
afterAll(() => c?.close());

async function choose(scope: ReturnType<Page['getByRole']>, label: string, option: string) {
  await scope.getByRole('combobox', { name: label, exact: true }).click();
  await page.getByRole('option', { name: option, exact: true }).click();
}
const progress = (scope: ReturnType<Page['getByRole']>) =>
  scope.getByRole('progressbar', { name: 'Upload progress' }).evaluate((el) => [el.getAttribute('aria-valuenow'), el.getAttribute('aria-valuetext')]);

describe('a product’s releases', () => {
  it('creates a release, the refusal beside Version, uploads a file with its progress, publishes it backdated, yanks and unyanks it', async () => {
    await page.goto(`/o/default/products/${product.id}`);
    await page.getByRole('link', { name: 'Releases', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Releases' }).waitFor();
    const list = page.getByRole('table', { name: 'Releases' });
    // Highest version first, the state in words.
    await list.getByRole('row', { name: /2\.0\.0 Stable Published/ }).waitFor();
    await list.getByRole('row', { name: /1\.0\.0 Stable Published/ }).waitFor();

    await page.getByRole('button', { name: 'New release' }).click();
    const form = page.getByRole('dialog', { name: 'New release' });
    await form.getByRole('textbox', { name: 'Version', exact: true }).fill('v1.1.0');
    await form
      .getByLabel('Notes')
      .fill('## What is new\n\n- **Faster** exports\n- <b>tags</b> stay plain <img src=x onerror=alert(1)>\n\n[Read more](javascript:alert(1))');
    await choose(form, 'Edition', 'std');
    await form.getByLabel('Bundle version').fill('110');
    await form.getByRole('button', { name: 'Create release' }).click();
    // The service's refusal, in words, beside the field it is about.
    await form.getByText('Write it without a "v" prefix (1.2.3)').waitFor();
    await expectAccessible(page, 'New release with a refusal');
    await form.getByRole('textbox', { name: 'Version', exact: true }).fill('1.1.0');
    await form.getByRole('button', { name: 'Create release' }).click();
    await page.getByRole('heading', { level: 1, name: '1.1.0' }).waitFor();
    await page.getByText('Stable channel · a draft').waitFor();
    await page.getByText('Edition: std').waitFor();

    // The notes are markdown; their HTML is never HTML, their javascript: link goes nowhere.
    const notes = page.getByRole('region', { name: 'Notes' });
    await notes.getByRole('heading', { name: 'What is new' }).waitFor();
    expect(await notes.locator('strong').textContent()).toBe('Faster');
    expect(await notes.locator('b, img, script').count()).toBe(0);
    expect(await notes.getByText('Read more').getAttribute('href')).toBeFalsy();

    const upload = page.getByRole('form', { name: 'Upload artifact' });
    await upload.getByRole('button', { name: 'Upload', exact: true }).click();
    await upload.getByText('Choose the file').waitFor();
    const content = Buffer.alloc(3_000_000, 7);
    await upload.locator('input[type="file"]').setInputFiles({ name: 'Studio Setup 1.1.0.exe', mimeType: 'application/octet-stream', buffer: content });
    await choose(upload, 'Platform', 'Windows');
    await choose(upload, 'Arch', 'x86-64');
    await upload.getByRole('button', { name: 'Upload', exact: true }).click();
    await upload.getByText('Studio Setup 1.1.0.exe uploaded').waitFor();
    expect(await progress(upload)).toEqual(['100', 'Studio Setup 1.1.0.exe uploaded']);
    const files = page.getByRole('table', { name: 'Files' });
    const row = files.getByRole('row', { name: /Studio Setup 1\.1\.0\.exe/ });
    await row.getByText('Windows, x86-64').waitFor();
    await row.getByText('3 MB').waitFor();
    const release = (await c.api('GET', `/products/${product.id}/releases`)).find((r: any) => r.version === '1.1.0');
    expect(release.artifacts[0]).toMatchObject({ filename: 'Studio Setup 1.1.0.exe', size: 3_000_000, platform: 'windows', arch: 'x86_64' });
    await row.getByText(`${release.artifacts[0].sha256.slice(0, 12)}…`).waitFor();
    await expectAccessible(page, 'a draft release with a file');
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
    await expectLayout(page, 'releases-draft');

    // Published five days ago, after the licence's updates ended.
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    const publish = page.getByRole('dialog', { name: 'Publish 1.1.0' });
    await publish.getByLabel('Backdate to').fill(`${day(-5)}T09:30`);
    await publish.getByText('Published as of').waitFor();
    await publish.getByRole('button', { name: 'Publish', exact: true }).click();
    await publish.waitFor({ state: 'detached' });
    await page.getByText('Stable channel · offered to the licences it covers').waitFor();
    const expected = await page.evaluate((local) => new Date(local).toISOString(), `${day(-5)}T09:30`);
    expect((await c.api('GET', `/releases/${release.id}`)).publishedAt).toBe(expected);
    // A published release's files stay as they were.
    expect(await row.getByRole('button', { name: 'Delete' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Yank', exact: true }).click();
    const yank = page.getByRole('dialog', { name: 'Yank 1.1.0' });
    await yank.getByLabel('Reason').fill('Crashes on start');
    await yank.getByRole('button', { name: 'Yank', exact: true }).click();
    await yank.waitFor({ state: 'detached' });
    await page.getByText('“Crashes on start”').waitFor();
    await page.getByText('Stable channel · withdrawn').waitFor();
    await page.getByRole('button', { name: 'Unyank', exact: true }).click();
    await page.getByRole('dialog', { name: 'Unyank 1.1.0' }).getByRole('button', { name: 'Unyank', exact: true }).click();
    await page.getByText('Stable channel · offered to the licences it covers').waitFor();
    expect((await c.api('GET', `/releases/${release.id}`)).status).toBe('PUBLISHED');

    await page.getByRole('link', { name: /Releases of Studio/ }).click();
    await list.getByRole('row', { name: /1\.1\.0 Stable Published/ }).waitFor();
    await expectAccessible(page, 'the releases list');
    await expectLayout(page, 'releases-list');
  });

  it('shows a Viewer the releases read-only, saying why', async () => {
    const draft = await c.api('POST', `/products/${product.id}/releases`, { version: '2.1.0-beta.1' });
    const viewer = await c.page();
    await signIn(viewer, 'vera', 'vera password 0001');
    await viewer.goto(`/o/default/products/${product.id}/releases`);
    expect(await viewer.getByRole('button', { name: 'New release' }).isDisabled()).toBe(true);
    await viewer.goto(`/o/default/products/${product.id}/releases/${draft.id}`);
    await viewer.getByRole('heading', { level: 1, name: '2.1.0-beta.1' }).waitFor();
    for (const name of ['Edit release', 'Publish', 'Delete release', 'Upload'])
      expect(await viewer.getByRole('button', { name, exact: true }).isDisabled(), name).toBe(true);
    await viewer.getByLabel('Your role (Viewer) can read but not change licences, products or customers.').first().waitFor();
    await viewer.context().close();
  });
});

describe('the portal’s Downloads', () => {
  it('lists each release covered or why not, downloads a covered file and resets the download links', async () => {
    const licence = await c.api('GET', `/licenses/${lid}`);
    const link = await c.api('POST', `/customers/${licence.customerId}/portal-links`);
    const customer = await c.page();
    await customer.goto(link.url);
    await customer.getByRole('button', { name: 'Open my licences' }).click();
    const downloads = customer.getByRole('region', { name: 'Studio' }).getByRole('region', { name: 'Downloads' });
    const ended = await customer.evaluate((at) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' }).format(new Date(at)), licence.updatesUntil);
    await downloads.getByText(`Your updates ended on ${ended} — renew to get this version`).waitFor();
    await downloads.getByText('Not included in your licence — ask your vendor about upgrading').waitFor();
    await downloads.getByText('Included in your licence', { exact: true }).waitFor();
    // Only the covered release offers its file.
    expect(await downloads.getByRole('button', { name: /^Download / }).evaluateAll((els) => els.map((el) => el.getAttribute('aria-label')))).toEqual([
      'Download Studio-1.0.0.zip',
    ]);
    await expectAccessible(customer, 'portal Downloads');
    await expectLayout(customer, 'releases-portal');
    const [file] = await Promise.all([customer.waitForEvent('download'), downloads.getByRole('button', { name: 'Download Studio-1.0.0.zip' }).click()]);
    expect(file.suggestedFilename()).toBe('Studio-1.0.0.zip');
    const stream = await file.createReadStream();
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('the bytes of Studio 1.0.0');

    await downloads.getByRole('button', { name: 'Reset download links' }).click();
    const confirm = customer.getByRole('dialog', { name: 'Reset the download links of Studio' });
    await confirm.getByText(/Links made before stop working at once/).waitFor();
    await confirm.getByRole('button', { name: 'Reset download links' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect((await c.api('GET', `/licenses/${lid}`)).feedGeneration).toBe(2);
    await customer.context().close();
  });
});

describe('the update window', () => {
  it('sets the product’s window, issues with it, shows until when a licence is covered and resets its download links', async () => {
    await page.goto(`/o/default/products/${product.id}`);
    await page.getByText('every release while valid').waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Studio' });
    expect(await edit.getByLabel('Updates (months)').isDisabled()).toBe(true);
    await edit.getByRole('switch', { name: 'No update window' }).click();
    await edit.getByLabel('Updates (months)').fill('');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText('Enter the months of updates, or switch on No update window').waitFor();
    await edit.getByLabel('Updates (months)').fill('12');
    await expectLayout(page, 'releases-product-window');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    await page.getByText('12 months from issue or renewal').waitFor();
    expect((await c.api('GET', `/products/${product.id}`)).updatesMonths).toBe(12);

    // The issue form starts from the product's window.
    await page.goto('/o/default/licences');
    await page.getByRole('button', { name: 'Issue licence' }).click();
    const issue = page.getByRole('dialog', { name: 'Issue licence' });
    await choose(issue, 'Product', 'Studio (studio)');
    await issue.getByLabel('Customer name').fill('Quay Studios');
    expect(await issue.getByLabel('Updates (months)').inputValue()).toBe('12');
    await issue.getByRole('button', { name: 'Issue', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Quay Studios' }).waitFor();
    const issued = await c.api('GET', `/licenses/${page.url().split('/').pop()}`);
    expect(issued.updatesMonths).toBe(12);

    // A licence of its own window: renewal keeps it, never the product's.
    await page.goto(`/o/default/licences/${lid}`);
    const own = await c.api('GET', `/licenses/${lid}`);
    // The console shows dates in the organisation's zone (UTC here).
    const ownUntil = await page.evaluate(
      (at) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(at)),
      own.updatesUntil,
    );
    await page.getByText(`${ownUntil} (0 months from each term)`).waitFor();
    await page.getByRole('button', { name: 'Renew', exact: true }).click();
    const renew = page.getByRole('dialog', { name: 'Renew licence' });
    expect(await renew.getByLabel('Updates (months)').inputValue()).toBe('0');
    await renew.getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('button', { name: 'Reset download links' }).click();
    const reset = page.getByRole('dialog', { name: 'Reset the download links' });
    await reset.getByText(/feed URLs copied before .* stop working at once/).waitFor();
    await reset.getByRole('button', { name: 'Reset download links' }).click();
    await reset.waitFor({ state: 'detached' });
    expect((await c.api('GET', `/licenses/${lid}`)).feedGeneration).toBe(own.feedGeneration + 1);
  });
});
