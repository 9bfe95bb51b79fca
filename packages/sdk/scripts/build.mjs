// Builds the SDK as one self-contained package (issue 46): dist/index.js, an ES module with the
// protocol code (packages/protocol) bundled in by esbuild, and dist/index.d.ts, its declarations
// with the protocol's types inlined by dts-bundle-generator. So `npm pack` here gives a tarball
// that installs alone, with nothing to fetch; Node's built-ins stay imports.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { generateDtsBundle } from 'dts-bundle-generator';

const here = path.resolve(import.meta.dirname, '..');
const entry = path.join(here, 'src/index.ts');

await build({
  entryPoints: [entry],
  outfile: path.join(here, 'dist/index.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  // The protocol's source, never a stale build of it.
  alias: { '@licensor/protocol': path.join(here, '../protocol/src/index.ts') },
  logLevel: 'warning',
});

const [declarations] = generateDtsBundle([{ filePath: entry, libraries: { inlinedLibraries: ['@licensor/protocol'] }, output: { noBanner: true } }], {
  preferredConfigPath: path.join(here, 'tsconfig.json'),
});
writeFileSync(path.join(here, 'dist/index.d.ts'), declarations);
