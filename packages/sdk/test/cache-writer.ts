// Run by cache.test.ts as a separate process: `tsx cache-writer.ts <root> <name> <times>`.
// Each time it adds one to the shared licence's counter (kept in newestIat) and records its own
// latest count in its own licence, so a lost update shows as a missing count.
import { fileCache } from '../src/cache.js';

const [root, name, times] = process.argv.slice(2) as [string, string, string];
const cache = fileCache(root);
const shared = { slug: 'acme', productKey: 'cad', lid: 'shared' };
for (let i = 1; i <= Number(times); i++) {
  await cache.update(shared, (state) => ({ ...state, newestIat: (state.newestIat ?? 0) + 1 }));
  await cache.update({ ...shared, lid: name }, (state) => ({ ...state, offsetMs: i }));
}
