import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectFingerprint } from '@licensor/sdk';

// The Java SDK's own JUnit 5 suite (sdks/java/build.sh test: javac, then Debian's junit5 console
// launcher), and the Java driver's fingerprint against the TypeScript SDK's on this computer.
const here = import.meta.dirname;
const junit = '/usr/share/java/junit-platform-console-standalone.jar';
const javac = spawnSync('javac', ['-version'], { encoding: 'utf8' });
const missing = javac.error || javac.status !== 0 ? 'javac is not installed' : !existsSync(junit) ? `${junit} is missing (apt install junit5)` : null;
const required = process.env.LICENSOR_REQUIRE_SDKS === '1';
if (missing && !required) console.warn(`Java SDK tests skipped: ${missing}`);

describe.skipIf(missing !== null && !required)('Java SDK (sdks/java)', () => {
  it('has its toolchain', () => {
    expect(missing).toBeNull();
  });

  it('passes its JUnit suite on the shared vectors', () => {
    const run = spawnSync(path.join(here, 'build.sh'), ['test'], { encoding: 'utf8', timeout: 300_000 });
    if (run.status !== 0) console.error(run.stdout, run.stderr);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/\[\s+0 tests failed\s+\]/);
  }, 300_000);

  it('collects the same fingerprint as the TypeScript SDK', async () => {
    const driver = spawn(path.join(here, 'driver'), [], { stdio: ['pipe', 'pipe', 'inherit'] });
    let output = '';
    driver.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => driver.on('exit', resolve));
    driver.stdin.end('{"op":"fingerprint"}\n');
    expect(await exited).toBe(0);
    expect(JSON.parse(output.trim())).toEqual({ ok: true, result: { fingerprint: collectFingerprint().fingerprint } });
  }, 300_000);
});
