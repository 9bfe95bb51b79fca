import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// semver is npm's own range logic (a root devDependency); its types are not installed.
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean;
  minVersion(range: string): { version: string } | null;
};

const ROOT = path.resolve(import.meta.dirname, '../../../..');
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string; engines?: { node?: unknown } };

/** Every package.json under a node_modules folder, nested node_modules and scopes included (workspace links skipped). */
function installedPackages(folder: string, found: string[] = []): string[] {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const dir = path.join(folder, entry.name);
    if (entry.name.startsWith('@')) {
      installedPackages(dir, found);
      continue;
    }
    if (existsSync(path.join(dir, 'package.json'))) found.push(path.join(dir, 'package.json'));
    if (existsSync(path.join(dir, 'node_modules'))) installedPackages(path.join(dir, 'node_modules'), found);
  }
  return found;
}

describe('installed packages', () => {
  // npm install warns EBADENGINE for a package that excludes the running Node.js; the README
  // promises the oldest version package.json's engines allow, so every package must accept it.
  it('all run on the oldest Node.js the project claims', () => {
    const claimed = readJson(path.join(ROOT, 'package.json')).engines?.node;
    expect(claimed).toEqual(expect.any(String));
    const oldest = semver.minVersion(claimed as string)!.version;
    expect(oldest).toMatch(/^20\./);
    const folders = [path.join(ROOT, 'node_modules'), ...readdirSync(path.join(ROOT, 'packages')).map((p) => path.join(ROOT, 'packages', p, 'node_modules'))];
    const packages = folders.filter((f) => existsSync(f)).flatMap((f) => installedPackages(f));
    expect(packages.length).toBeGreaterThan(200);
    const excluding = packages
      .map((file) => ({ file, json: readJson(file) }))
      .filter(({ json }) => typeof json.engines?.node === 'string' && !semver.satisfies(oldest, json.engines.node))
      .map(({ file, json }) => `${path.relative(ROOT, path.dirname(file))}@${json.version} needs node ${json.engines!.node as string}`);
    expect(excluding).toEqual([]);
  });
});
