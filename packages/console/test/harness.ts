import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

import { CHROMIUM, FLAGS, PASSWORD, startService } from './service.js';

export { PASSWORD };
export const SCREENSHOTS = path.resolve(import.meta.dirname, 'screenshots');
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface Console {
  url: string;
  /** The service's data directory (its SQLite database), for a test that must move what time alone would. */
  dataDir: string;
  browser: Browser;
  /** Calls the Management API as the seeded ORG_ADMIN (a cookie of its own). */
  api(method: string, apiPath: string, body?: unknown): Promise<any>;
  /** Runs an operator CLI command against the service's data directory. */
  cli(args: string[]): Promise<unknown>;
  /** A fresh browser context at the given width (its own cookies). */
  page(width?: number): Promise<Page>;
  close(): Promise<void>;
}

/** One real service (SQLite, its own data directory, `env` added to its environment) and one browser per test file. */
export async function startConsole(env: Record<string, string> = {}): Promise<Console> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-console-'));
  const service = await startService({ env, dataDir });
  const { url } = service;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });

  const cookie = await service.signIn();

  return {
    url,
    dataDir,
    browser,
    async api(method, apiPath, body) {
      const response = await fetch(`${url}/o/default/api${apiPath}`, {
        method,
        headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${apiPath}: ${response.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    },
    cli: (args) => service.cli(args),
    async page(width = 1280) {
      const context = await browser.newContext({ baseURL: url, viewport: { width, height: 900 }, acceptDownloads: true });
      return context.newPage();
    },
    async close() {
      await browser.close();
      service.stop();
    },
  };
}

/** Signs in through the page, as a person would. */
export async function signIn(page: Page, username = 'admin', password = PASSWORD) {
  await page.goto('/o/default/sign-in');
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

/** axe-core in light and dark: no violation of serious or critical impact. */
export async function expectAccessible(page: Page, what: string) {
  // Judged at rest: no row under the pointer.
  await page.mouse.move(0, 0);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.waitForTimeout(100);
    // Colours are judged once they have finished changing: a slow machine can still be mid-transition.
    await page.evaluate(() => {
      const { document } = globalThis as any;
      const finite = document.getAnimations().filter((a: any) => a.effect?.getComputedTiming().endTime !== Infinity);
      return Promise.all(finite.map((a: any) => a.finished.catch(() => undefined)));
    });
    // Evaluated through the DevTools protocol, which the page's CSP does not govern.
    await page.evaluate(AXE);
    const violations = await page.evaluate(async () => {
      const result = await (
        globalThis as unknown as {
          axe: { run: (o: object) => Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }> }> };
        }
      ).axe.run({
        runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
      });
      return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map(
          (v) =>
            `${v.id} (${v.impact}): ${v.help} at ${v.nodes
              .slice(0, 3)
              .map((n) => n.target.join(' '))
              .join(', ')}`,
        );
    });
    expect(violations, `${what} in ${scheme}`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * What a person at 1,280 and at 390 pixels wide would find wrong in the layout: the page or a box
 * in it scrolling sideways (a table kept at desktop width on a phone), a badge cut short ("A…").
 */
async function misfits(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    // Runs in the page; the tests are typed without the DOM's types.
    const { document, getComputedStyle } = globalThis as any;
    const found: string[] = [];
    const name = (el: any) =>
      `${el.tagName.toLowerCase()}${el.getAttribute('aria-label') ? `[${el.getAttribute('aria-label')}]` : ''}.${[...el.classList].slice(0, 2).join('.')}`;
    const root = document.scrollingElement;
    if (root.scrollWidth > root.clientWidth) found.push(`the page scrolls sideways (${root.scrollWidth} > ${root.clientWidth})`);
    for (const el of document.querySelectorAll('body *')) {
      const { overflowX } = getComputedStyle(el);
      if ((overflowX === 'auto' || overflowX === 'scroll') && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0)
        found.push(`${name(el)} scrolls sideways (${el.scrollWidth} > ${el.clientWidth})`);
    }
    // A card clips what does not fit it (a date too wide for its column).
    for (const card of document.querySelectorAll('.mantine-Card-root')) {
      if (card.scrollWidth > card.clientWidth) found.push(`${name(card)} cuts its content (${card.scrollWidth} > ${card.clientWidth})`);
    }
    for (const badge of document.querySelectorAll('.mantine-Badge-root, .mantine-Badge-label')) {
      if (badge.scrollWidth > badge.clientWidth) found.push(`badge “${badge.textContent}” is cut (${badge.scrollWidth} > ${badge.clientWidth})`);
    }
    return found;
  });
}

/**
 * Looks at the page at 1,280, 820 (a tablet, the navigation beside the page) and 390 pixels
 * wide: nothing scrolls sideways and every badge shows its whole word. Screenshots at each width,
 * light and dark, go into a git-ignored folder for a person to look at; CI, where nobody looks,
 * turns them off (LICENSOR_SCREENSHOTS=off).
 */
export async function expectLayout(page: Page, name: string) {
  const shots = process.env.LICENSOR_SCREENSHOTS !== 'off';
  if (shots) fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const original = page.viewportSize()!;
  // No hover state (a tooltip) in the picture.
  await page.mouse.move(0, 0);
  const problems: string[] = [];
  for (const width of [1280, 820, 390]) {
    await page.setViewportSize({ width, height: 900 });
    // The navigation slides away below 768 px (a 200 ms transition).
    await page.waitForTimeout(300);
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.waitForTimeout(150);
      if (shots) await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${width}-${scheme}.png`), fullPage: true });
    }
    problems.push(...(await misfits(page)).map((problem) => `${width} px: ${problem}`));
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(original);
  expect(problems, name).toEqual([]);
}
