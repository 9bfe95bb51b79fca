import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { openDatabase, sqliteFileIn, type Database } from '../../src/db/database.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { backend, startHarness, type Harness } from '../harness.js';

let h: Harness;
/** A second instance: its own app and its own connection pool on the same database. */
let second: { app: FastifyInstance; database: Database } | null = null;
let token: string;

beforeAll(async () => {
  h = await startHarness();
  token = await h.createToken(['releases:write', 'products:write']);
  if (backend === 'postgres') {
    const database = await openDatabase({ databaseUrl: h.config.databaseUrl, sqliteFile: sqliteFileIn(h.config.dataDir) });
    second = { app: await buildApp({ config: h.config, database, masterKey: loadMasterKey(h.config, () => {}) }), database };
    await second.app.ready();
  }
});
afterAll(async () => {
  if (second) {
    await second.app.close();
    await second.database.close();
  }
  await h?.close();
});

const apps = () => [h.app, ...(second ? [second.app] : [])];
const send = (i: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const list = apps();
  return h.request(method, `/o/${h.slug}/api${path}`, {
    app: list[i % list.length]!,
    ...(body === undefined ? {} : { body }),
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
};
const parallel = <T>(n: number, run: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => run(i)));
const statuses = (answers: Array<{ statusCode: number }>) => answers.map((a) => a.statusCode).sort((a, b) => a - b);

describe(`releases under concurrency (${backend === 'postgres' ? 'two instances on one PostgreSQL' : 'one SQLite instance'})`, () => {
  it('makes one release of a version, one artifact of a filename, and publishes once', async () => {
    const product = (await send(0, 'POST', '/products', { productKey: 'raced', name: 'Raced' })).data;
    const creates = await parallel(10, (i) => send(i, 'POST', `/products/${product.id}/releases`, { version: '1.0.0' }));
    expect(statuses(creates)).toEqual([201, ...Array(9).fill(409)]);
    const releaseId = creates.find((c) => c.statusCode === 201)!.data.id;

    const uploads = await parallel(8, (i) =>
      send(i, 'POST', `/releases/${releaseId}/artifacts?filename=app.bin&platform=any&arch=any`, `bytes ${i}`, { 'content-type': 'application/octet-stream' }),
    );
    expect(statuses(uploads)).toEqual([201, ...Array(7).fill(409)]);
    const rows = await h.database.db.selectFrom('artifacts').select('storage_key').where('release_id', '=', releaseId).execute();
    expect(rows).toHaveLength(1);

    const publishes = await parallel(8, (i) => send(i, 'POST', `/releases/${releaseId}/publish`, {}));
    expect(statuses(publishes)).toEqual([200, ...Array(7).fill(409)]);
    const audits = await h.database.db.selectFrom('audit_entries').select('id').where('action', '=', 'release.published').execute();
    expect(audits).toHaveLength(1);
  });
});
