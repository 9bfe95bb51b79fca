import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectFingerprint } from '@licensor/sdk';
import { expectQuickStartVerdicts, readmeBlock, startQuickStartService, succeed, tempFolder } from '../quick-start.js';

// The Java SDK's own JUnit 5 suite (sdks/java/build.sh test: javac, then Debian's junit5 console
// launcher), the Java driver's fingerprint against the TypeScript SDK's on this computer, and the
// jar as the README hands it out: its sources and POM beside it, the quick start run against it.
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

  it("builds licensor-sdk-<version>.jar with its sources and POM, and runs the README's quick start against it alone", async () => {
    const build = path.join(here, 'build');
    const pom = readFileSync(path.join(here, 'pom.xml'), 'utf8');
    const version = /^ {2}<version>(.+)<\/version>$/m.exec(pom)?.[1];
    expect(version).toBe('0.1.0');
    expect(pom).toMatch(/<groupId>dev\.licensor<\/groupId>\s*<artifactId>licensor-sdk<\/artifactId>/);
    expect(pom, 'the SDK has no dependencies').not.toContain('<dependencies>');
    await succeed(path.join(here, 'build.sh'), [], here);
    const listing = (jar: string) => spawnSync('jar', ['--list', '--file', path.join(build, jar)], { encoding: 'utf8' }).stdout.split('\n');
    const classes = listing('licensor-sdk-0.1.0.jar');
    expect(classes).toContain('dev/licensor/sdk/LicenceClient.class');
    expect(classes).toContain('META-INF/maven/dev.licensor/licensor-sdk/pom.xml');
    expect(
      classes.filter((entry) => entry.includes('driver')),
      'the driver is a test program, never in the jar',
    ).toEqual([]);
    const sources = listing('licensor-sdk-0.1.0-sources.jar');
    expect(sources).toContain('dev/licensor/sdk/LicenceClient.java');
    expect(readFileSync(path.join(build, 'licensor-sdk-0.1.0.pom'), 'utf8')).toBe(pom);

    const app = tempFolder('java-app');
    const service = await startQuickStartService();
    try {
      copyFileSync(path.join(build, 'licensor-sdk-0.1.0.jar'), path.join(app, 'licensor-sdk-0.1.0.jar'));
      writeFileSync(path.join(app, 'QuickStart.java'), readmeBlock(path.join(here, 'README.md'), 'Quick start', 'java'));
      // The README's two commands: javac, then java with the service's variables.
      const [compile, , launch] = readmeBlock(path.join(here, 'README.md'), 'Quick start', 'sh').split('\n');
      expect(compile).toBe('javac -cp licensor-sdk-0.1.0.jar QuickStart.java');
      await succeed('javac', compile!.split(' ').slice(1), app);
      const java = launch!
        .trim()
        .split(' ')
        .filter((word) => !word.includes('='))
        .slice(1);
      expect(java).toEqual(['-cp', 'licensor-sdk-0.1.0.jar:.', 'QuickStart']);
      await expectQuickStartVerdicts(service, app, 'java', java);
    } finally {
      await service.close();
      rmSync(app, { recursive: true, force: true });
    }
  }, 300_000);
});
