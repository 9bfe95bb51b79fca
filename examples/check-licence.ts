// Issues an ONLINE licence through the Management API, then uses the SDK as an installed
// application would: verify offline, check online, see a renewal, fetch the new term.
//
//   LICENSOR_TOKEN=svc_... npx tsx examples/check-licence.ts
//
// LICENSOR_URL (default http://127.0.0.1:8080), LICENSOR_ORG (default `default`) and
// LICENSOR_TOKEN (a management token with licenses:write and products:write).
import { randomBytes } from 'node:crypto';
import { LicenceClient, collectFingerprint, memoryStore, verifyLicence, type CheckResult } from '@licensor/sdk';

const baseUrl = (process.env.LICENSOR_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const org = process.env.LICENSOR_ORG ?? 'default';
const token = process.env.LICENSOR_TOKEN;

function step(text: string): void {
  console.log(`- ${text}`);
}

function expect(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

/** A Management API call; anything but a 2xx stops the example. */
async function api(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${baseUrl}/o/${org}/api${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

function describe(result: CheckResult): string {
  const noAnswer = result.noAnswer ? `, no answer: ${result.noAnswer.code} ${result.noAnswer.message}` : '';
  return `${result.state} (signed status ${result.answer?.status || 'none'}, renewed ${result.renewed}${noAnswer})`;
}

async function main(): Promise<void> {
  if (!token) throw new Error('set LICENSOR_TOKEN to a management token with licenses:write and products:write');

  const product = await api('POST', '/products', {
    productKey: `example-${randomBytes(4).toString('hex')}`,
    name: 'SDK example product',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['ONLINE'],
    licenceFetchEnabled: true,
  });
  step(`created product ${product.productKey} (${product.algorithm})`);

  const credential = await api('POST', `/products/${product.id}/check-token`);
  step(`rotated its check token (check id ${credential.checkId})`);

  const issued = await api('POST', '/licenses', { productId: product.id, licensee: 'Example Customer', validityMonths: 12 });
  step(`issued licence ${issued.lid}, expiring ${issued.expiresAt}`);

  const offline = verifyLicence(issued.licenseString, product.publicKeyPem);
  expect(offline.signed && offline.valid, `offline verification refused the licence: ${offline.reasons.join(', ')}`);
  step(`verified it offline: ${offline.status}, licensee ${offline.claims.lic}`);

  const fingerprint = collectFingerprint();
  step(`this machine's fingerprint ${fingerprint.fingerprint} (readable: ${JSON.stringify(fingerprint.readable)})`);

  const client = new LicenceClient({
    baseUrl,
    slug: org,
    checkId: credential.checkId,
    checkToken: credential.checkToken,
    publicKeyPem: product.publicKeyPem,
    licence: issued.licenseString,
    fingerprint: fingerprint.fingerprint,
    // An application would keep the default file store; the example leaves no file behind.
    store: memoryStore(),
  });

  const first = await client.check();
  step(`checked online: ${describe(first)}`);
  expect(first.state === 'VALID' && !first.renewed, 'the first check should be VALID and not renewed');

  const renewed = await api('POST', `/licenses/${issued.lid}/renew`, { validityMonths: 24 });
  step(`renewed it through the API, now expiring ${renewed.expiresAt}`);

  const second = await client.check();
  step(`checked again with the old term: ${describe(second)}`);
  expect(second.state === 'VALID' && second.renewed, 'the check after renewal should be VALID and renewed');

  const fetched = await client.fetch();
  expect(fetched === renewed.licenseString, 'fetch should return the renewed licence string');
  const verifiedNew = verifyLicence(fetched, product.publicKeyPem, { fingerprint: fingerprint.fingerprint });
  expect(verifiedNew.signed && verifiedNew.valid && verifiedNew.claims.lid === issued.lid, 'the fetched term should verify offline for the same lid');
  step(`fetched the new term and verified it offline: expires ${verifiedNew.expiresAt?.toISOString() ?? 'never'}`);

  const third = await client.check();
  step(`checked with the new term: ${describe(third)}`);
  expect(third.state === 'VALID' && !third.renewed, 'the check with the new term should be VALID and not renewed');
  console.log('done');
}

main().catch((error: unknown) => {
  console.error(`failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
