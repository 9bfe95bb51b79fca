/*
 * npm run bench:console: the dashboard's first visit with an empty cache. Prints the gzip size of
 * the JavaScript and CSS the route loads, and the time from navigation start until the dashboard's
 * figures are on screen (median of five fresh browser contexts).
 */
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { CHROMIUM, FLAGS, startService } from '../test/service.js';

const RUNS = 5;
const service = await startService();
try {
  const cookie = (await service.signIn()).split('=');
  const headers = { cookie: cookie.join('='), 'content-type': 'application/json' };
  const api = (path: string, body: unknown) => fetch(`${service.url}/o/default/api${path}`, { method: 'POST', headers, body: JSON.stringify(body) }).then((r) => r.json());
  const product = (await api('/products', { productKey: 'bench', name: 'Bench Product' })) as { id: number };
  for (let i = 0; i < 20; i++) await api('/licenses', { productId: product.id, licensee: `Customer ${i}`, validityMonths: 1 + (i % 12) });

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  const times: number[] = [];
  let bytes = 0;
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext({ baseURL: service.url });
    await context.addCookies([{ name: cookie[0]!, value: cookie[1]!, url: service.url }]);
    const page = await context.newPage();
    const assets = new Map<string, Promise<number>>();
    page.on('response', (response) => {
      if (/\.(js|css)$/.test(new URL(response.url()).pathname)) assets.set(response.url(), response.body().then((body) => gzipSync(body).length));
    });
    await page.goto('/o/default/');
    await page.getByLabel('Licence figures').getByText('Licences').waitFor();
    times.push(await page.evaluate(() => performance.now()));
    bytes = (await Promise.all(assets.values())).reduce((a, b) => a + b, 0);
    await context.close();
  }
  await browser.close();
  times.sort((a, b) => a - b);
  console.log(`dashboard, empty cache: JS+CSS ${(bytes / 1024).toFixed(1)} kB gzip; figures visible ${times[Math.floor(RUNS / 2)]!.toFixed(0)} ms after navigation start (median of ${RUNS}; min ${times[0]!.toFixed(0)}, max ${times.at(-1)!.toFixed(0)})`);
} finally {
  service.stop();
}
