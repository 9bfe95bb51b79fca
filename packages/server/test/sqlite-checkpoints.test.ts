import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, expect, it } from 'vitest';
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
      for (let i = 0; i < 250; i++) await trx.insertInto('filler' as never).values({ body: 'x'.repeat(4_000) } as never).execute();
    });
    await expect.poll(() => fs.statSync(file).size, { timeout: 5_000 }).toBeGreaterThan(before + 900_000);
  } finally {
    await database.close();
  }
});
