// DESIGN.md 17: every migration run from the schema before it, over representative rows of every table that schema has.
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hashPassword } from '../../src/core/passwords.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { MIGRATION_NAMES, migrateToLatest } from '../../src/db/migrations/index.js';
import { countUncounted } from '../../src/listings/repos/tallies.js';
import { openEnv } from '../backup-helpers.js';
import { freshDatabaseEnv } from '../harness.js';

const DAY = 86_400_000;
const NOW = Date.now();
const PASSWORD = 'a password from before';

let database: Database;
let env: Record<string, string>;
let dispose: () => Promise<void>;
/** Every row written so far, by table, as written: each migration must leave them as they were. */
const written = new Map<string, Array<Record<string, unknown> & { id?: number }>>();
const ids: Record<string, number> = {};

async function insert(table: string, row: Record<string, unknown>, name?: string): Promise<void> {
  const db = database.db as unknown as import('kysely').Kysely<any>;
  const hasId = ![
    'sessions',
    'api_tokens',
    'check_counts',
    'platform_sessions',
    'portal_sessions',
    'webauthn_challenges',
    'licence_lease_peaks',
    'usage_counts',
  ].includes(table);
  const query = db.insertInto(table).values(row);
  const id = hasId ? Number((await query.returning('id').executeTakeFirstOrThrow()).id) : await query.execute().then(() => undefined);
  if (name && id !== undefined) ids[name] = id;
  written.set(table, [...(written.get(table) ?? []), { ...row, ...(id === undefined ? {} : { id }) }]);
}

/** Each migration: rows for the tables of the schema before it, then what it must have done to rows that existed. */
const STEPS: Record<string, { rows?: () => Promise<void>; check?: () => Promise<void> }> = {
  '0001_foundation': {},
  '0002_products': {
    async rows() {
      await insert(
        'organisations',
        {
          slug: 'old',
          name: 'Old Org',
          plan_limit: 100,
          timezone: 'Europe/Paris',
          settings_updated_at: NOW,
          settings_updated_by: 'admin',
          created_at: NOW - 400 * DAY,
        },
        'org',
      );
      await insert(
        'users',
        {
          org_id: ids.org,
          username: 'admin',
          display_name: 'Admin',
          email: 'a@old.example',
          role: 'ORG_ADMIN',
          active: 1,
          password_hash: await hashPassword(PASSWORD),
          created_at: NOW,
          created_by: 'cli',
          last_login_at: NOW,
        },
        'user',
      );
      await insert('sessions', { id: 'f'.repeat(64), org_id: ids.org, user_id: ids.user, created_at: NOW, last_seen_at: NOW, expires_at: NOW + DAY });
      await insert('api_tokens', {
        id: 'tok1',
        org_id: ids.org,
        name: 'ci',
        scopes: 'licenses:read',
        secret_hash: 'e'.repeat(64),
        created_at: NOW,
        created_by: 'admin',
        expires_at: null,
        last_used_at: null,
        revoked_at: null,
      });
      await insert('login_failures', { org_id: ids.org, username: 'admin', address: '10.0.0.1', at: NOW });
      await insert('audit_entries', {
        org_id: ids.org,
        at: NOW,
        actor: 'admin',
        action: 'member.created',
        subject_type: 'user',
        subject_id: String(ids.user),
        lid: null,
        summary: 'Created admin',
        details: '{}',
      });
    },
  },
  '0003_licences': {
    async rows() {
      await insert(
        'products',
        {
          org_id: ids.org,
          product_key: 'old',
          name: 'Old Product',
          description: 'from before',
          active: 1,
          algorithm: 'ED25519',
          key_origin: 'managed',
          certificate_type: 'NONE',
          licence_type: 'ONLINE',
          allowed_licence_types: 'OFFLINE,ONLINE',
          check_id: 'oldcheckid0000000',
          check_token_hash: null,
          check_rotated_at: null,
          licence_fetch_enabled: 1,
          check_interval_seconds: 86_400,
          max_offline_seconds: 604_800,
          fingerprint_need: 3,
          max_machines: 2,
          default_validity_months: 12,
          default_grace_days: 5,
          params: '[]',
          created_at: NOW,
          created_by: 'admin',
          updated_at: NOW,
          version: 3,
        },
        'product',
      );
      await insert(
        'product_keys',
        {
          org_id: ids.org,
          product_id: ids.product,
          algorithm: 'ED25519',
          public_key_pem: 'pem',
          sealed_private_key: 'sealed',
          key_fingerprint: 'fp',
          certificate_pem: null,
          certificate_subject: null,
          certificate_expires_at: null,
          created_at: NOW,
          retired_at: null,
        },
        'key',
      );
      await insert(
        'customers',
        { org_id: ids.org, name: 'Ada Ltd', email: 'Ops@Ada.example', email_lower: 'ops@ada.example', notes: null, created_at: NOW, created_by: 'admin' },
        'customer',
      );
    },
  },
  '0004_console_amendments': {
    async rows() {
      // ACTIVE, GRACE, EXPIRED, REVOKED, and ACTIVE but archived: the statuses 0009 judges.
      const terms = [
        { expires: NOW + 30 * DAY, grace: 0, revoked: 0, archived: 0 },
        { expires: NOW - DAY, grace: 5, revoked: 0, archived: 0 },
        { expires: NOW - 30 * DAY, grace: 5, revoked: 0, archived: 0 },
        { expires: NOW + 30 * DAY, grace: 0, revoked: 1, archived: 0 },
        { expires: NOW + 30 * DAY, grace: 0, revoked: 0, archived: 1 },
      ];
      for (const [i, term] of terms.entries()) {
        await insert(
          'licences',
          {
            org_id: ids.org,
            lid: `LIC-OLD-${i}`,
            product_id: ids.product,
            customer_id: ids.customer,
            licensee: `Zeta Licensee ${i}`,
            licensee_email: null,
            licence_type: 'ONLINE',
            activation: null,
            issued_at: NOW - 400 * DAY + i,
            starts_at: null,
            expires_at: term.expires,
            grace_days: term.grace,
            grace_ends_at: term.expires + term.grace * DAY,
            max_machines: 2,
            check_every_seconds: 86_400,
            check_max_seconds: 604_800,
            params: '{}',
            licence_string: 'x',
            key_id: ids.key,
            term_version: 1,
            revoked: term.revoked,
            revoked_at: term.revoked ? NOW : null,
            revoked_reason: null,
            archived: term.archived,
            archived_at: term.archived ? NOW : null,
            issued_by: 'admin',
            last_checked_at: NOW - i,
            renewed_at: null,
            rebind_count: 0,
            notes: null,
            search_text: `zeta licensee ${i} lic-old-${i}`,
          },
          `licence${i}`,
        );
      }
      await insert('licence_versions', {
        org_id: ids.org,
        licence_id: ids.licence0,
        version_no: 1,
        issued_at: NOW - 800 * DAY,
        starts_at: null,
        expires_at: NOW - 400 * DAY,
        grace_days: 0,
        issued_by: 'admin',
        revoked_reason: null,
        licence_string: 'y',
        key_id: ids.key,
        superseded_at: NOW - 400 * DAY,
      });
      await insert(
        'machine_bindings',
        { org_id: ids.org, licence_id: ids.licence0, fingerprint: 'fp-1', parts: '{}', bound_at: NOW, released_at: null, released_by: null, at_issue: 0 },
        'binding',
      );
      await insert('idempotency_keys', { org_id: ids.org, key: 'k1', request_hash: 'h', status_code: 201, body: '{}', created_at: NOW });
      await insert('check_counts', { org_id: ids.org, bucket: Math.floor(NOW / 900_000), count: 7 });
    },
    async check() {
      const binding = await database.db
        .selectFrom('machine_bindings')
        .select(['label', 'last_seen_at'])
        .where('id', '=', ids.binding!)
        .executeTakeFirstOrThrow();
      expect(binding).toEqual({ label: null, last_seen_at: null });
    },
  },
  '0005_control_plane': {
    async check() {
      expect((await database.db.selectFrom('organisations').select('suspended').executeTakeFirstOrThrow()).suspended).toBe(0);
    },
  },
  '0006_seat_self_service': {
    async rows() {
      await insert(
        'platform_accounts',
        { username: 'ops', display_name: 'Ops', role: 'PLATFORM_ADMIN', active: 1, password_hash: 'hash', created_at: NOW, last_login_at: null },
        'account',
      );
      await insert('platform_sessions', { id: 'a'.repeat(64), account_id: ids.account, created_at: NOW, last_seen_at: NOW, expires_at: NOW + DAY });
      await insert('platform_login_failures', { username: 'ops', address: '10.0.0.2', at: NOW });
      await insert('platform_audit', { at: NOW, actor: 'ops', action: 'organisation.suspended', organisation: 'old', details: null });
    },
    async check() {
      // Self-service release stays off for products that existed before it (DESIGN.md 12).
      expect((await database.db.selectFrom('products').select('self_release_limit').executeTakeFirstOrThrow()).self_release_limit).toBe(0);
    },
  },
  '0007_passkeys': {
    async rows() {
      await insert(
        'portal_links',
        {
          org_id: ids.org,
          customer_id: ids.customer,
          code_hash: 'c'.repeat(64),
          created_at: NOW,
          created_by: 'admin',
          expires_at: NOW + DAY,
          used_at: NOW,
          revoked_at: null,
        },
        'link',
      );
      await insert('portal_sessions', {
        id: 'b'.repeat(64),
        org_id: ids.org,
        customer_id: ids.customer,
        link_id: ids.link,
        created_at: NOW,
        expires_at: NOW + DAY,
      });
    },
  },
  '0008_token_keys': {
    async rows() {
      await insert('passkeys', {
        org_id: ids.org,
        user_id: ids.user,
        credential_id: 'cred-1',
        public_key: 'pk',
        counter: 4,
        transports: '["usb"]',
        name: 'Key',
        created_at: NOW,
        last_used_at: null,
      });
      await insert('platform_passkeys', {
        account_id: ids.account,
        credential_id: 'cred-2',
        public_key: 'pk',
        counter: 0,
        transports: '[]',
        name: 'Key',
        created_at: NOW,
        last_used_at: NOW,
      });
      await insert('webauthn_challenges', { challenge: 'ch', realm: 'platform', purpose: 'login', subject: null, expires_at: NOW + 60_000 });
    },
    async check() {
      const key = await database.db.selectFrom('product_keys').select(['pkcs11_token', 'pkcs11_label', 'pkcs11_id']).executeTakeFirstOrThrow();
      expect(key).toEqual({ pkcs11_token: null, pkcs11_label: null, pkcs11_id: null });
    },
  },
  '0009_licence_tallies': {
    async check() {
      // Each licence's status is judged, and the organisation counted, on the first start after it (cli.ts prepareDatabase).
      await countUncounted(database);
      const ranks = await database.db.selectFrom('licences').select('status_rank').orderBy('lid').execute();
      expect(ranks.map((r) => r.status_rank)).toEqual([1, 2, 3, 4, 1]);
      const tallies = await database.db.selectFrom('licence_tallies').select(['archived', 'status', 'n']).where('n', '>', 0).execute();
      expect(tallies.map((t) => [t.archived, t.status, Number(t.n)]).sort()).toEqual(
        [
          [0, 'ACTIVE', 1],
          [0, 'EXPIRED', 1],
          [0, 'GRACE', 1],
          [0, 'REVOKED', 1],
          [1, 'ACTIVE', 1],
        ].sort(),
      );
    },
  },
  '0010_licence_search': {},
  '0011_licence_sorts': {},
  '0012_floating_licences': {
    async check() {
      // Products and licences made before floating licences stay node-locked (DESIGN.md 13), their bindings leases of no end.
      const seatModels = async (table: 'products' | 'licences') =>
        (await database.db.selectFrom(table).select('seat_model').execute()).map((r) => r.seat_model);
      expect(new Set([...(await seatModels('products')), ...(await seatModels('licences'))])).toEqual(new Set(['NODE_LOCKED']));
      const binding = await database.db.selectFrom('machine_bindings').select(['lease_ends_at', 'borrowed_until']).executeTakeFirstOrThrow();
      expect(binding).toEqual({ lease_ends_at: null, borrowed_until: null });
    },
  },
  '0013_air_gap_activation': {
    async rows() {
      // A floating product's day of lease peaks (a table of 0012), kept through what follows.
      await insert('licence_lease_peaks', { org_id: ids.org, licence_id: ids.licence0, day: '2026-11-01', peak: 2 });
    },
    async check() {
      // Air-gapped activation stays off for products made before it (DESIGN.md 14).
      const product = await database.db.selectFrom('products').select(['air_gap_activation', 'air_gap_activation_days']).executeTakeFirstOrThrow();
      expect([Number(product.air_gap_activation), product.air_gap_activation_days]).toEqual([0, 90]);
    },
  },
  '0014_webhooks': {
    async check() {
      // Nothing is raised for what happened before: an organisation has no endpoint yet.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      expect(await db.selectFrom('webhook_events').selectAll().execute()).toEqual([]);
      expect(await db.selectFrom('webhook_endpoints').selectAll().execute()).toEqual([]);
    },
  },
  '0015_licence_trigrams': {
    async check() {
      if (database.dialect !== 'postgres') return;
      // The same trigrams as 0010's body for every licence, so the index built with it stays valid.
      const { rows } = await sql<{ lid: string; now: string[]; before: string[] }>`select lid,
          array(select distinct t from unnest(licence_trigrams(search_text)) t order by 1) as now,
          array(select distinct substr(search_text, i, 3) from generate_series(1, length(search_text) - 2) i order by 1) as before
        from licences`.execute(database.db);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(row.now, row.lid).toEqual(row.before);
    },
  },
  '0016_licence_stamps': {
    async rows() {
      // lastCheckedAt leaves the licence row for licence_stamps, with copies of what its sort walks.
      const licences = written.get('licences')!;
      stampsBefore = licences.map((row) => ({
        licence_id: row.id,
        org_id: row.org_id,
        archived: row.archived,
        lid: row.lid,
        last_checked_at: row.last_checked_at,
      }));
      for (const row of licences) delete row.last_checked_at;
    },
    async check() {
      const db = database.db as unknown as import('kysely').Kysely<any>;
      const stamps = await db.selectFrom('licence_stamps').selectAll().orderBy('licence_id').execute();
      expect(
        stamps.map((row) => ({
          ...row,
          licence_id: Number(row.licence_id),
          org_id: Number(row.org_id),
          last_checked_at: row.last_checked_at === null ? null : Number(row.last_checked_at),
        })),
      ).toEqual(stampsBefore);
      expect(stamps.some((row) => row.archived === 1)).toBe(true);
    },
  },
  '0017_trials': {
    async check() {
      // Trials stay off for products made before them (DESIGN.md 18); no licence becomes one.
      const products = await database.db
        .selectFrom('products')
        .select(['trial_days', 'trial_params', 'trial_daily_limit', 'trial_address_daily_limit'])
        .execute();
      expect(products.map((p) => ({ ...p, trial_days: Number(p.trial_days) }))).toEqual(
        products.map(() => ({ trial_days: 0, trial_params: '{}', trial_daily_limit: null, trial_address_daily_limit: 20 })),
      );
      const licences = await database.db.selectFrom('licences').select(['trial', 'trial_started_at', 'converted_from_trial']).execute();
      expect(new Set(licences.map((l) => JSON.stringify([Number(l.trial), l.trial_started_at, l.converted_from_trial])))).toEqual(new Set(['[0,null,null]']));
    },
  },
  '0018_usage_metering': {
    async check() {
      // Products and licences made before meters have none (DESIGN.md 19): an upgrade meters nothing.
      const meters = async (table: 'products' | 'licences') => (await database.db.selectFrom(table).select('meters').execute()).map((r) => r.meters);
      expect(new Set([...(await meters('products')), ...(await meters('licences'))])).toEqual(new Set(['[]']));
    },
  },
  '0019_single_sign_on': {
    async check() {
      // Members are linked to no identity provider, and every session was opened by a password.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      expect(await db.selectFrom('users').select(['sso_sub', 'sso_linked_at', 'sso_signed_in_at']).execute()).toEqual([
        { sso_sub: null, sso_linked_at: null, sso_signed_in_at: null },
      ]);
      expect(await db.selectFrom('sessions').select(['method', 'sso_at', 'hard_end']).execute()).toEqual([
        { method: 'password', sso_at: null, hard_end: null },
      ]);
      expect(await db.selectFrom('sso_configs').selectAll().execute()).toEqual([]);
    },
  },
  '0020_releases': {
    async check() {
      // No product or licence gains a maintenance window by the upgrade (DESIGN.md 20): every release stays offered.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      const products = await db.selectFrom('products').select(['updates_months']).execute();
      expect(new Set(products.map((p) => p.updates_months))).toEqual(new Set([null]));
      const licences = await db.selectFrom('licences').select(['updates_months', 'updates_until', 'feed_generation']).execute();
      expect(new Set(licences.map((l) => JSON.stringify([l.updates_months, l.updates_until, Number(l.feed_generation)])))).toEqual(new Set(['[null,null,1]']));
      expect(await db.selectFrom('releases').selectAll().execute()).toEqual([]);
    },
  },
  '0022_mail': {
    async check() {
      // Mail stays on for every organisation (the control plane may turn it off), with the default template and no email queued.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      expect((await db.selectFrom('organisations').select('mail_enabled').execute()).map((r) => Number(r.mail_enabled))).toEqual([1]);
      expect(await db.selectFrom('mail_settings').selectAll().execute()).toEqual([]);
      expect(await db.selectFrom('emails').selectAll().execute()).toEqual([]);
    },
  },
  '0023_updates_until': {
    async rows() {
      // A perpetual licence beside the old ones, which all end.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      const old = await db.selectFrom('licences').selectAll().where('lid', '=', 'LIC-OLD-0').executeTakeFirstOrThrow();
      const { id: _, ...columns } = old;
      await insert('licences', { ...columns, lid: 'LIC-OLD-PERPETUAL', expires_at: null, grace_ends_at: null, search_text: 'perpetual' }, 'perpetual');
    },
    async check() {
      // Licences signed before update windows get their grace end, in Unix seconds as upd is; a perpetual one every release (DESIGN.md 20).
      const db = database.db as unknown as import('kysely').Kysely<any>;
      const licences = await db.selectFrom('licences').select(['lid', 'grace_ends_at', 'updates_until']).execute();
      expect(licences.length).toBeGreaterThan(2);
      for (const l of licences) {
        expect(l.updates_until === null ? null : Number(l.updates_until), l.lid).toBe(
          l.grace_ends_at === null ? null : Math.floor(Number(l.grace_ends_at) / 1000),
        );
      }
      expect(licences.find((l) => l.lid === 'LIC-OLD-PERPETUAL')!.updates_until).toBeNull();
      // Gone again, so the upgraded service's listings below hold the old licences alone.
      await db.deleteFrom('licences').where('lid', '=', 'LIC-OLD-PERPETUAL').execute();
      written.set(
        'licences',
        written.get('licences')!.filter((row) => row.lid !== 'LIC-OLD-PERPETUAL'),
      );
    },
  },
  '0024_usage_remembered': {
    async rows() {
      const base = { org_id: ids.org, licence_id: ids.licence0, period_key: '2026-11' };
      const event = { ...base, at: null, received_at: NOW, source: 'application', machine_id: null, actor: 'check', reason: null, expires_at: NOW + 60 * DAY };
      await insert('usage_counts', { ...base, meter: 'exports', used: 3 });
      await insert('usage_events', { ...event, event_id: 'e-1', meter: 'exports', amount: 1, result: 'ACCEPTED' });
      await insert('usage_events', { ...event, event_id: 'e-2', meter: 'exports', amount: 2, result: 'ACCEPTED' });
      await insert('usage_events', {
        ...event,
        event_id: null,
        meter: 'exports',
        amount: 5,
        result: 'ACCEPTED',
        source: 'operator',
        actor: 'admin',
        reason: 'credit',
      });
      await insert('usage_events', { ...event, event_id: 'e-3', meter: 'calls', amount: 9, result: 'LIMIT_REACHED' });
      // A meter and key that recorded only refusals gets a count row at 0 used, to keep its ids.
      written.get('usage_counts')!.push({ ...base, meter: 'calls', used: 0 });
    },
    async check() {
      // The ids each count row remembers, an adjustment (no id) none (DESIGN.md 19).
      const db = database.db as unknown as import('kysely').Kysely<any>;
      const counts = await db.selectFrom('usage_counts').select(['meter', 'used', 'ids']).orderBy('meter').execute();
      expect(counts.map((c) => [c.meter, Number(c.used), Number(c.ids)])).toEqual([
        ['calls', 0, 1],
        ['exports', 3, 2],
      ]);
    },
  },
  '0025_integrations': {
    async check() {
      // DESIGN.md 22: the connections and their ledger, links, applied lines, payments, revocations and Paddle customers, empty.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      for (const table of [
        'integrations',
        'integration_events',
        'integration_links',
        'integration_lines',
        'integration_payments',
        'integration_revocations',
        'paddle_customers',
      ]) {
        expect(await db.selectFrom(table).selectAll().execute(), table).toEqual([]);
      }
    },
  },
  '0026_webhook_covers': {
    async rows() {
      const endpoint = {
        org_id: ids.org,
        url: 'https://hooks.example/old',
        description: null,
        enabled: 1,
        disabled_reason: null,
        secret: 'sealed-v1$unused',
        previous_secret: null,
        previous_until: null,
        created_at: NOW - DAY,
        created_by: 'admin',
        updated_at: NOW - DAY,
        last_delivery_at: null,
        last_status: null,
        failing_since: null,
      };
      await insert('webhook_endpoints', { ...endpoint, events: '["*"]' }, 'starEndpoint');
      await insert('webhook_endpoints', { ...endpoint, events: '["licence.issued"]' }, 'listEndpoint');
    },
    async check() {
      // DESIGN.md 15: a `*` saved before keeps the catalogue of its time, which needed every read scope; a list keeps none.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      const rows = await db.selectFrom('webhook_endpoints').select(['id', 'covers']).orderBy('id').execute();
      const star = JSON.parse(rows.find((r) => Number(r.id) === ids.starEndpoint)!.covers) as string[];
      expect(star).toHaveLength(26);
      expect(star).toEqual(expect.arrayContaining(['licence.issued', 'usage.threshold', 'release.published']));
      expect(star).not.toContain('integration.failed');
      expect(rows.find((r) => Number(r.id) === ids.listEndpoint)!.covers).toBeNull();
      // Gone again: the upgraded service below has no endpoint to send to.
      await db.deleteFrom('webhook_endpoints').execute();
      written.delete('webhook_endpoints');
    },
  },
  '0027_usage_events_unchecked': {
    async check() {
      // The events kept their rows (above) and their ids: a new one numbers after them, and no key is checked on insert.
      const db = database.db as unknown as import('kysely').Kysely<any>;
      const before = Math.max(...written.get('usage_events')!.map((row) => row.id!));
      const event = { org_id: ids.org, licence_id: ids.licence0, event_id: 'e-4', meter: 'exports', amount: 1, at: null, received_at: NOW, result: 'ACCEPTED' };
      await insert(
        'usage_events',
        { ...event, period_key: '2026-12', source: 'application', machine_id: null, actor: 'check', reason: null, expires_at: NOW + DAY },
        'event4',
      );
      expect(ids.event4).toBeGreaterThan(before);
      const keys =
        database.dialect === 'postgres'
          ? await sql`select conname from pg_constraint where conrelid = 'usage_events'::regclass and contype = 'f'`.execute(db)
          : await sql`select * from pragma_foreign_key_list('usage_events')`.execute(db);
      expect(keys.rows).toEqual([]);
    },
  },
};
let stampsBefore: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  const fresh = await freshDatabaseEnv();
  env = fresh.env;
  dispose = fresh.dispose;
  database = await openEnv(env);
});
afterAll(async () => {
  await database?.close();
  await dispose?.();
});

it('names a step for every migration, so a new one is tested from the schema before it', () => {
  expect(Object.keys(STEPS)).toEqual(MIGRATION_NAMES);
});

it('runs every migration over the rows of the schema before it, leaving each row as it was', async () => {
  for (const [name, step] of Object.entries(STEPS)) {
    await step.rows?.();
    expect(await migrateToLatest(database, name)).toEqual([name]);
    for (const [table, rows] of written) {
      const columns = Object.keys(rows[0]!);
      const stored = await (database.db as unknown as import('kysely').Kysely<any>).selectFrom(table).select(columns).execute();
      expect(stored.map((row) => JSON.stringify(row)).sort(), `${table} after ${name}`).toEqual(
        rows.map((row) => JSON.stringify(Object.fromEntries(columns.map((c) => [c, row[c]])))).sort(),
      );
    }
    await step.check?.();
  }
});

it('serves the upgraded database: the old member signs in, and the old licences are found, searched and sorted', async () => {
  const config = loadConfig(env);
  const app = await buildApp({ config, database, masterKey: config.masterKey! });
  try {
    const login = await app.inject({ method: 'POST', url: '/o/old/api/auth/login', payload: { username: 'admin', password: PASSWORD } });
    expect(login.statusCode).toBe(200);
    const cookie = `svc_session=${login.cookies.find((c) => c.name === 'svc_session')!.value}`;
    const get = async (url: string) => JSON.parse((await app.inject({ method: 'GET', url: `/o/old/api${url}`, headers: { cookie } })).body);
    expect((await get('/licenses/page?q=licensee%203')).items.map((l: { lid: string }) => l.lid)).toEqual(['LIC-OLD-3']);
    expect((await get('/licenses/page?sort=status&asc=true')).items.map((l: { lid: string }) => l.lid)).toEqual([
      'LIC-OLD-0',
      'LIC-OLD-1',
      'LIC-OLD-2',
      'LIC-OLD-3',
    ]);
    expect((await get('/licenses/page?sort=lastCheckedAt&asc=false')).items.map((l: { lid: string }) => l.lid)).toEqual([
      'LIC-OLD-0',
      'LIC-OLD-1',
      'LIC-OLD-2',
      'LIC-OLD-3',
    ]);
    expect(await get('/licenses/LIC-OLD-0/machines')).toMatchObject([{ live: true, atIssue: false, label: null, lastSeenAt: null }]);
  } finally {
    await app.close();
  }
});
