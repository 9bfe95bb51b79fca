// Uses the SDK as an installed application would, on a licence you issued: verify it offline,
// check it online, and fetch its current term when the product allows it.
//
//   LICENSOR_TOKEN=svc_... LICENSOR_LICENCE=<lid> LICENSOR_CHECK_TOKEN=svcc_... npx tsx examples/check-licence.ts
//
// LICENSOR_LICENCE is the licence's id (its page's address ends with it); LICENSOR_CHECK_TOKEN
// the check token its product's page showed when you rotated it (an application ships with it);
// LICENSOR_TOKEN a management token with licenses:read and products:read, used only to read the
// licence string and the product's public keys, as you would copy them into an application.
// LICENSOR_URL (default http://127.0.0.1:8080) and LICENSOR_ORG (default `default`) point it
// elsewhere. It creates, renews and rotates nothing: the one change is the check's own, which
// binds this computer to a seat of the licence when one is free (release it on the licence's page).
import { LicenceClient, collectFingerprint, memoryStore, verifyLicence, type CheckResult } from '@licensor/sdk';

const baseUrl = (process.env.LICENSOR_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const org = process.env.LICENSOR_ORG ?? 'default';
const { LICENSOR_TOKEN: token, LICENSOR_LICENCE: lid, LICENSOR_CHECK_TOKEN: checkToken } = process.env;

function step(text: string): void {
  console.log(`- ${text}`);
}

function expect(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

/** A Management API read; anything but a 2xx stops the example. */
async function read(path: string): Promise<any> {
  const response = await fetch(`${baseUrl}/o/${org}/api${path}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  if (!response.ok) throw new Error(`GET ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

function describe(result: CheckResult): string {
  const noAnswer = result.noAnswer ? `, no answer: ${result.noAnswer.code} ${result.noAnswer.message}` : '';
  const refused = result.serverReason ? `, the service said ${result.serverReason}` : '';
  return `${result.state} (signed status ${result.answer?.status || 'none'}${refused}${noAnswer})`;
}

async function main(): Promise<void> {
  if (!token || !lid)
    throw new Error('set LICENSOR_TOKEN (licenses:read and products:read) and LICENSOR_LICENCE (the licence id) first: see the top of this file');

  const licence = await read(`/licenses/${encodeURIComponent(lid)}`);
  const product = await read(`/products/${licence.productId}`);
  const keys = (await read(`/products/${product.id}/keys`)).map((key: { publicKeyPem: string }) => key.publicKeyPem);
  step(`read licence ${licence.lid} of ${licence.licensee} for ${product.name} (${licence.licenceType}), and the product's ${keys.length} public key(s)`);

  const fingerprint = collectFingerprint();
  step(`this computer's fingerprint is ${fingerprint.fingerprint}`);

  const offline = verifyLicence(licence.licenseString, keys, { fingerprint: fingerprint.fingerprint });
  step(`verified it offline: ${offline.valid ? `valid, ${offline.status}` : `not valid (${offline.reasons.join(', ')})`}`);
  expect(offline.signed, "the licence string does not verify with the product's keys");
  if (licence.licenceType === 'OFFLINE') {
    step('an OFFLINE licence is only ever verified offline: nothing to check online');
    console.log('done');
    return;
  }

  if (!checkToken) throw new Error("set LICENSOR_CHECK_TOKEN to the product's check token (shown once when it was rotated) to check online");
  const client = new LicenceClient({
    baseUrl,
    slug: org,
    checkId: product.checkId,
    checkToken,
    publicKeyPem: keys,
    licence: licence.licenseString,
    fingerprint: fingerprint.fingerprint,
    // An application would keep the default file store; the example leaves no file behind.
    store: memoryStore(),
  });
  const checked = await client.check();
  step(`checked online: ${describe(checked)}`);
  expect(checked.noAnswer === null, 'the service gave no verified answer (is LICENSOR_CHECK_TOKEN the current check token of this product?)');

  // Fetch hands a bound machine its licence's current term (after a renewal, say), when the product allows it.
  if (checked.state === 'VALID' && product.licenceFetchEnabled) {
    const current = await client.fetch();
    step(`fetched the current term: ${current === licence.licenseString ? 'the string you have' : 'a newer term, verified offline'}`);
  } else if (checked.renewed) {
    step('the service says a newer term exists: turn on licence fetch for the product to let applications fetch it');
  }
  console.log('done');
}

main().catch((error: unknown) => {
  console.error(`failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
