// Runs the Python SDK's own tests (pytest on Debian's /usr/bin/python3, never the first python3 on
// PATH) inside `npm test`. Skipped with the reason when that interpreter lacks cryptography or
// pytest, unless LICENSOR_REQUIRE_SDKS=1 (CI), when it fails instead.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';

const here = import.meta.dirname;
const PYTHON = '/usr/bin/python3';
const REQUIRE = process.env.LICENSOR_REQUIRE_SDKS === '1';

function missing(): string | null {
  const probe = spawnSync(PYTHON, ['-c', 'import cryptography, pytest'], { encoding: 'utf8' });
  if (probe.error) return `${PYTHON} is not installed`;
  if (probe.status !== 0) return `${PYTHON} lacks cryptography or pytest (apt-get install python3-cryptography python3-pytest)`;
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
}
