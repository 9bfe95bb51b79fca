// Upgrades: what a migration does to rows that exist when it runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, sqliteFileIn, type Database } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrations/index.js';
import { createOrganisation } from '../../src/orgs/service.js';
import { freshDatabaseEnv } from '../harness.js';

let database: Database;
let dispose: () => Promise<void>;

beforeAll(async () => {
  const fresh = await freshDatabaseEnv();
  dispose = fresh.dispose;
  const config = loadConfig(fresh.env);
  database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) }, { migrate: false });
});
afterAll(async () => {
  await database?.close();
  await dispose?.();
});

describe('upgrading a deployment', () => {
  it('turns self-service release off for products that existed before it (DESIGN.md 12)', async () => {
    await migrateToLatest(database, '0005_control_plane');
    const org = await createOrganisation(database, { slug: 'upgraded', name: 'Upgraded', planLimit: null });
    const now = Date.now();
    await database.db
      .insertInto('products')
      .values({
        org_id: org.id, product_key: 'old', name: 'Old Product', description: null, active: 1, algorithm: 'ED25519', key_origin: 'managed',
        certificate_type: 'NONE', licence_type: 'OFFLINE', allowed_licence_types: 'OFFLINE', check_id: 'oldcheckid0000000', check_token_hash: null,
        check_rotated_at: null, licence_fetch_enabled: 0, check_interval_seconds: 86_400, max_offline_seconds: 604_800, fingerprint_need: 3,
        max_machines: 1, default_validity_months: 12, default_grace_days: 0, params: '[]', created_at: now, created_by: 'cli', updated_at: now, version: 1,
      } as never)
      .execute();

    const applied = await migrateToLatest(database);
    expect(applied).toContain('0006_seat_self_service');
    const old = await database.db.selectFrom('products').select('self_release_limit').where('product_key', '=', 'old').executeTakeFirstOrThrow();
    expect(old.self_release_limit).toBe(0);
  });
});
