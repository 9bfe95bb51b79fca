// Run by store.test.ts as a separate process: `tsx store-writer.ts <root> <name> <times>`.
// Each time it adds one to the shared licence's counter (kept in newestIat) and records its own
// latest count in its own licence, so a lost update shows as a missing count.
import { fileStore } from '../src/store.js';

const [root, name, times] = process.argv.slice(2) as [string, string, string];
const store = fileStore(root);
const shared = { slug: 'acme', productKey: 'cad', lid: 'shared' };
for (let i = 1; i <= Number(times); i++) {
  await store.update(shared, (state) => ({ ...state, newestIat: (state.newestIat ?? 0) + 1 }));
  await store.update({ ...shared, lid: name }, (state) => ({ ...state, offsetMs: i }));
}
