// SoftHSM2 tokens for the PKCS#11 tests: a fresh token directory per test process, keys made
// with OpenSC's pkcs11-tool (not with the service's own code), both from Debian's packages.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const MODULE = process.env.LICENSOR_TEST_PKCS11_MODULE ?? '/usr/lib/softhsm/libsofthsm2.so';
const missing = [MODULE, '/usr/bin/softhsm2-util', '/usr/bin/pkcs11-tool'].filter((file) => !fs.existsSync(file));

/** Why the PKCS#11 tests cannot run here, or null. CI installs softhsm2 and opensc and sets LICENSOR_REQUIRE_SOFTHSM, so there they never skip. */
export const softHsmMissing =
  missing.length === 0 ? null : `SoftHSM2 or OpenSC is not installed (missing ${missing.join(', ')}): apt-get install softhsm2 opensc`;
if (softHsmMissing && process.env.LICENSOR_REQUIRE_SOFTHSM) throw new Error(softHsmMissing);

export const SO_PIN = '87654321';

/** The algorithms of the service and pkcs11-tool's names for their key types. */
export const KEY_TYPES = {
  ED25519: 'EC:edwards25519',
  EC_P256: 'EC:prime256v1',
  EC_P384: 'EC:secp384r1',
  RSA_2048: 'rsa:2048',
  RSA_3072: 'rsa:3072',
  RSA_4096: 'rsa:4096',
} as const;

export interface SoftHsm {
  module: string;
  /** Creates a token; SOFTHSM2_CONF is set for this process before the service loads the module. */
  initToken(label: string, pin: string): void;
  generate(token: string, pin: string, algorithm: keyof typeof KEY_TYPES, label: string): void;
  deleteKey(token: string, pin: string, label: string): void;
  changePin(token: string, oldPin: string, newPin: string): void;
  /** What pkcs11-tool lists of a token's objects (labels and attributes). */
  objects(token: string, pin: string): string;
  dispose(): void;
}

export function softHsm(): SoftHsm {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-softhsm-'));
  fs.mkdirSync(path.join(dir, 'tokens'));
  fs.writeFileSync(path.join(dir, 'softhsm2.conf'), `directories.tokendir = ${dir}/tokens\nobjectstore.backend = file\nlog.level = ERROR\n`);
  process.env.SOFTHSM2_CONF = path.join(dir, 'softhsm2.conf');
  const tool = (token: string, pin: string, ...args: string[]) =>
    execFileSync('pkcs11-tool', ['--module', MODULE, '--token-label', token, '--login', '--pin', pin, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  return {
    module: MODULE,
    initToken(label, pin) {
      execFileSync('softhsm2-util', ['--init-token', '--free', '--label', label, '--so-pin', SO_PIN, '--pin', pin], { stdio: 'ignore' });
    },
    generate(token, pin, algorithm, label) {
      tool(token, pin, '--keypairgen', '--key-type', KEY_TYPES[algorithm], '--label', label, '--id', Buffer.from(label).toString('hex'));
    },
    deleteKey(token, pin, label) {
      tool(token, pin, '--delete-object', '--type', 'privkey', '--label', label);
    },
    changePin(token, oldPin, newPin) {
      tool(token, oldPin, '--change-pin', '--new-pin', newPin);
    },
    objects(token, pin) {
      return tool(token, pin, '--list-objects');
    },
    dispose() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
