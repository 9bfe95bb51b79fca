// DESIGN.md 14 in the browser: an operator and a customer paste a request, copy the response, and deactivate.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFingerprint, devicePublicKeyText, parseActivationResponse, signActivationRequest, signDeactivation } from '@licensor/protocol';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';

let c: Console;
let product: any;

beforeAll(async () => {
  c = await startConsole();
  product = await c.api('POST', '/products', {
    productKey: 'lab',
    name: 'Lab Suite',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['ONLINE'],
    airGapActivation: true,
    selfReleaseLimit: 3,
  });
});
afterAll(() => c?.close());

/** What the application on an air-gapped computer shows: a request in groups of five, and later a code. */
function computer(lid: string, name: string) {
  const key = generateKeyPairSync('ed25519').privateKey;
  const fp = buildFingerprint({ machine: name, host: `${name}-host`, mac: `${name}-mac`, cpu: 'cpu', disk: 'disk' });
  const request = signActivationRequest(
    { lid, fp, dpk: devicePublicKeyText(key), nonce: randomBytes(18).toString('base64url'), iat: Math.floor(Date.now() / 1000) },
    key,
  );
  return {
    request,
    groups: request.match(/.{1,5}/g)!.join(' '),
    code: (aid: string) => signDeactivation({ lid, aid, iat: Math.floor(Date.now() / 1000) }, key),
  };
}

describe('air-gapped activation in the console and the portal', () => {
  it('on the licence page: paste a request, copy the response, see the machine, deactivate it', async () => {
    const licence = await c.api('POST', '/licenses', { productId: product.id, licensee: 'Research Vessel', maxMachines: 1 });
    const ship = computer(licence.lid, 'vessel');
    const page = await c.page();
    await signIn(page);
    await page.goto(`/o/default/licences/${licence.lid}`);
    await page.getByRole('button', { name: 'Activate an air-gapped computer', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Activate an air-gapped computer', exact: true });
    await dialog.getByLabel('Activation request').fill('SVCA1.garbage');
    await dialog.getByRole('button', { name: 'Activate', exact: true }).click();
    await dialog.getByText('This is not an activation request').waitFor();
    await dialog.getByLabel('Activation request').fill(ship.groups);
    await expectAccessible(page, 'activation dialog');
    await dialog.getByRole('button', { name: 'Activate', exact: true }).click();
    const response = (await dialog.getByLabel('Activation response', { exact: true }).textContent())!;
    expect(parseActivationResponse(response).fields).toMatchObject({ lid: licence.lid });
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.url });
    await dialog.getByRole('button', { name: 'Copy Activation response' }).click();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(response);
    await expectAccessible(page, 'activation response');
    await expectLayout(page, 'air-gap-response');
    await dialog.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('table', { name: 'Machines' }).getByText('air-gapped until').waitFor();

    // The only seat is taken: another computer is told so in plain words.
    await page.getByRole('button', { name: 'Activate an air-gapped computer', exact: true }).click();
    await dialog.getByLabel('Activation request').fill(computer(licence.lid, 'second').request);
    await dialog.getByRole('button', { name: 'Activate', exact: true }).click();
    await dialog.getByText('Every machine this licence allows is already activated').waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('button', { name: 'Deactivate an air-gapped computer' }).click();
    const deactivate = page.getByRole('dialog', { name: 'Deactivate an air-gapped computer' });
    await deactivate.getByLabel('Deactivation code').fill(ship.code(parseActivationResponse(response).fields.aid));
    await deactivate.getByRole('button', { name: 'Deactivate', exact: true }).click();
    await deactivate.getByText('its seat is free').waitFor();
    await expectLayout(page, 'air-gap-deactivated');
    await deactivate.getByRole('button', { name: 'Done' }).click();
    await page.getByText('0 of 1 used').waitFor();

    // Offered only where it can work: the product page says whether it is on, and a product without it offers nothing.
    await page.goto(`/o/default/products/${product.id}`);
    expect(await page.getByText('Air-gapped activation', { exact: true }).locator('xpath=following-sibling::div[1]').textContent()).toBe(
      'on: 90 days an activation',
    );
    const plain = await c.api('POST', '/products', { productKey: 'plain', name: 'Plain Suite', licenceType: 'ONLINE', allowedLicenceTypes: ['ONLINE'] });
    await c.api('POST', '/licenses', { productId: plain.id, licensee: 'Dry Land Co' });
    await page.goto(`/o/default/products/${plain.id}`);
    expect(await page.getByText('Air-gapped activation', { exact: true }).locator('xpath=following-sibling::div[1]').textContent()).toBe('off');
    // Through the console's own links, so the licence page already knows its product.
    await page.getByRole('link', { name: '1 licence' }).click();
    await page.getByRole('link', { name: 'Dry Land Co' }).click();
    await page.getByRole('heading', { name: 'Machines' }).waitFor();
    expect(await page.getByRole('button', { name: 'Activate an air-gapped computer' }).count()).toBe(0);
    await page.context().close();
  });

  it('in the portal: the customer activates and deactivates their own computer', async () => {
    const licence = await c.api('POST', '/licenses', { productId: product.id, licensee: 'Deep Mine Ltd', licenseeEmail: 'it@mine.example', maxMachines: 2 });
    const link = await c.api('POST', `/customers/${licence.customerId}/portal-links`);
    const customer = await c.page(390);
    await customer.goto(link.url);
    await customer.getByRole('button', { name: 'Open my licences' }).click();
    const card = customer.getByRole('region', { name: 'Lab Suite' });
    const rig = computer(licence.lid, 'rig');
    await card.getByRole('button', { name: 'Activate an air-gapped computer', exact: true }).click();
    const dialog = customer.getByRole('dialog', { name: 'Activate an air-gapped computer', exact: true });
    await dialog.getByLabel('Activation request').fill(rig.request);
    await dialog.getByRole('button', { name: 'Activate', exact: true }).click();
    const response = (await dialog.getByLabel('Activation response', { exact: true }).textContent())!;
    await customer.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(link.url).origin });
    await dialog.getByRole('button', { name: 'Copy Activation response' }).click();
    expect(await customer.evaluate('navigator.clipboard.readText()')).toBe(response);
    await expectAccessible(customer, 'portal activation response');
    await expectLayout(customer, 'portal-air-gap-response');
    await dialog.getByRole('button', { name: 'Done' }).click();
    await card.getByText('without internet, until').waitFor();
    await card.getByText('1 of 2').waitFor();

    // The same request again answers the same; a code another computer signed is refused in words.
    await card.getByRole('button', { name: 'Deactivate an air-gapped computer' }).click();
    const deactivate = customer.getByRole('dialog', { name: 'Deactivate an air-gapped computer' });
    const aid = parseActivationResponse(response).fields.aid;
    await deactivate.getByLabel('Deactivation code').fill(computer(licence.lid, 'other').code(aid));
    await deactivate.getByRole('button', { name: 'Deactivate', exact: true }).click();
    await deactivate.getByText('comes from another machine').waitFor();
    await deactivate.getByLabel('Deactivation code').fill(rig.code(aid));
    await deactivate.getByRole('button', { name: 'Deactivate', exact: true }).click();
    await deactivate.getByText('its seat is free').waitFor();
    await deactivate.getByRole('button', { name: 'Done' }).click();
    await card.getByText('0 of 2').waitFor();
    await card.getByText('2 in the last 30 days').waitFor();
    await customer.context().close();
  });
});
