// DESIGN.md 14 end to end: the SDK's request, the Management API, the SDK's activation with the
// network cut, its deactivation code, the seat released; on each backend.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { b64uEncode } from '@licensor/protocol';
import { fileStore, LicenceClient, LicensorError, memoryStore, type LicenceClientOptions } from '@licensor/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { fingerprint } from '../licence-helpers.js';

let h: Harness;
let baseUrl: string;
beforeAll(async () => {
  h = await startHarness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(() => h?.close());

const cut: typeof fetch = async () => {
  throw new TypeError('fetch failed: the network is cut');
};
const stateDir = () => mkdtempSync(path.join(os.tmpdir(), 'licensor-airgap-'));

/** A product of this algorithm with air-gapped activation, its check credential and a licence. */
async function setUp(algorithm = 'ED25519') {
  const product = (
    await h.admin('POST', '/products', {
      productKey: `air-${Math.random().toString(36).slice(2, 10)}`,
      name: 'Air',
      algorithm,
      licenceType: 'ONLINE',
      allowedLicenceTypes: ['ONLINE'],
      airGapActivation: true,
    })
  ).data;
  const credential = (await h.admin('POST', `/products/${product.id}/check-token`)).data;
  const licence = (await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Ship Ltd', validityMonths: 12, maxMachines: 2 })).data;
  const dir = stateDir();
  /** The installation on the ship (its state in `dir`) unless the options say otherwise; no network. */
  const client = (options: Partial<LicenceClientOptions> = {}) =>
    new LicenceClient({
      baseUrl,
      slug: h.slug,
      checkId: credential.checkId,
      checkToken: credential.checkToken,
      publicKeyPem: product.publicKeyPem,
      licence: licence.licenseString,
      fingerprint: fingerprint('ship'),
      store: fileStore(dir),
      fetchImpl: cut,
      ...options,
    });
  const activate = async (request: string) => {
    const answer = await h.admin('POST', `/licenses/${licence.lid}/air-gap-activations`, { request });
    expect(answer.statusCode, answer.body).toBe(201);
    return answer.data;
  };
  return { product, credential, licence, client, activate, directory: path.join(dir, h.slug, product.productKey) };
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error) => (error instanceof LicensorError ? error.code : String(error)),
  );

describe('air-gapped activation through the SDK (DESIGN 14)', () => {
  it.each(['ED25519', 'EC_P256', 'RSA_2048'])('%s: request, activation with no network, VALID until deactivated, the seat released', async (algorithm) => {
    const { licence, client, activate } = await setUp(algorithm);
    const ship = client();
    const { request, groups } = await ship.createAirGapRequest();
    expect(request).toMatch(/^SVCA1\./);
    expect(groups.replace(/ /g, '')).toBe(request);
    expect(
      groups
        .split(' ')
        .slice(0, -1)
        .every((g) => g.length === 5),
    ).toBe(true);

    const activated = await activate(groups);
    expect(await ship.activateAirGapped(activated.response)).toEqual({ until: activated.until, activationId: activated.activationId });
    expect(await ship.check()).toMatchObject({ state: 'VALID', airGapped: true, reasons: [], noAnswer: { code: 'NETWORK' } });
    // After a restart (a new client on the same state) too.
    expect(await client().check()).toMatchObject({ state: 'VALID', airGapped: true });

    const { code: deactivation } = await ship.deactivateAirGapped();
    expect(await ship.check()).toMatchObject({ state: 'STALE', airGapped: false });
    const released = await h.admin('POST', `/licenses/${licence.lid}/air-gap-deactivations`, { code: deactivation });
    expect(released.data).toEqual({ machineId: activated.machineId, releasedAt: expect.any(String), released: true });
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.seatsUsed).toBe(0);
    // The response of an activation deactivated here is never taken again.
    expect(await code(ship.activateAirGapped(activated.response))).toBe('BAD_ACTIVATION');
  });

  it('refuses a response on a second installation of the same machine, and one edited in any field, keeping the pending request', async () => {
    const { client, activate } = await setUp();
    const ship = client();
    const activated = await activate((await ship.createAirGapRequest()).request);
    const reinstalled = client({ store: fileStore(stateDir()) });
    await reinstalled.createAirGapRequest();
    expect(await code(reinstalled.activateAirGapped(activated.response))).toBe('BAD_ACTIVATION');
    expect(await code(client({ fingerprint: fingerprint('other') }).activateAirGapped(activated.response))).toBe('BAD_ACTIVATION');

    const [tag, payload, signature] = activated.response.split('.');
    const fields = JSON.parse(Buffer.from(payload, 'base64url').toString());
    for (const [name, value] of Object.entries(fields)) {
      const edited = { ...fields, [name]: typeof value === 'number' ? value + 1 : `${value}x` };
      expect(await code(ship.activateAirGapped(`${tag}.${b64uEncode(JSON.stringify(edited))}.${signature}`)), name).toBe('BAD_ACTIVATION');
    }
    expect(await code(ship.activateAirGapped('SVCX1.not.this'))).toBe('BAD_ACTIVATION');
    expect((await ship.activateAirGapped(activated.response)).activationId).toBe(activated.activationId);
    // Accepting consumed the pending request.
    expect(await code(ship.activateAirGapped(activated.response))).toBe('BAD_ACTIVATION');
  });

  it('keeps the device key once per installation and product (0600), remade on another fingerprint; a memory-only store cannot ask', async () => {
    const { client, directory } = await setUp();
    const first = await client().createAirGapRequest();
    const again = await client().createAirGapRequest();
    const dpk = (request: string) => JSON.parse(Buffer.from(request.split('.')[1]!, 'base64url').toString()).dpk;
    expect(dpk(again.request)).toBe(dpk(first.request));
    expect(statSync(path.join(directory, 'device.json')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(directory, 'air-gap.json')).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path.join(directory, 'air-gap.json'), 'utf8')).pending).toBe(again.request);
    const moved = await client({ fingerprint: fingerprint('new-motherboard') }).createAirGapRequest();
    expect(dpk(moved.request)).not.toBe(dpk(first.request));
    expect(await code(client({ store: memoryStore() }).createAirGapRequest())).toBe('INVALID_OPTIONS');
  });

  it('is a rollback (STALE) with a clock before the response’s iat, and ends on a later verified answer that says not licensed', async () => {
    const { licence, client, activate } = await setUp();
    const ship = client();
    await ship.activateAirGapped((await activate((await ship.createAirGapRequest()).request)).response);
    expect(await client({ clock: () => Date.now() - 3600_000 }).check()).toMatchObject({ state: 'STALE', clockRollback: true, airGapped: false });
    await h.admin('POST', `/licenses/${licence.lid}/revoke`, { reason: 'unpaid' });
    // The network comes back once: the revocation's signed answer ends the activation here.
    expect(await client({ fetchImpl: fetch }).check()).toMatchObject({ state: 'INVALID', reasons: ['REVOKED'], airGapped: false });
    expect(await ship.check()).toMatchObject({ state: 'INVALID', airGapped: false });
    expect(await code(ship.deactivateAirGapped())).toBe('BAD_ACTIVATION');
  });
});

describe('examples/air-gapped-activation.ts', () => {
  const root = path.resolve(import.meta.dirname, '../../../..');

  /** Runs the example with no network for it; `answer` turns what it printed into what is pasted. */
  function run(env: Record<string, string>, args: string[], answer?: (printed: string) => Promise<string>) {
    return new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'examples/air-gapped-activation.ts', ...args], {
        cwd: root,
        env: { ...process.env, ...env },
      });
      let output = '';
      let pasted = false;
      child.stdout.on('data', async (data: Buffer) => {
        output += data;
        if (answer && !pasted && output.includes('press Enter twice')) {
          pasted = true;
          child.stdin.write(`${await answer(output)}\n\n`);
        }
      });
      child.stderr.on('data', (data: Buffer) => (output += data));
      child.on('exit', (code) => resolve({ code, output }));
    });
  }

  it('activates from a pasted response, stays VALID on a second run, and deactivates to a code that frees the seat', async () => {
    const { product, credential, licence, activate } = await setUp();
    const dir = stateDir();
    writeFileSync(path.join(dir, 'product.pem'), product.publicKeyPem);
    writeFileSync(path.join(dir, 'customer.lic'), licence.licenseString);
    const env = {
      LICENSOR_ORG: h.slug,
      LICENSOR_CHECK_ID: credential.checkId,
      LICENSOR_CHECK_TOKEN: credential.checkToken,
      LICENSOR_PUBLIC_KEY_FILE: path.join(dir, 'product.pem'),
      LICENSOR_LICENCE_FILE: path.join(dir, 'customer.lic'),
      LICENSOR_STATE_DIR: path.join(dir, 'state'),
    };
    let response = '';
    const first = await run(env, [], async (printed) => {
      // A person types the groups of five into the portal; the response comes back as one line.
      const groups = printed.split('\n')[printed.split('\n').findIndex((line) => line.includes('Activate an air-gapped computer')) + 1]!;
      response = (await activate(groups)).response;
      return response;
    });
    expect(first.code, first.output).toBe(0);
    expect(first.output).toContain('VALID here (air-gapped activation, no network used)');
    const second = await run(env, []);
    expect(second.code, second.output).toBe(0);

    const ended = await run(env, ['deactivate']);
    expect(ended.code, ended.output).toBe(0);
    const code = ended.output.trim().split('\n').at(-1)!;
    expect((await h.admin('POST', `/licenses/${licence.lid}/air-gap-deactivations`, { code })).data.released).toBe(true);
  });
});
