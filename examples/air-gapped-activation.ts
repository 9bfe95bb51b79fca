// An application on a computer that never reaches the licence service (DESIGN.md 14): it shows an
// activation request, takes the response a person brings back from the vendor's portal or console
// (pasted, or typed from its groups of five), and is licensed with no network access at all.
//
//   LICENSOR_ORG=default LICENSOR_CHECK_ID=... LICENSOR_CHECK_TOKEN=svcc_... \
//   LICENSOR_PUBLIC_KEY_FILE=product.pem LICENSOR_LICENCE_FILE=customer.lic LICENSOR_STATE_DIR=./state \
//   npx tsx examples/air-gapped-activation.ts [deactivate]
//
// It prints the request, reads the response from standard input (ended by an empty line or the
// end of input), activates and checks; it exits 0 exactly when the licence is VALID here. With
// `deactivate` it ends the activation and prints the code that frees the seat.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileStore, LicenceClient, verifyLicence } from '@licensor/sdk';

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

// This computer has no network: the client is given a fetch that refuses, so nothing is ever sent.
const noNetwork: typeof fetch = async () => {
  throw new TypeError('this computer has no network');
};

/** Lines from standard input until an empty line or the end of input, joined. */
async function readPasted(): Promise<string> {
  const lines: string[] = [];
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() === '') break;
    lines.push(line);
  }
  return lines.join('\n');
}

async function main(): Promise<number> {
  const publicKeyPem = readFileSync(setting('LICENSOR_PUBLIC_KEY_FILE'), 'utf8');
  const licence = readFileSync(setting('LICENSOR_LICENCE_FILE'), 'utf8').trim();
  const client = new LicenceClient({
    baseUrl: 'http://licensing.invalid',
    slug: setting('LICENSOR_ORG'),
    checkId: setting('LICENSOR_CHECK_ID'),
    checkToken: setting('LICENSOR_CHECK_TOKEN'),
    publicKeyPem,
    licence,
    store: fileStore(setting('LICENSOR_STATE_DIR')),
    fetchImpl: noNetwork,
  });

  const offline = verifyLicence(licence, publicKeyPem, { fingerprint: client.fingerprint });
  console.log(`- The licence verifies offline: ${offline.valid ? 'yes' : `no (${offline.reasons.join(', ')})`}`);
  if (!offline.valid) return 1;

  if (process.argv[2] === 'deactivate') {
    const { groups } = await client.deactivateAirGapped();
    console.log('- Deactivated here. To free the seat, enter this code under "Deactivate an air-gapped computer":');
    console.log(groups);
    return 0;
  }

  let result = await client.check();
  if (!(result.state === 'VALID' && result.airGapped)) {
    const { request, groups } = await client.createAirGapRequest();
    console.log('- Enter this request under "Activate an air-gapped computer" in your vendor\'s portal:');
    console.log(groups);
    console.log(`- (the same as one line, for a QR code: ${request})`);
    console.log('- Then paste the response here and press Enter twice:');
    const { until } = await client.activateAirGapped(await readPasted());
    console.log(`- Activated on this computer until ${until}.`);
    result = await client.check();
  }
  console.log(`- The licence is ${result.state} here${result.airGapped ? ' (air-gapped activation, no network used)' : ''}.`);
  return result.state === 'VALID' ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`- Failed: ${error.message}`);
    process.exit(1);
  },
);
