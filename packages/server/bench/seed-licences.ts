/** Seeds one organisation (`default`) with LICENCES licences by bulk insert, for the listing benchmark. */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, sqliteFileIn } from '../src/db/database.js';
import { statusOf } from '../src/listings/repos/views.js';
import { searchText } from '../src/listings/repos/search.js';
import { STATUSES } from '../src/listings/filter.js';
import { bootstrap } from '../src/orgs/service.js';

const DAY = 86_400_000;
const YEAR = 365 * DAY;

export async function seedLicences(env: Record<string, string>, total: number) {
  const config = loadConfig(env);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) });
  await bootstrap(database, config);
  const app = await buildApp({ config, database, masterKey: config.masterKey!, logger: false });
  const login = await app.inject({ method: 'POST', url: '/o/default/api/auth/login', payload: { username: 'admin', password: 'bench admin password' } });
  const cookie = `svc_session=${login.cookies.find((c) => c.name === 'svc_session')!.value}`;
  const products = [];
  for (const [key, name] of [
    ['desk', 'Desk Studio'],
    ['cloud', 'Cloud Sync'],
    ['mobile', 'Mobile Kit'],
  ]) {
    const created = await app.inject({
      method: 'POST',
      url: '/o/default/api/products',
      headers: { cookie },
      payload: { productKey: key, name, allowedLicenceTypes: ['OFFLINE', 'ONLINE', 'HYBRID'] },
    });
    products.push(created.json() as { id: number });
  }
  const org = await database.db.selectFrom('organisations').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
  const keys = await database.db.selectFrom('product_keys').select(['id', 'product_id']).execute();
  const keyOf = new Map(keys.map((k) => [k.product_id, k.id]));
  const now = Date.now();
  const started = performance.now();
  const batch = database.dialect === 'postgres' ? 2000 : 1000;
  for (let i = 0; i < total; i += batch) {
    const rows = [];
    const checkedAt = new Map<string, number | null>();
    for (let j = i; j < Math.min(total, i + batch); j++) {
      const product = products[j % 3]!;
      const issuedAt = now - Math.floor((((j * 7919) % total) / total) * 3 * YEAR);
      const perpetual = j % 20 === 0;
      const expiresAt = perpetual ? null : issuedAt + YEAR;
      const grace = j % 4 === 0 ? 14 : 0;
      const lid = randomUUID();
      const licensee = `Customer ${j % 50_000}`;
      const email = `customer${j % 50_000}@example.com`;
      const notes = j % 10 === 0 ? `renewal call ${j}` : null;
      checkedAt.set(lid, j % 3 !== 0 && j % 5 !== 0 ? now - (j % 1000) * 60_000 : null);
      rows.push({
        org_id: org.id,
        lid,
        product_id: product.id,
        customer_id: null,
        licensee,
        licensee_email: email,
        licence_type: ['OFFLINE', 'ONLINE', 'HYBRID'][j % 3]!,
        activation: j % 3 === 2 ? 'ONLINE' : null,
        issued_at: issuedAt,
        starts_at: null,
        expires_at: expiresAt,
        grace_days: grace,
        grace_ends_at: expiresAt === null ? null : expiresAt + grace * DAY,
        max_machines: 1,
        check_every_seconds: j % 3 === 0 ? null : 86_400,
        check_max_seconds: j % 3 === 0 ? null : 604_800,
        params: '{}',
        licence_string: `bench.${lid}`,
        key_id: keyOf.get(product.id)!,
        term_version: 0,
        revoked: j % 33 === 0 ? 1 : 0,
        revoked_at: j % 33 === 0 ? now : null,
        revoked_reason: null,
        archived: j % 50 === 0 && j % 33 === 0 ? 1 : 0,
        archived_at: null,
        issued_by: 'bench',
        renewed_at: null,
        rebind_count: 0,
        notes,
        search_text: searchText({ licensee, email, lid, notes }),
      });
    }
    const ids = await database.db
      .insertInto('licences')
      .values(rows.map((row) => ({ ...row, status_rank: STATUSES.indexOf(statusOf(row, now)) })))
      .returning(['id', 'lid', 'archived'])
      .execute();
    const stamps = ids.map(({ id, lid, archived }) => ({ licence_id: id, org_id: org.id, archived, lid, last_checked_at: checkedAt.get(lid)! }));
    await database.db.insertInto('licence_stamps').values(stamps).execute();
  }
  // The first listing counts the organisation once and judges each licence's status (as upgrading
  // a deployment does); a running deployment has done so long before.
  await app.inject({ method: 'GET', url: '/o/default/api/licenses/windows', headers: { cookie } });
  const seconds = (performance.now() - started) / 1000;
  // Fresh statistics (and on PostgreSQL a visibility map, for index-only scans), as autovacuum
  // would give a running deployment after a bulk load.
  await sql`${sql.raw(database.dialect === 'postgres' ? 'vacuum analyze' : 'analyze')}`.execute(database.db);
  await app.close();
  await database.close();
  return seconds;
}
