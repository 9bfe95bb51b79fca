// Runs the Go SDK's own suite (go test on the shared vectors and a fake service) and vets the
// macOS and Windows code paths, which CI cannot run. Skipped, with the reason, when Go is missing,
// unless LICENSOR_REQUIRE_SDKS=1 (CI), when a missing toolchain fails.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectQuickStartVerdicts, readmeBlock, root, startQuickStartService, tempFolder } from '../quick-start.js';

const dir = import.meta.dirname;
const required = process.env.LICENSOR_REQUIRE_SDKS === '1';
// Never downloads: no module proxy, go.mod as it is, the installed toolchain only.
const env: NodeJS.ProcessEnv = { ...process.env, GOPROXY: 'off', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' };
// Go's default build cache needs $HOME or $XDG_CACHE_HOME; without either, one in the git-ignored .build.
if (!env.GOCACHE && !env.HOME && !env.XDG_CACHE_HOME) env.GOCACHE = path.join(dir, '.build', 'cache');

function go(args: string[], extra: NodeJS.ProcessEnv = {}, cwd = dir) {
  const result = spawnSync('go', args, { cwd, env: { ...env, ...extra }, encoding: 'utf8', timeout: 600_000 });
  return { ok: result.status === 0, output: `${result.error?.message ?? ''}${result.stdout ?? ''}${result.stderr ?? ''}` };
}

const version = go(['version']);
const missing = version.ok ? null : `no Go toolchain: ${version.output.trim() || 'go is not on PATH'}`;
if (missing && !required) console.warn(`sdks/go: skipped (${missing})`);

describe.skipIf(missing !== null && !required)(`Go SDK (${missing ?? version.output.trim()})`, () => {
  it('has a Go toolchain', () => {
    expect(missing).toBeNull();
  });

  it('passes go test ./...', () => {
    const result = go(['test', '-count=1', './...']);
    expect(result.ok, result.output).toBe(true);
  }, 600_000);

  it.each(['linux', 'darwin', 'windows'])(
    'vets cleanly for GOOS=%s',
    (goos) => {
      const result = go(['vet', './...'], { GOOS: goos });
      expect(result.ok, result.output).toBe(true);
    },
    600_000,
  );

  it("builds the README's quick start in a module of its own, as the README says, and runs it against a fresh service", async () => {
    const readme = path.join(dir, 'README.md');
    const app = tempFolder('go-app');
    const service = await startQuickStartService();
    try {
      // The README's commands, with the checkout's real place for its /path/to/licensor.
      const commands = readmeBlock(readme, 'Install', 'sh')
        .split('\n')
        .filter((line) => line.startsWith('go '));
      expect(commands).toHaveLength(2);
      for (const command of commands) {
        const args = command
          .replace(/\s+#.*$/, '')
          .replace('/path/to/licensor', root)
          .split(' ')
          .slice(1);
        const result = go(args, {}, app);
        expect(result.ok, `${command}\n${result.output}`).toBe(true);
      }
      const goMod = readFileSync(path.join(app, 'go.mod'), 'utf8');
      for (const line of readmeBlock(readme, 'Install', '').trim().split('\n').filter(Boolean))
        expect(goMod).toContain(line.replace('/path/to/licensor', root));
      writeFileSync(path.join(app, 'main.go'), readmeBlock(readme, 'Quick start', 'go'));
      const vet = go(['vet', '.'], {}, app);
      expect(vet.ok, vet.output).toBe(true);
      await expectQuickStartVerdicts(service, app, 'go', ['run', '.'], env);
    } finally {
      await service.close();
      rmSync(app, { recursive: true, force: true });
    }
  }, 600_000);

  // A newer toolchain refuses newer language features (min, max, clear...) under `go 1.19`, but not
  // newer standard packages: those are looked for here.
  it('stays within Go 1.19: go.mod says so, and no newer standard package is used', () => {
    expect(readFileSync(path.join(dir, 'go.mod'), 'utf8')).toMatch(/^module \S+\n\ngo 1\.19\n$/);
    const newer = /"(slices|maps|log\/slog|cmp|iter|unique|weak)"|\berrors\.Join\(/;
    const sources = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.go') && !file.startsWith('.build'));
    const offenders = sources.filter((file) => newer.test(readFileSync(path.join(dir, file), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
