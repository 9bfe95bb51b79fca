// The SDK as a vendor gets it (issue 46): `npm pack` here, the tarball installed offline into an
// empty project in a temporary folder, used from an ES module and from CommonJS with its types,
// and the README's quick start run as written against a fresh service.
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadVectors } from '../../protocol/test-vectors/index.js';
import { expectQuickStartVerdicts, readmeBlock, root, startQuickStartService, succeed, tempFolder, type QuickStartService } from '../../../sdks/quick-start.js';

const here = path.resolve(import.meta.dirname, '..');
const packed = tempFolder('sdk-pack');
const app = tempFolder('sdk-app');
let service: QuickStartService;

beforeAll(async () => {
  service = await startQuickStartService();
  await succeed('npm', ['pack', '--pack-destination', packed], here);
  writeFileSync(path.join(app, 'package.json'), `${JSON.stringify({ name: 'vendor-app', version: '1.0.0', private: true }, null, 2)}\n`);
  // Exactly the README's install, with --offline to show that nothing is fetched.
  await succeed('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(packed, 'licensor-sdk-0.1.0.tgz')], app);
}, 180_000);

afterAll(async () => {
  await service?.close();
  for (const folder of [packed, app]) rmSync(folder, { recursive: true, force: true });
});

it('packs into one tarball that installs alone: no dependency, the protocol bundled in', () => {
  expect(readdirSync(packed)).toEqual(['licensor-sdk-0.1.0.tgz']);
  expect(readdirSync(path.join(app, 'node_modules')).sort()).toEqual(['.package-lock.json', '@licensor']);
  expect(readdirSync(path.join(app, 'node_modules/@licensor'))).toEqual(['sdk']);
  expect(readdirSync(path.join(app, 'node_modules/@licensor/sdk')).sort()).toEqual(['README.md', 'dist', 'package.json']);
});

it('verifies a licence from an ES module and from CommonJS', async () => {
  const vector = loadVectors().algorithms[0]!;
  const fingerprint = (vector.claims.fp as string[])[0]!;
  writeFileSync(path.join(app, 'licence.lic'), `${vector.licence}\n`);
  writeFileSync(path.join(app, 'product.pem'), vector.publicKeyPem);
  const body = (load: string) => `${load}
const result = verifyLicence(readLicenceFile('licence.lic'), readFileSync('product.pem', 'utf8'), { now: ${(vector.claims.iat as number) * 1000}, fingerprint: '${fingerprint}' });
console.log(JSON.stringify({ valid: result.valid, lid: result.claims?.lid, client: typeof LicenceClient }));`;
  writeFileSync(
    path.join(app, 'esm.mjs'),
    body(`import { readFileSync } from 'node:fs';\nimport { LicenceClient, readLicenceFile, verifyLicence } from '@licensor/sdk';`),
  );
  writeFileSync(
    path.join(app, 'cjs.cjs'),
    body(`const { readFileSync } = require('node:fs');\nconst { LicenceClient, readLicenceFile, verifyLicence } = require('@licensor/sdk');`),
  );
  const expected = { valid: true, lid: vector.claims.lid, client: 'function' };
  for (const file of ['esm.mjs', 'cjs.cjs']) expect(JSON.parse(await succeed(process.execPath, [file], app)), file).toEqual(expected);
});

it('type-checks an ES module and a CommonJS module against its declarations', async () => {
  const use = `const result = verifyLicence('x', 'pem');
const kept: StateStore = memoryStore();
const code: LicensorErrorCode = 'INVALID_KEY';
if (result.signed) console.log(result.claims.lid, result.expiresAt?.getTime(), kept, code);
// @ts-expect-error a licence string, never a number
verifyLicence(1, 'pem');
`;
  const imports = "import { memoryStore, verifyLicence, type LicensorErrorCode, type StateStore } from '@licensor/sdk';\n";
  writeFileSync(path.join(app, 'use.mts'), imports + use);
  writeFileSync(path.join(app, 'use.cts'), imports + use);
  writeFileSync(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      // Node's own types from this repository: an application has @types/node of its own.
      compilerOptions: {
        module: 'nodenext',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
        typeRoots: [path.join(root, 'node_modules/@types')],
      },
      files: ['use.mts', 'use.cts'],
    }),
  );
  await succeed(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app);
}, 60_000);

it("runs the README's quick start as written, against a fresh service", async () => {
  writeFileSync(path.join(app, 'quick-start.mjs'), readmeBlock(path.join(here, 'README.md'), 'Quick start', 'js'));
  await expectQuickStartVerdicts(service, app, process.execPath, ['quick-start.mjs']);
}, 60_000);
