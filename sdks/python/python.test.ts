// Runs the Python SDK's own tests (pytest on Debian's /usr/bin/python3, never the first python3 on
// PATH) inside `npm test`, then installs it as its README says (a wheel built with Debian's tools,
// into a fresh virtual environment) and runs the README's quick start against a fresh service.
// Skipped with the reason when that interpreter lacks cryptography, pytest or venv, unless
// LICENSOR_REQUIRE_SDKS=1 (CI), when it fails instead.
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { expectQuickStartVerdicts, readmeBlock, startQuickStartService, succeed, tempFolder } from '../quick-start.js';

const here = import.meta.dirname;
const PYTHON = '/usr/bin/python3';
const REQUIRE = process.env.LICENSOR_REQUIRE_SDKS === '1';

function missing(): string | null {
  const probe = spawnSync(PYTHON, ['-c', 'import cryptography, pytest, ensurepip, setuptools, wheel, pip'], { encoding: 'utf8' });
  if (probe.error) return `${PYTHON} is not installed`;
  if (probe.status !== 0)
    return `${PYTHON} lacks cryptography, pytest, venv or pip (apt-get install python3-cryptography python3-pytest python3-venv python3-pip)`;
  return null;
}

const reason = missing();

if (reason !== null && !REQUIRE) {
  console.warn(`python.test.ts: skipped: ${reason}`);
  it.skip(`the Python SDK's tests: ${reason}`, () => {});
} else {
  it("the Python SDK's tests pass (pytest)", () => {
    expect(reason, 'LICENSOR_REQUIRE_SDKS=1 and the Python toolchain is missing').toBeNull();
    const run = spawnSync(PYTHON, ['-m', 'pytest', '-q'], {
      cwd: here,
      encoding: 'utf8',
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONPATH: path.join(here, 'src') },
      timeout: 600_000,
    });
    const output = `${run.stdout ?? ''}${run.stderr ?? ''}`;
    // Exit code 5 is "no tests collected": that is a failure too, never a pass.
    expect(run.status, output).toBe(0);
    expect(output, 'pytest reports passed tests').toMatch(/\d+ passed/);
  }, 600_000);

  it("installs as its README says (a wheel, a fresh venv) and runs the README's quick start against a fresh service", async () => {
    const sources = tempFolder('python-sdk');
    const app = tempFolder('python-app');
    const service = await startQuickStartService();
    try {
      // A copy of the checkout's sdks/python: a build in place would leave build/ behind, and an old build/ would leak into the wheel.
      for (const entry of ['pyproject.toml', 'README.md', 'src']) cpSync(path.join(here, entry), path.join(sources, entry), { recursive: true });
      const [build, venv, install] = readmeBlock(path.join(here, 'README.md'), 'Install', 'sh')
        .split('\n')
        .filter((line) => line.startsWith('python3 ') || line.startsWith('venv/'));
      expect([build, venv, install]).toEqual([
        'python3 -m pip wheel --no-deps --no-build-isolation --wheel-dir dist .',
        'python3 -m venv --system-site-packages venv',
        'venv/bin/python -m pip install --no-index dist/licensor-0.1.0-py3-none-any.whl',
      ]);
      const clean = { PYTHONPATH: '', PIP_NO_INPUT: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' };
      // python3 in the README is Debian's interpreter: named in full, as the PATH may hold another.
      await succeed(PYTHON, build!.split(' ').slice(1), sources, clean);
      expect(readdirSync(path.join(sources, 'dist'))).toEqual(['licensor-0.1.0-py3-none-any.whl']);
      cpSync(path.join(sources, 'dist'), path.join(app, 'dist'), { recursive: true });
      await succeed(PYTHON, venv!.split(' ').slice(1), app, clean);
      await succeed(path.join(app, 'venv/bin/python'), install!.split(' ').slice(1), app, clean);
      writeFileSync(path.join(app, 'quick_start.py'), readmeBlock(path.join(here, 'README.md'), 'Quick start', 'python'));
      // The SDK comes from the venv alone: not from this checkout, whatever the current folder.
      const where = await succeed(path.join(app, 'venv/bin/python'), ['-c', 'import licensor; print(licensor.__file__)'], app, clean);
      expect(where).toContain(path.join(app, 'venv'));
      await expectQuickStartVerdicts(service, app, path.join(app, 'venv/bin/python'), ['quick_start.py']);
    } finally {
      await service.close();
      for (const folder of [sources, app]) rmSync(folder, { recursive: true, force: true });
    }
  }, 300_000);
}
