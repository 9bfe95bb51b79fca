/*
 * npm run bench:console: the console in Chromium against a local service.
 * 1. The dashboard's first visit with an empty cache: gzip size of the JavaScript and CSS the
 *    route loads, and the time from navigation start until the figures are on screen.
 * 2. With LICENCES=n (the listing benchmark's seed, e.g. 1000000): on the licence list, how long
 *    the page takes to render after the API has answered, for the next page and for a search.
 * Each figure is the median of five runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { chromium, type Page } from 'playwright-core';
import { seedLicences } from '../../server/bench/seed-licences.js';
import { CHROMIUM, FLAGS, startService } from '../test/service.js';

const RUNS = 5;
const LICENCES = Number(process.env.LICENCES ?? 0);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-bench-console-'));
const env = { LICENSOR_MASTER_KEY: randomBytes(32).toString('base64') };
const password = 'bench admin password';
if (LICENCES > 0) {
  console.log(`seeding ${LICENCES.toLocaleString()} licences…`);
  await seedLicences({ LICENSOR_DATA_DIR: dataDir, LICENSOR_BOOTSTRAP_PASSWORD: password, ...env }, LICENCES);
}
const service = await startService({ dataDir, env, password });
try {
  const cookie = (await service.signIn()).split('=');
  if (LICENCES === 0) {
    const headers = { cookie: cookie.join('='), 'content-type': 'application/json' };
    const api = (apiPath: string, body: unknown) =>
      fetch(`${service.url}/o/default/api${apiPath}`, { method: 'POST', headers, body: JSON.stringify(body) }).then((r) => r.json());
    const product = (await api('/products', { productKey: 'bench', name: 'Bench Product' })) as { id: number };
    for (let i = 0; i < 20; i++) await api('/licenses', { productId: product.id, licensee: `Customer ${i}`, validityMonths: 1 + (i % 12) });
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  const freshPage = async () => {
    const context = await browser.newContext({ baseURL: service.url });
    await context.addCookies([{ name: cookie[0]!, value: cookie[1]!, url: service.url }]);
    return context.newPage();
  };

  const times: number[] = [];
  let bytes = 0;
  for (let run = 0; run < RUNS; run++) {
    const page = await freshPage();
    const assets = new Map<string, Promise<number>>();
    page.on('response', (response) => {
      if (/\.(js|css)$/.test(new URL(response.url()).pathname))
        assets.set(
          response.url(),
          response.body().then((body) => gzipSync(body).length),
        );
    });
    await page.goto('/o/default/');
    await page.getByLabel('Licence figures').getByText('Licences').waitFor({ timeout: 120_000 });
    times.push(await page.evaluate(() => performance.now()));
    bytes = (await Promise.all(assets.values())).reduce((a, b) => a + b, 0);
    await page.context().close();
  }
  console.log(
    `dashboard, empty cache: JS+CSS ${(bytes / 1024).toFixed(1)} kB gzip; figures visible ${median(times).toFixed(0)} ms after navigation start (median of ${RUNS}; min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)})`,
  );

  if (LICENCES > 0) {
    const page = await freshPage();
    await page.goto('/o/default/licences');
    await page.getByRole('table', { name: 'Licences' }).waitFor({ timeout: 120_000 });
    const next: number[] = [];
    const search: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      next.push(await renderAfterAnswer(page, () => page.getByRole('button', { name: 'next page' }).click()));
      search.push(await renderAfterAnswer(page, () => page.getByLabel('Search').fill(`customer ${4200 + run}`)));
      await page.getByLabel('Search').fill('');
      await page.waitForURL((url) => !url.search.includes('q='));
      await page.getByRole('table', { name: 'Licences' }).waitFor();
    }
    console.log(
      `licence list at ${LICENCES.toLocaleString()} licences, render after the API answered: next page ${median(next).toFixed(0)} ms, search ${median(search).toFixed(0)} ms (median of ${RUNS})`,
    );
  }
  await browser.close();
} finally {
  service.stop();
}

/**
 * Runs `act`, then measures in the page's own clock from the end of the /licenses/page answer to
 * the first animation frame in which the table shows other rows (polled every frame).
 */
async function renderAfterAnswer(page: Page, act: () => Promise<unknown>): Promise<number> {
  // Runs in the browser (through the DevTools protocol, which the CSP allows), whose DOM types
  // this Node project does not load.
  // The first row's link names its licence: another lid means other rows are on screen.
  const firstRow = () => (globalThis as any).document.querySelector('table[aria-label="Licences"] tbody tr a')?.getAttribute('href') as string | undefined;
  const before = await page.evaluate(firstRow);
  await page.evaluate(() => performance.clearResourceTimings());
  const answered = page.waitForResponse((r) => r.url().includes('/licenses/page'), { timeout: 120_000 });
  await act();
  await answered;
  const shown = await page.waitForFunction(
    (previous) => (globalThis as any).document.querySelector('table[aria-label="Licences"] tbody tr a')?.getAttribute('href') !== previous && performance.now(),
    before,
    { polling: 'raf', timeout: 120_000 },
  );
  const shownAt = (await shown.jsonValue()) as number;
  return page.evaluate(
    (at) =>
      at -
      (
        performance
          .getEntriesByType('resource')
          .filter((e) => e.name.includes('/licenses/page'))
          .at(-1) as unknown as { responseEnd: number }
      ).responseEnd,
    shownAt,
  );
}
