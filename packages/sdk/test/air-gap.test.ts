// The SDK's air-gap state (DESIGN.md 14, docs/protocol.md 8 and 11) without a service: responses
// signed here with a product key, as the service signs them.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildFingerprint, parseActivationRequest, signActivationResponse, signLicence, type ActivationResponseFields } from '@licensor/protocol';
import { fileStore, LicenceClient, LicensorError } from '@licensor/sdk';

const product = generateKeyPairSync('ed25519');
const publicKeyPem = product.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const machine = buildFingerprint({ machine: 'unit-m', host: 'unit-h', mac: 'unit-a', cpu: 'unit-c', disk: 'unit-d' });
const now = Math.floor(Date.now() / 1000);
const licenceOf = (lid: string) =>
  signLicence(
    { lid, prd: 'unit-app', org: 'unit', typ: 'ONLINE', iat: now - 60, exp: now + 86_400 * 365, grace: 0, mm: 1, chk: 86_400, max: 604_800 },
    product.privateKey,
  );

function installation(lid = 'unit-licence-1', dir = mkdtempSync(path.join(os.tmpdir(), 'licensor-sdk-airgap-'))) {
  const client = new LicenceClient({
    baseUrl: 'http://licensing.invalid',
    slug: 'unit',
    checkId: 'unitcheck00000',
    checkToken: 'svcc_unitcheck00000_x',
    publicKeyPem,
    licence: licenceOf(lid),
    fingerprint: machine,
    store: fileStore(dir),
    fetchImpl: async () => {
      throw new TypeError('no network');
    },
  });
  return { client, dir, directory: path.join(dir, 'unit', 'unit-app') };
}

/** The service's answer to a request, with fields changed as given. */
function respond(request: string, changes: Partial<ActivationResponseFields> = {}): string {
  const { lid, fp, dpk, nonce } = parseActivationRequest(request).fields;
  return signActivationResponse(
    { lid, aid: '7', fp, dpk, nonce, status: 'ACTIVE', iat: now, boundAt: now, until: now + 86_400, ...changes },
    product.privateKey,
  );
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error) => (error instanceof LicensorError ? error.code : String(error)),
  );

describe('air-gapped activation in the SDK', () => {
  it('refuses a response for another licence, nonce or activation deactivated here, and an unknown key', async () => {
    const { client } = installation();
    const { request } = await client.createAirGapRequest();
    expect(await code(client.activateAirGapped(respond(request, { lid: 'unit-licence-2' })))).toBe('BAD_ACTIVATION');
    expect(await code(client.activateAirGapped(respond(request, { nonce: 'another-nonce-0000000' })))).toBe('BAD_ACTIVATION');
    const foreign = generateKeyPairSync('ed25519').privateKey;
    const { lid, fp, dpk, nonce } = parseActivationRequest(request).fields;
    expect(
      await code(
        client.activateAirGapped(signActivationResponse({ lid, aid: '7', fp, dpk, nonce, status: 'ACTIVE', iat: now, boundAt: now, until: now + 60 }, foreign)),
      ),
    ).toBe('BAD_ACTIVATION');

    await client.activateAirGapped(respond(request));
    expect((await client.check()).state).toBe('VALID');
    await client.deactivateAirGapped();
    // A new request, answered with the deactivated activation's id: refused.
    const next = await client.createAirGapRequest();
    expect(await code(client.activateAirGapped(respond(next.request)))).toBe('BAD_ACTIVATION');
    expect((await client.activateAirGapped(respond(next.request, { aid: '8' }))).activationId).toBe('8');
  });

  it('is not VALID past until, and a damaged air-gap.json or a device key made elsewhere counts as none', async () => {
    const { client, dir, directory } = installation();
    const { request } = await client.createAirGapRequest();
    await client.activateAirGapped(respond(request, { until: now - 1 }));
    expect(await client.check()).toMatchObject({ state: 'STALE', airGapped: false });

    const fresh = installation('unit-licence-1', dir).client;
    const second = await fresh.createAirGapRequest();
    await fresh.activateAirGapped(respond(second.request, { aid: '9' }));
    expect((await fresh.check()).state).toBe('VALID');
    const device = JSON.parse(readFileSync(path.join(directory, 'device.json'), 'utf8'));
    writeFileSync(path.join(directory, 'device.json'), JSON.stringify({ ...device, fingerprint: buildFingerprint({ machine: 'elsewhere' }) }));
    expect((await fresh.check()).state).toBe('STALE');
    writeFileSync(path.join(directory, 'device.json'), JSON.stringify(device));
    expect((await fresh.check()).state).toBe('VALID');
    writeFileSync(path.join(directory, 'air-gap.json'), '{"format": 1, "activations": [');
    expect((await fresh.check()).state).toBe('STALE');
  });
});
