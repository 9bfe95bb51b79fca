// CommonJS consumers load the ESM build through require(esm) (Node 20.19+ and 22.12+). This runs
// the built package (`npm install` builds it) the way a CommonJS application would.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { loadVectors } from '../../protocol/test-vectors/index.js';

it('require("@licensor/sdk") works from CommonJS', async () => {
  const vector = loadVectors().algorithms[0]!;
  const script = `
    const { verifyLicence, LicenceClient, collectFingerprint } = require('@licensor/sdk');
    const result = verifyLicence(process.env.LICENCE, process.env.KEY, { now: ${(vector.claims.iat as number) * 1000}, fingerprint: process.env.FP });
    console.log(JSON.stringify({ valid: result.valid, client: typeof LicenceClient, fp: typeof collectFingerprint }));`;
  const fp = (vector.claims.fp as string[])[0]!;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=commonjs', '-e', script], {
    cwd: path.resolve(import.meta.dirname, '../../..'),
    env: { ...process.env, LICENCE: vector.licence, KEY: vector.publicKeyPem, FP: fp },
  });
  expect(JSON.parse(stdout)).toEqual({ valid: true, client: 'function', fp: 'function' });
});
