import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');

/** The folders under src/ that the files of `folder` import from (static and dynamic imports, types included). */
function importsOf(folder: string): Array<{ file: string; target: string }> {
  const found: Array<{ file: string; target: string }> = [];
  for (const file of readdirSync(path.join(SRC, folder), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(path.join(SRC, folder, file), 'utf8');
    for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const resolved = path.relative(SRC, path.resolve(SRC, folder, path.dirname(file), match[1]!));
      found.push({ file: `${folder}/${file}`, target: resolved.split(path.sep)[0]! });
    }
  }
  return found;
}

describe('layers', () => {
  // The control plane builds on sign-in and credentials; an import back would make the two one tangle.
  it('has no import cycle between auth/ and platform/', () => {
    const up = importsOf('auth').filter((i) => i.target === 'platform');
    const down = importsOf('platform').filter((i) => i.target === 'auth');
    expect(up.length > 0 && down.length > 0 ? [...up, ...down] : []).toEqual([]);
  });
});
