// PKCS#12 keystores made during the test run by the tools vendors use: OpenSSL (its AES default
// and `-legacy` RC2/3DES) and Java's keytool. Nothing binary is checked in.
import { execFileSync } from 'node:child_process';
import { createPublicKey, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Algorithm } from '@licensor/protocol';

export type KeystoreTool = 'openssl' | 'openssl-legacy' | 'keytool';

export interface Keystore {
  base64: string;
  /** The key's public half and the certificate's PEM, to compare with what the service took. */
  publicKey: KeyObject;
  certificatePem: string | null;
}

const OPENSSL_KEY: Record<Algorithm, string[]> = {
  ED25519: ['-algorithm', 'ed25519'],
  EC_P256: ['-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  EC_P384: ['-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  RSA_2048: ['-algorithm', 'rsa', '-pkeyopt', 'rsa_keygen_bits:2048'],
  RSA_3072: ['-algorithm', 'rsa', '-pkeyopt', 'rsa_keygen_bits:3072'],
  RSA_4096: ['-algorithm', 'rsa', '-pkeyopt', 'rsa_keygen_bits:4096'],
};
const KEYTOOL_KEY: Record<Algorithm, string[]> = {
  ED25519: ['-keyalg', 'Ed25519'],
  EC_P256: ['-keyalg', 'EC', '-groupname', 'secp256r1'],
  EC_P384: ['-keyalg', 'EC', '-groupname', 'secp384r1'],
  RSA_2048: ['-keyalg', 'RSA', '-keysize', '2048'],
  RSA_3072: ['-keyalg', 'RSA', '-keysize', '3072'],
  RSA_4096: ['-keyalg', 'RSA', '-keysize', '4096'],
};

export const keystoreToolsMissing = ['/usr/bin/openssl', '/usr/bin/keytool'].filter((tool) => !fs.existsSync(tool));

const run = (command: string, args: string[]) => execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });

export function keystores() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-p12-'));
  let n = 0;
  const file = (name: string) => path.join(dir, `${++n}-${name}`);
  /** The keystore's key and certificate as OpenSSL reads them back (no private key leaves the test). */
  const readBack = (p12: string, password: string, legacy = false): Keystore => {
    const pass = ['-passin', `pass:${password}`, ...(legacy ? ['-legacy'] : [])];
    const certificate = run('openssl', ['pkcs12', '-in', p12, '-nokeys', '-clcerts', ...pass]).toString();
    const key = run('openssl', ['pkcs12', '-in', p12, '-nocerts', '-nodes', ...pass]).toString();
    return {
      base64: fs.readFileSync(p12).toString('base64'),
      publicKey: createPublicKey(key.slice(key.indexOf('-----BEGIN'))),
      certificatePem: certificate.includes('BEGIN CERTIFICATE') ? certificate.slice(certificate.indexOf('-----BEGIN')) : null,
    };
  };
  return {
    make(tool: KeystoreTool, algorithm: Algorithm, password: string, options: { certificate?: boolean; iterations?: number } = {}): Keystore {
      const p12 = file('store.p12');
      if (tool === 'keytool') {
        run('keytool', [
          '-genkeypair',
          '-storetype',
          'PKCS12',
          '-keystore',
          p12,
          '-storepass',
          password,
          '-alias',
          'vendor',
          ...KEYTOOL_KEY[algorithm],
          '-dname',
          'CN=Vendor',
          '-validity',
          '30',
        ]);
        return readBack(p12, password);
      }
      const key = file('key.pem');
      run('openssl', ['genpkey', ...OPENSSL_KEY[algorithm], '-out', key]);
      const certificate = file('cert.pem');
      const withCertificate = options.certificate ?? true;
      if (withCertificate) run('openssl', ['req', '-new', '-x509', '-key', key, '-subj', '/CN=Vendor Signing', '-days', '30', '-out', certificate]);
      run('openssl', [
        'pkcs12',
        '-export',
        ...(tool === 'openssl-legacy' ? ['-legacy'] : []),
        ...(options.iterations ? ['-iter', String(options.iterations)] : []),
        '-inkey',
        key,
        ...(withCertificate ? ['-in', certificate] : ['-nocerts']),
        '-out',
        p12,
        '-passout',
        `pass:${password}`,
      ]);
      return readBack(p12, password, tool === 'openssl-legacy');
    },
    /** A keytool keystore holding two key entries. */
    twoKeys(password: string): string {
      const p12 = file('two.p12');
      for (const alias of ['first', 'second'])
        run('keytool', [
          '-genkeypair',
          '-storetype',
          'PKCS12',
          '-keystore',
          p12,
          '-storepass',
          password,
          '-alias',
          alias,
          ...KEYTOOL_KEY.EC_P256,
          '-dname',
          `CN=${alias}`,
          '-validity',
          '30',
        ]);
      return fs.readFileSync(p12).toString('base64');
    },
    /** A keystore with a certificate and no key. */
    certificateOnly(password: string): string {
      const key = file('key.pem');
      const certificate = file('cert.pem');
      const p12 = file('nokey.p12');
      run('openssl', ['genpkey', ...OPENSSL_KEY.EC_P256, '-out', key]);
      run('openssl', ['req', '-new', '-x509', '-key', key, '-subj', '/CN=Only', '-days', '30', '-out', certificate]);
      run('openssl', ['pkcs12', '-export', '-nokeys', '-in', certificate, '-out', p12, '-passout', `pass:${password}`]);
      return fs.readFileSync(p12).toString('base64');
    },
    dispose() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
