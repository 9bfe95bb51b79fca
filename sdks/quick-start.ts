// What every SDK's packaging test needs (issue 46): the README's quick start as written, a fresh
// service with a product, a check token and two licences for it, and the quick start run against
// it from a folder of its own, outside this repository.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { startHarness, type Harness } from '../packages/server/test/harness.js';

export const root = path.resolve(import.meta.dirname, '..');

/**
 * The `index`th fenced block of `info` (`js`, `python`, `go`, `java`, `sh`...) under a README's
 * "## <section>" heading, exactly as a reader copies it.
 */
export function readmeBlock(readme: string, section: string, info: string, index = 0): string {
  const text = readFileSync(readme, 'utf8');
  const body = new RegExp(`^## ${section}\\n([\\s\\S]*?)(?=^## )`, 'm').exec(text)?.[1];
  if (body === undefined) throw new Error(`${readme} has no "## ${section}" section`);
  const blocks = [...body.matchAll(/^```(\S*)\n([\s\S]*?)^```$/gm)].filter((match) => match[1] === info);
  const block = blocks[index]?.[2];
  if (block === undefined) throw new Error(`${readme}'s "${section}" has no ${index + 1}. \`\`\`${info} block`);
  return block;
}

/** A folder of its own in the system's temporary directory, removed by `dispose`. */
export function tempFolder(name: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `licensor-${name}-`));
}

export interface QuickStartService {
  harness: Harness;
  /** The variables the quick starts read, for this service's product. */
  env: Record<string, string>;
  /** Writes `product.pem` and `licence.lic` (an ONLINE licence; revoked when asked) into `folder`. */
  writeFiles(folder: string, options?: { revoked?: boolean }): Promise<void>;
  close(): Promise<void>;
}

/** A fresh service (SQLite) on loopback with an ONLINE product and its check token. */
export async function startQuickStartService(): Promise<QuickStartService> {
  const harness = await startHarness();
  await harness.app.listen({ port: 0, host: '127.0.0.1' });
  const call = async (method: 'POST' | 'GET', url: string, body?: unknown) => {
    const response = await harness.admin(method, url, body);
    if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.data;
  };
  const product = await call('POST', '/products', {
    productKey: 'quick-start',
    name: 'Quick start',
    algorithm: 'ED25519',
    licenceType: 'ONLINE',
    allowedLicenceTypes: ['ONLINE'],
  });
  const token = await call('POST', `/products/${product.id}/check-token`);
  return {
    harness,
    env: {
      LICENSOR_URL: `http://127.0.0.1:${(harness.app.server.address() as AddressInfo).port}`,
      LICENSOR_ORG: harness.slug,
      LICENSOR_PRODUCT_KEY: product.productKey,
      LICENSOR_CHECK_ID: token.checkId,
      LICENSOR_CHECK_TOKEN: token.checkToken,
    },
    async writeFiles(folder, options = {}) {
      const licence = await call('POST', '/licenses', { productId: product.id, licensee: 'Ada Lovelace Ltd', validityMonths: 12 });
      if (options.revoked) await call('POST', `/licenses/${licence.lid}/revoke`, { reason: 'refunded' });
      writeFileSync(path.join(folder, 'product.pem'), product.publicKeyPem);
      // As a mail client or an editor leaves it: a line break after the string.
      writeFileSync(path.join(folder, 'licence.lic'), `${licence.licenseString}\n`);
    },
    close: () => harness.close(),
  };
}

export interface Run {
  code: number | null;
  stdout: string;
  output: string;
}

/**
 * Runs a command in `cwd` with the service's variables and a configuration directory of its own
 * (the SDKs keep their state under it), never this repository's tools on the PATH beyond the system's.
 */
export function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 240_000): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, XDG_CONFIG_HOME: path.join(cwd, '.config'), ...env } });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (data: Buffer) => {
      stdout += data;
      output += data;
    });
    child.stderr.on('data', (data: Buffer) => (output += data));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => (output += String(error)));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, output });
    });
  });
}

/** The command succeeded; answers its output. */
export async function succeed(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const result = await run(command, args, cwd, env);
  expect(result.code, `${command} ${args.join(' ')}\n${result.output}`).toBe(0);
  return result.stdout;
}

/**
 * The quick start, run in `folder` for a valid licence and then a revoked one, says each verdict
 * in words a person reads: a date, never a raw ISO time, an Optional or a list of booleans.
 */
export async function expectQuickStartVerdicts(
  service: QuickStartService,
  folder: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<void> {
  await service.writeFiles(folder);
  const valid = await run(command, args, folder, { ...env, ...service.env });
  expect(valid.code, valid.output).toBe(0);
  expect(valid.stdout).toMatch(/Licensed to Ada Lovelace Ltd until \d{1,2} [A-Z][a-z]+ \d{4}\./);
  expect(valid.stdout).toContain('This computer is licensed');

  rmSync(path.join(folder, '.config'), { recursive: true, force: true });
  await service.writeFiles(folder, { revoked: true });
  const revoked = await run(command, args, folder, { ...env, ...service.env });
  expect(revoked.code, revoked.output).toBe(1);
  expect(revoked.stdout).toContain('Not licensed on this computer: REVOKED');

  for (const { stdout } of [valid, revoked]) {
    expect(stdout, 'no raw ISO time').not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:/);
    expect(stdout, 'no language internals').not.toMatch(/Optional|\[(true|false)[ ,]|\{(true|false) |undefined|None\b|<nil>|null/);
  }
}
