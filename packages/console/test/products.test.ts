import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LicenceClient, memoryStore, verifyLicence } from '@licensor/sdk';
import type { Page } from 'playwright-core';
import { expectAccessible, expectLayout, signIn, startConsole, type Console } from './harness.js';
// The service's own test fixtures: keystores made by OpenSSL, and SoftHSM2 tokens.
import { keystores } from '../../server/test/keystore-fixtures.js';
import { softHsm, softHsmMissing, type SoftHsm } from '../../server/test/softhsm.js';

let c: Console;
let page: Page;

const ALGORITHMS = [
  ['ED25519', 'Ed25519'],
  ['RSA_2048', 'RSA 2048-bit'],
  ['RSA_3072', 'RSA 3072-bit'],
  ['RSA_4096', 'RSA 4096-bit'],
  ['EC_P256', 'ECDSA P-256'],
  ['EC_P384', 'ECDSA P-384'],
] as const;

async function choose(scope: Page | ReturnType<Page['getByRole']>, label: string, option: string | RegExp) {
  await scope.getByRole('combobox', { name: label, exact: true }).click();
  await page.getByRole('option', { name: option }).first().click();
}

/** Opens the new-product form and fills what every product needs. */
async function newProduct(name: string, productKey: string, algorithm: string) {
  await page.goto('/o/default/products');
  await page.getByRole('button', { name: 'New product' }).click();
  const form = page.getByRole('dialog', { name: 'New product' });
  await form.getByRole('textbox', { name: 'Name', exact: true }).fill(name);
  await form.getByLabel('Product key').fill(productKey);
  await choose(form, 'Algorithm', new RegExp(`^${algorithm}`));
  return form;
}

/** Issues a licence through the console's form; answers the new licence's lid. */
async function issue(productLabel: string, licensee: string, fill?: (form: ReturnType<Page['getByRole']>) => Promise<void>) {
  await page.goto('/o/default/licences');
  await page.getByRole('button', { name: 'Issue licence' }).click();
  const dialog = page.getByRole('dialog', { name: 'Issue licence' });
  await choose(dialog, 'Product', productLabel);
  await dialog.getByLabel('Customer name').fill(licensee);
  await dialog.getByLabel('Validity (months)').waitFor();
  await fill?.(dialog);
  await dialog.getByRole('button', { name: 'Issue', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: licensee }).waitFor();
  return page.url().split('/').pop()!;
}

const TOKEN_PIN = 'console-pin-31';
let hsm: SoftHsm | undefined;
let stores: ReturnType<typeof keystores>;

beforeAll(async () => {
  stores = keystores();
  if (!softHsmMissing) {
    hsm = softHsm();
    hsm.initToken('vendor-hsm', TOKEN_PIN);
    hsm.generate('vendor-hsm', TOKEN_PIN, 'EC_P256', 'signing-2026');
  }
  c = await startConsole(
    hsm ? { LICENSOR_PKCS11_MODULE: hsm.module, LICENSOR_PKCS11_TOKENS: 'default=vendor-hsm', SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! } : {},
  );
  page = await c.page();
  await signIn(page);
});
afterAll(async () => {
  await c?.close();
  hsm?.dispose();
  stores?.dispose();
});

describe('products in the console', () => {
  it('creates a product with parameters of every type, refusing what the API would before sending', async () => {
    const form = await newProduct('Orbit Suite', 'orbit', 'Ed25519');
    await form.getByRole('checkbox', { name: 'ONLINE' }).check();
    await choose(form, 'Default licence type', 'ONLINE');
    await form.getByLabel('Max machines').fill('2');
    await form.getByLabel('Applications may fetch renewed terms').check();
    const types: Array<[string, string, string, (p: ReturnType<Page['getByRole']>) => Promise<void>]> = [
      ['edition', 'Edition', 'Text', async (p) => p.getByLabel('Required at issue').check()],
      ['seats', 'Seats', 'Whole number', async (p) => p.getByLabel('Default').fill('5')],
      ['beta', 'Beta', 'Yes / no', async (p) => choose(p, 'Default', 'No')],
      ['support', 'Support until', 'Date', async (p) => p.getByLabel('Default').fill('2030-01-31')],
      [
        'modules',
        'Modules',
        'List of texts',
        async (p) => {
          await p.getByLabel('Default').fill('sync');
          await p.getByLabel('Default').press('Enter');
        },
      ],
      [
        'tier',
        'Tier',
        'One of a list',
        async (p) => {
          await p.getByLabel('Options').fill('basic');
          await p.getByLabel('Options').press('Enter');
          await p.getByLabel('Options').fill('pro');
          await p.getByLabel('Options').press('Enter');
          await choose(p, 'Default', 'pro');
        },
      ],
    ];
    for (const [i, [key, label, type, fill]] of types.entries()) {
      await form.getByRole('button', { name: 'Add parameter' }).click();
      const param = form.getByRole('group', { name: `Parameter ${i + 1}` });
      await param.getByLabel('Key').fill(key);
      await param.getByLabel('Label').fill(label);
      await choose(param, 'Type', type);
      await fill(param);
    }
    // A reserved key and a default that does not parse are refused in the form, before sending.
    const seats = form.getByRole('group', { name: 'Parameter 2' });
    await seats.getByLabel('Key').fill('exp');
    await form.getByText('“exp” is an issuer claim; choose another key').waitFor();
    expect(await form.getByRole('button', { name: 'Create product' }).isDisabled()).toBe(true);
    await seats.getByLabel('Key').fill('seats');
    await seats.getByLabel('Default').fill('five');
    await form.getByText('Not a whole number').waitFor();
    expect(await form.getByRole('button', { name: 'Create product' }).isDisabled()).toBe(true);
    await seats.getByLabel('Default').fill('5');
    await expectAccessible(page, 'product form');
    await expectLayout(page, 'product-form');
    await form.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { level: 1, name: 'Orbit Suite' }).waitFor();

    const [product] = await c.api('GET', '/products');
    expect(product).toMatchObject({
      productKey: 'orbit',
      algorithm: 'ED25519',
      licenceType: 'ONLINE',
      allowedLicenceTypes: ['OFFLINE', 'ONLINE'],
      maxMachines: 2,
      licenceFetchEnabled: true,
    });
    expect(product.params).toEqual([
      { key: 'edition', label: 'Edition', type: 'STRING', required: true, defaultValue: null, options: [], help: null },
      { key: 'seats', label: 'Seats', type: 'INTEGER', required: false, defaultValue: '5', options: [], help: null },
      { key: 'beta', label: 'Beta', type: 'BOOLEAN', required: false, defaultValue: 'false', options: [], help: null },
      { key: 'support', label: 'Support until', type: 'DATE', required: false, defaultValue: '2030-01-31', options: [], help: null },
      { key: 'modules', label: 'Modules', type: 'STRING_LIST', required: false, defaultValue: '["sync"]', options: [], help: null },
      { key: 'tier', label: 'Tier', type: 'ENUM', required: false, defaultValue: 'pro', options: ['basic', 'pro'], help: null },
    ]);

    const lid = await issue('Orbit Suite (orbit)', 'Nebula Labs', (dialog) => dialog.getByLabel('Edition').fill('Studio'));
    const licence = await c.api('GET', `/licenses/${lid}`);
    expect(licence.claims).toMatchObject({
      prd: 'orbit',
      typ: 'ONLINE',
      edition: 'Studio',
      seats: 5,
      beta: false,
      support: '2030-01-31',
      modules: ['sync'],
      tier: 'pro',
    });
  });

  it('creates a product of each other algorithm and issues a licence that verifies with its key', async () => {
    for (const [algorithm, label] of ALGORITHMS.slice(1)) {
      const key = algorithm.toLowerCase().replace('_', '-');
      const form = await newProduct(`Product ${label}`, key, label);
      await form.getByRole('button', { name: 'Create product' }).click();
      await page.getByRole('heading', { level: 1, name: `Product ${label}` }).waitFor();
      const lid = await issue(`Product ${label} (${key})`, `Customer of ${label}`);
      const licence = await c.api('GET', `/licenses/${lid}`);
      const product = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === key);
      expect(product.algorithm).toBe(algorithm);
      expect(verifyLicence(licence.licenseString, product.publicKeyPem, { productKey: key, organisation: 'default' }).valid).toBe(true);
    }
    await page.goto('/o/default/products');
    await page.getByRole('link', { name: 'Product ECDSA P-384' }).waitFor();
    await expectAccessible(page, 'products list');
    await expectLayout(page, 'products');
  });

  it('regenerates the key: the history shows both, and the older licence still verifies', async () => {
    const before = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === 'orbit');
    await page.goto(`/o/default/products/${before.id}`);
    await page.getByRole('button', { name: 'Regenerate key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Regenerate the signing key' });
    await dialog.getByText(/old licences|keep verifying/).waitFor();
    await dialog.getByRole('button', { name: 'Regenerate key' }).click();
    const history = page.getByRole('table', { name: 'Key history' });
    await expect.poll(() => history.getByRole('row').count()).toBe(3);
    const keys = await c.api('GET', `/products/${before.id}/keys`);
    expect(keys.map((k: { current: boolean }) => k.current)).toEqual([true, false]);
    expect(keys[1].keyFingerprint).toBe(before.keyFingerprint);
    await history.getByText(`${keys[0].keyFingerprint.slice(0, 16)}…`).waitFor();
    const old = (await c.api('GET', '/licenses/page?q=nebula')).items[0];
    const full = await c.api('GET', `/licenses/${old.lid}`);
    expect(
      verifyLicence(
        full.licenseString,
        keys.map((k: { publicKeyPem: string }) => k.publicKeyPem),
      ).valid,
    ).toBe(true);
  });

  it('rotates the check token, shows it once with the check URL, and the SDK checks in with it', async () => {
    const product = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === 'orbit');
    await page.goto(`/o/default/products/${product.id}`);
    await page.getByRole('button', { name: 'Create check token' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create the check token' });
    await dialog.getByRole('button', { name: 'Create check token' }).click();
    const token = (await page.getByLabel('check token', { exact: true }).textContent())!;
    expect(token).toMatch(new RegExp(`^svcc_${product.checkId}_`));
    await page.getByText('It will not be shown again').waitFor();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.url });
    await page.getByRole('button', { name: 'Copy check token' }).click();
    await page.getByRole('button', { name: 'Copied check token' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(token);
    expect(await page.getByLabel('check URL', { exact: true }).textContent()).toBe(`${c.url}/o/default/api/public/license/${product.checkId}/check`);
    const snippet = (await page.getByLabel('SDK configuration', { exact: true }).textContent())!;
    expect(snippet).toContain(`checkId: '${product.checkId}'`);
    expect(snippet).toContain(token);
    // The snippet runs as written, beside the licence it reads (the SDK resolved as an application installs it).
    const nebula = (await c.api('GET', '/licenses/page?q=nebula')).items[0].lid;
    const app = fs.mkdtempSync(path.join(import.meta.dirname, '.snippet-'));
    try {
      fs.writeFileSync(path.join(app, 'licence.lic'), `${(await c.api('GET', `/licenses/${nebula}`)).licenseString}\n`);
      fs.writeFileSync(path.join(app, 'check.mjs'), snippet);
      const ran = spawnSync(process.execPath, ['check.mjs'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
      expect([ran.status, ran.stdout.trim()], ran.stderr).toEqual([0, 'Licensed on this machine']);
    } finally {
      fs.rmSync(app, { recursive: true, force: true });
    }
    await expectAccessible(page, 'product page');
    await expectLayout(page, 'product');

    // Rotating again warns that installed applications stop checking in.
    await page.reload();
    await page.getByRole('button', { name: 'Rotate check token' }).click();
    await page
      .getByRole('dialog', { name: 'Rotate the check token' })
      .getByText(/stops checking in/)
      .waitFor();
    await page.getByRole('dialog', { name: 'Rotate the check token' }).getByRole('button', { name: 'Rotate check token' }).click();
    const rotated = (await page.getByLabel('check token', { exact: true }).textContent())!;
    expect(rotated).not.toBe(token);

    const lid = (await c.api('GET', '/licenses/page?q=nebula')).items[0].lid;
    const licence = await c.api('GET', `/licenses/${lid}`);
    const keys = await c.api('GET', `/products/${product.id}/keys`);
    const client = (checkToken: string) =>
      new LicenceClient({
        baseUrl: c.url,
        slug: 'default',
        checkId: product.checkId,
        checkToken,
        publicKeyPem: keys.map((k: { publicKeyPem: string }) => k.publicKeyPem),
        licence: licence.licenseString,
        store: memoryStore(),
        stableId: 'products-test',
      });
    expect((await client(rotated).check()).state).toBe('VALID');
    expect((await client(token).check()).state).toBe('STALE');
  });

  it('imports a PEM key with its passphrase', async () => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'correct horse' }) as string;
    const form = await newProduct('Imported Key Co', 'imported', 'ECDSA P-256');
    await form.getByLabel('Import a PEM private key').check();
    await form.getByLabel('Private key (PEM)').fill(pem);
    await form.getByLabel('Passphrase').fill('wrong horse');
    await form.getByRole('button', { name: 'Create product' }).click();
    await form.getByRole('alert').waitFor();
    expect(await form.getByRole('alert').textContent()).toMatch(/passphrase/i);
    await form.getByLabel('Passphrase').fill('correct horse');
    await form.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { level: 1, name: 'Imported Key Co' }).waitFor();
    const product = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === 'imported');
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    expect(product).toMatchObject({ keyOrigin: 'imported', algorithm: 'EC_P256', keyFingerprint: crypto.createHash('sha256').update(spki).digest('hex') });
  });

  it('imports a PKCS#12 keystore with its password, its certificate becoming the product’s', async () => {
    const store = stores.make('openssl', 'EC_P384', 'keystore words');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-console-p12-')), 'vendor.p12');
    fs.writeFileSync(file, Buffer.from(store.base64, 'base64'));
    const form = await newProduct('Keystore Co', 'keystore', 'Ed25519');
    await form.getByLabel('Import a PKCS#12 keystore').check();
    await form.locator('input[type="file"]').setInputFiles(file);
    await form.getByLabel('Keystore password').fill('not the words');
    await expectLayout(page, 'product-form-pkcs12');
    await form.getByRole('button', { name: 'Create product' }).click();
    await form.getByRole('alert').waitFor();
    expect(await form.getByRole('alert').textContent()).toMatch(/Keystore password: does not open the keystore/);
    await form.getByLabel('Keystore password').fill('keystore words');
    await form.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { level: 1, name: 'Keystore Co' }).waitFor();
    await page.getByText('Imported, sealed here').waitFor();
    const product = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === 'keystore');
    expect(product).toMatchObject({ keyOrigin: 'imported', algorithm: 'EC_P384', certificateType: 'IMPORTED' });
    expect(new crypto.X509Certificate(product.certificatePem).publicKey.export({ type: 'spki', format: 'der' })).toEqual(
      store.publicKey.export({ type: 'spki', format: 'der' }),
    );
  });

  it.skipIf(softHsmMissing)('creates a product whose key stays on a PKCS#11 token, refusing a wrong PIN with the API’s message', async () => {
    const form = await newProduct('Token Co', 'token', 'Ed25519');
    await form.getByLabel('Keep the key on a hardware security module (PKCS#11)').check();
    expect(await form.getByRole('combobox', { name: 'Token' }).inputValue()).toBe('vendor-hsm');
    await form.getByLabel('Key label').fill('signing-2026');
    await form.getByLabel(/^PIN/).fill('wrong-pin-9');
    await form.getByRole('button', { name: 'Create product' }).click();
    await form.getByRole('alert').waitFor();
    expect(await form.getByRole('alert').textContent()).toMatch(/PKCS#11 PIN: the PIN does not log in/);
    await form.getByLabel(/^PIN/).fill(TOKEN_PIN);
    await form.getByLabel('Import a PEM private key').scrollIntoViewIfNeeded();
    await expectLayout(page, 'product-form-pkcs11');
    await form.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('heading', { level: 1, name: 'Token Co' }).waitFor();
    await page.getByText('signing-2026').waitFor();
    await expectAccessible(page, 'product on a token');
    await expectLayout(page, 'product-pkcs11');
    const product = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === 'token');
    expect(product).toMatchObject({
      keyOrigin: 'pkcs11',
      algorithm: 'EC_P256',
      keyState: 'OK',
      pkcs11: { tokenLabel: 'vendor-hsm', keyLabel: 'signing-2026' },
    });
    const licence = await c.api('POST', '/licenses', { productId: product.id, licensee: 'Token Buyer' });
    expect(verifyLicence(licence.licenseString, [product.publicKeyPem])).toMatchObject({ valid: true });
  });

  it('edits a product and refuses to delete it while licences exist, with the API’s message', async () => {
    const product = (await c.api('GET', '/products')).find((p: { productKey: string }) => p.productKey === 'orbit');
    await page.goto(`/o/default/products/${product.id}`);
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const form = page.getByRole('dialog', { name: 'Edit Orbit Suite' });
    await form.getByLabel('Default grace days').fill('14');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('14 days').waitFor();
    expect((await c.api('GET', `/products/${product.id}`)).defaultGraceDays).toBe(14);

    await page.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete Orbit Suite' });
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('alert').waitFor();
    expect(await dialog.getByRole('alert').textContent()).toMatch(/licen[cs]es/);
    expect((await c.api('GET', `/products/${product.id}`)).name).toBe('Orbit Suite');
  });
});
