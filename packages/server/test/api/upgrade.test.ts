// DESIGN.md 17, upgrades: SQLite backed up before a migration, and a schema newer than the release refused.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATION_NAMES } from '../../src/db/migrations/index.js';
import { migrateToLatest } from '../../src/db/migrations/index.js';
import { emptyTarget, insertOldOrganisation, openEnv, type Target } from '../backup-helpers.js';
import { runCli, startServe } from '../cli.js';
import { backend } from '../harness.js';

const MASTER_KEY = Buffer.alloc(32, 1).toString('base64');
const made: Target[] = [];
afterEach(async () => {
  for (const target of made.splice(0)) await target.dispose();
});

/** A deployment of this backend migrated only up to `upTo`, with an organisation in it unless `empty`. */
async function deploymentAt(upTo: string, { empty = false } = {}): Promise<Record<string, string>> {
  const target = await emptyTarget(backend, MASTER_KEY);
  made.push(target);
  const database = await openEnv(target.env);
  try {
    await migrateToLatest(database, upTo);
    if (!empty) await insertOldOrganisation(database, 'old', 'Old');
  } finally {
    await database.close();
  }
  return target.env;
}

const before = MIGRATION_NAMES.at(-2)!;

if (backend === 'sqlite') {
  describe('upgrading SQLite', () => {
    it('backs the database up before migrating it, names the file in the log, and warns when the generated key sits beside it', async () => {
      const { LICENSOR_MASTER_KEY: _, ...env } = await deploymentAt(before);
      // The key was generated into the data dir, as on a first start without LICENSOR_MASTER_KEY.
      fs.writeFileSync(path.join(env.LICENSOR_DATA_DIR!, 'master.key'), `${MASTER_KEY}\n`, { mode: 0o600 });
      const backups = path.join(env.LICENSOR_DATA_DIR!, 'backups');
      // Six older backups: the newest five are kept, this one included.
      fs.mkdirSync(backups, { mode: 0o700 });
      for (let i = 0; i < 6; i++) fs.writeFileSync(path.join(backups, `licensor-2020010${i}T000000000Z-${before}.backup.gz`), '');
      const result = await runCli(['migrate'], { ...env, LOG_LEVEL: 'info' });
      expect(result.code).toBe(0);
      const answer = JSON.parse(result.stdout);
      expect(answer.migrated).toEqual([MIGRATION_NAMES.at(-1)]);
      expect(path.dirname(answer.backup)).toBe(backups);
      expect(fs.statSync(backups).mode & 0o777).toBe(0o700);
      expect(fs.statSync(answer.backup).mode & 0o777).toBe(0o600);
      const log = result.stderr
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(log).toContainEqual(expect.objectContaining({ msg: 'backed up the database before migrating it', file: answer.backup }));
      expect(log.find((l) => l.level === 40)?.msg).toMatch(/master\.key, in the same data dir/);
      expect(fs.readdirSync(backups).sort()).toEqual([
        ...[2, 3, 4, 5].map((i) => `licensor-2020010${i}T000000000Z-${before}.backup.gz`),
        path.basename(answer.backup),
      ]);

      // The backup is of the schema before the upgrade, and restores (then migrates) into a new data dir.
      const into = await emptyTarget('sqlite', MASTER_KEY);
      made.push(into);
      const restored = await runCli(['restore', answer.backup], into.env);
      expect(restored.code).toBe(0);
      expect(JSON.parse(restored.stdout)).toMatchObject({ schema: before, migrated: [MIGRATION_NAMES.at(-1)] });
      expect(JSON.parse(restored.stdout).counts.organisations).toBe(1);
    });

    it('takes no backup of a database with nothing in it, nor of one already up to date', async () => {
      const env = await deploymentAt(before, { empty: true });
      expect(JSON.parse((await runCli(['migrate'], env)).stdout)).toEqual({ migrated: [MIGRATION_NAMES.at(-1)] });
      const current = await deploymentAt(MIGRATION_NAMES.at(-1)!);
      expect(JSON.parse((await runCli(['migrate'], current)).stdout)).toEqual({ migrated: [] });
      for (const dataDir of [env, current].map((e) => e.LICENSOR_DATA_DIR!)) expect(fs.existsSync(path.join(dataDir, 'backups'))).toBe(false);
    });
  });
}

describe('a database migrated by a newer release', () => {
  it('stops start-up and migrate with one line, and changes nothing', async () => {
    const env = await deploymentAt(MIGRATION_NAMES.at(-1)!);
    const database = await openEnv(env);
    try {
      await sql`insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2030-01-01T00:00:00.000Z')`.execute(database.db);
    } finally {
      await database.close();
    }
    for (const command of ['serve', 'migrate']) {
      const result = await runCli([command], { ...env, PORT: '0' });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `licensor: the database's schema (9999_from_the_future) is newer than this release's (${MIGRATION_NAMES.at(-1)}): run a release at least as new\n`,
      );
    }
    if (backend === 'sqlite') expect(fs.existsSync(path.join(env.LICENSOR_DATA_DIR!, 'backups'))).toBe(false);
  });

  it('makes a running instance answer 503 and exit, workers and primary, for its supervisor to restart', { timeout: 90_000 }, async () => {
    const env = await deploymentAt(MIGRATION_NAMES.at(-1)!);
    const service = await startServe({ ...env, LICENSOR_WORKERS: '2', LOG_LEVEL: 'info' });
    const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)));
    try {
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      const database = await openEnv(env);
      try {
        await sql`insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2030-01-01T00:00:00.000Z')`.execute(database.db);
      } finally {
        await database.close();
      }
      // Looked for every five seconds; on a loaded machine, allow several times that.
      let answer: Response | null = null;
      for (let waited = 0; waited < 30_000 && answer?.status !== 503; waited += 200) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        answer = await fetch(`${service.url}/healthz`).catch(() => null);
      }
      expect(answer?.status).toBe(503);
      expect(await answer!.json()).toEqual({ error: 'the database was upgraded by a newer release: this instance is restarting' });
      expect(await exited).toBe(1);
    } finally {
      // The primary passes SIGTERM on to its workers, should the test have failed before they stopped.
      if (service.child.exitCode === null) service.child.kill('SIGTERM');
    }
  });
});
