import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let page: Page;
let receiver: http.Server;
let url: string;
const received: string[] = [];

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(String(req.headers['webhook-id']));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  c = await startConsole({ LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' });
  page = await c.page();
  await signIn(page);
});
afterAll(async () => {
  await c?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('Webhooks', () => {
  it('adds an endpoint, shows its secret once, sends a test event, lists it and redelivers it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL(/\/o\/default\/webhooks$/);
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const form = page.getByRole('dialog', { name: 'Add endpoint' });
    await form.getByLabel('URL').fill(url);
    await form.getByLabel('Description').fill('Billing');
    await form.getByLabel('All events, including those added later').uncheck();
    await form.getByLabel('licence.revoked').check();
    await form.getByLabel('customer.created').check();
    await form.getByRole('button', { name: 'Add' }).click();
    const secret = (await form.getByLabel('signing secret', { exact: true }).textContent()) ?? '';
    expect(secret).toMatch(/^whsec_/);
    await form.getByRole('button', { name: 'Done' }).click();
    const row = page.getByRole('table', { name: 'Webhook endpoints' }).getByRole('row', { name: /Billing/ });
    await row.getByText('licence.revoked').waitFor();
    // Shown once: neither the page nor the API has it any more.
    expect(await page.content()).not.toContain(secret);
    expect(JSON.stringify(await c.api('GET', '/webhooks'))).not.toContain(secret);

    await row.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('status').getByText('Test event delivered (HTTP 204).').waitFor();
    expect(received).toHaveLength(1);
    await row.getByRole('button', { name: 'Deliveries' }).click();
    const log = page.getByRole('table', { name: 'Deliveries' });
    await log.getByText('webhook.test').waitFor();
    await log.getByText(received[0]!).waitFor();
    await row.getByText('healthy').waitFor();

    await log.getByRole('button', { name: 'Redeliver' }).click();
    await page.getByRole('dialog', { name: 'Redeliver webhook.test' }).getByRole('button', { name: 'Redeliver' }).click();
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(2);
    expect(received[1]).toBe(received[0]);
    // The log follows the loop: the redelivery shows delivered with its second attempt.
    await log.getByText('2, last HTTP 204', { exact: false }).waitFor({ timeout: 10_000 });
    await expectAccessible(page, 'webhooks page');
    await expectLayout(page, 'webhooks');
  });

  it('rotates the secret, showing the new one once, and disables and enables the endpoint', async () => {
    const row = page.getByRole('table', { name: 'Webhook endpoints' }).getByRole('row', { name: /Billing/ });
    await row.getByRole('button', { name: 'Rotate secret' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate secret' });
    await dialog.getByLabel('Overlap (hours)').fill('1');
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    await dialog
      .getByText(/^whsec_/)
      .first()
      .waitFor();
    await dialog.getByRole('button', { name: 'Done' }).click();
    await row.getByRole('button', { name: 'Disable' }).click();
    await page
      .getByRole('dialog', { name: /^Disable / })
      .getByRole('button', { name: 'Disable' })
      .click();
    await row.getByText('disabled by admin').waitFor();
    await row.getByRole('button', { name: 'Enable' }).click();
    await row.getByRole('button', { name: 'Disable' }).waitFor();
    const actions = (await c.api('GET', '/dashboard/activity')).items.map((e: { action: string }) => e.action);
    expect(actions.slice(0, 4)).toEqual(['webhook.updated', 'webhook.updated', 'webhook.secret_rotated', 'webhook.created']);
  });
});
