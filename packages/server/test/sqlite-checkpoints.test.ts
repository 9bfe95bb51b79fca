import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, expect, it } from 'vitest';
import { checkpointInBackground } from '../src/db/checkpoints.js';
import { openDatabase } from '../src/db/database.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-checkpoints-'));
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

// A serving SQLite database copies its log into the database file from a thread of its own
// (db/checkpoints.ts), so the API's commits never do it: what it writes reaches the file while
// the log stays far below the API connection's own threshold.
it('copies the write-ahead log of a serving SQLite database into its file in the background', async () => {
  const file = path.join(dir, 'licensor.sqlite');
  const database = await openDatabase({ databaseUrl: null, sqliteFile: file }, { serving: true });
  try {
    await sql`create table filler (body text not null)`.execute(database.db);
    const before = fs.statSync(file).size;
    // About 250 pages: a quarter of SQLite's default threshold, so no automatic checkpoint runs.
    await database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 250; i++)
        await trx
          .insertInto('filler' as never)
          .values({ body: 'x'.repeat(4_000) } as never)
          .execute();
    });
    await expect.poll(() => fs.statSync(file).size, { timeout: 5_000 }).toBeGreaterThan(before + 900_000);
  } finally {
    await database.close();
  }
});

// Without the thread the API connection's own automatic checkpoint does the work, at a cost to
// every write that crosses it: the operator hears why, once.
it('warns when its checkpoint thread fails', async () => {
  const warnings: string[] = [];
  const stop = checkpointInBackground(path.join(dir, 'no-such-directory', 'licensor.sqlite'), (message) => warnings.push(message));
  await expect.poll(() => warnings.length, { timeout: 5_000 }).toBe(1);
  expect(warnings[0]).toMatch(/^the SQLite checkpoint thread stopped \(.+\): commits checkpoint the write-ahead log themselves/);
  await stop();
  expect(warnings).toHaveLength(1);
});
