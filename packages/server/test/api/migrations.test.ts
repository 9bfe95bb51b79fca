// Upgrades: what a migration does to rows that exist when it runs.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, sqliteFileIn, type Database } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrations/index.js';
import { countUncounted } from '../../src/listings/repos/tallies.js';
import { insertOldOrganisation } from '../backup-helpers.js';
import { backend, freshDatabaseEnv } from '../harness.js';

const DAY = 86_400_000;
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
    const org = await insertOldOrganisation(database, 'upgraded', 'Upgraded');
    const now = Date.now();
    await database.db
      .insertInto('products')
      .values({
        org_id: org.id,
        product_key: 'old',
        name: 'Old Product',
        description: null,
        active: 1,
        algorithm: 'ED25519',
        key_origin: 'managed',
        certificate_type: 'NONE',
        licence_type: 'OFFLINE',
        allowed_licence_types: 'OFFLINE',
        check_id: 'oldcheckid0000000',
        check_token_hash: null,
        check_rotated_at: null,
        licence_fetch_enabled: 0,
        check_interval_seconds: 86_400,
        max_offline_seconds: 604_800,
        fingerprint_need: 3,
        max_machines: 7,
        default_validity_months: 12,
        default_grace_days: 0,
        params: '[]',
        created_at: now,
        created_by: 'cli',
        updated_at: now,
        version: 1,
      } as never)
      .execute();

    const applied = await migrateToLatest(database, '0008_token_keys');
    expect(applied).toContain('0006_seat_self_service');
    const old = await database.db.selectFrom('products').select('self_release_limit').where('product_key', '=', 'old').executeTakeFirstOrThrow();
    expect(old.self_release_limit).toBe(0);
  });

  it('counts the licences that existed before the kept totals, and judges the status of each, before serving', async () => {
    const org = await database.db.selectFrom('organisations').select('id').where('slug', '=', 'upgraded').executeTakeFirstOrThrow();
    const product = await database.db.selectFrom('products').select('id').where('product_key', '=', 'old').executeTakeFirstOrThrow();
    const now = Date.now();
    const key = await database.db
      .insertInto('product_keys')
      .values({
        org_id: org.id,
        product_id: product.id,
        algorithm: 'ED25519',
        public_key_pem: 'x',
        sealed_private_key: 'x',
        key_fingerprint: 'x',
        created_at: now,
      } as never)
      .returning('id')
      .executeTakeFirstOrThrow();
    // ACTIVE, GRACE (expired yesterday, five days of grace), EXPIRED, REVOKED, and ACTIVE but archived.
    const terms = [
      { expires: now + 30 * DAY, grace: 0, revoked: 0, archived: 0 },
      { expires: now - DAY, grace: 5, revoked: 0, archived: 0 },
      { expires: now - 30 * DAY, grace: 5, revoked: 0, archived: 0 },
      { expires: now + 30 * DAY, grace: 0, revoked: 1, archived: 0 },
      { expires: now + 30 * DAY, grace: 0, revoked: 0, archived: 1 },
    ];
    for (const [i, term] of terms.entries()) {
      await database.db
        .insertInto('licences')
        .values({
          org_id: org.id,
          lid: `LIC-OLD-${i}`,
          product_id: product.id,
          customer_id: null,
          licensee: `Old ${i}`,
          licensee_email: null,
          licence_type: 'OFFLINE',
          activation: null,
          issued_at: now - 400 * DAY,
          starts_at: null,
          expires_at: term.expires,
          grace_days: term.grace,
          grace_ends_at: term.expires + term.grace * DAY,
          max_machines: 1,
          check_every_seconds: null,
          check_max_seconds: null,
          params: '{}',
          licence_string: 'x',
          key_id: key.id,
          term_version: 0,
          revoked: term.revoked,
          revoked_at: null,
          revoked_reason: null,
          archived: term.archived,
          archived_at: null,
          issued_by: 'old',
          last_checked_at: null,
          renewed_at: null,
          rebind_count: 0,
          notes: null,
          search_text: `old ${i}`,
        } as never)
        .execute();
    }

    expect(await migrateToLatest(database)).toContain('0009_licence_tallies');
    await countUncounted(database);
    const ranks = await database.db.selectFrom('licences').select(['lid', 'status_rank']).where('org_id', '=', org.id).orderBy('lid').execute();
    // PENDING, ACTIVE, GRACE, EXPIRED, REVOKED are ranks 0 to 4.
    expect(ranks.map((r) => r.status_rank)).toEqual([1, 2, 3, 4, 1]);
    const tallies = await database.db
      .selectFrom('licence_tallies')
      .select(['archived', 'status', 'n'])
      .where('org_id', '=', org.id)
      .where('n', '>', 0)
      .execute();
    expect(tallies.map((t) => [t.archived, t.status, Number(t.n)]).sort()).toEqual(
      [
        [0, 'ACTIVE', 1],
        [0, 'EXPIRED', 1],
        [0, 'GRACE', 1],
        [0, 'REVOKED', 1],
        [1, 'ACTIVE', 1],
      ].sort(),
    );
  });

  it('keeps products and licences that existed before floating licences node-locked (DESIGN.md 13)', async () => {
    const product = await database.db.selectFrom('products').selectAll().where('product_key', '=', 'old').executeTakeFirstOrThrow();
    expect(product).toMatchObject({ seat_model: 'NODE_LOCKED', lease_seconds: 900, max_borrow_seconds: 0, max_borrowed_seats: 7 });
    const models = await database.db.selectFrom('licences').select('seat_model').where('product_id', '=', product.id).execute();
    expect(models.length).toBeGreaterThan(0);
    expect(new Set(models.map((m) => m.seat_model))).toEqual(new Set(['NODE_LOCKED']));
  });

  // Several deployments (or test runs) share one PostgreSQL database in schemas of their own:
  // migrating one must not trip over another's schema being dropped at that moment.
  it.runIf(backend === 'postgres')('migrates while other schemas of the database are dropped', async () => {
    const others = Array.from({ length: 30 }, (_, i) => `gone_${process.pid}_${i}`);
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    try {
      for (const name of others) await admin.query(`create schema ${name}; create table ${name}.t (a int primary key)`);
      let dropped = false;
      const dropping = (async () => {
        for (const name of others) await admin.query(`drop schema ${name} cascade`);
        dropped = true;
      })();
      let rounds = 0;
      while (!dropped || rounds < 5) {
        expect(await migrateToLatest(database)).toEqual([]);
        rounds++;
      }
      await dropping;
    } finally {
      await admin.query(`drop schema if exists ${others.join(', ')} cascade`);
      await admin.end();
    }
  });
});
