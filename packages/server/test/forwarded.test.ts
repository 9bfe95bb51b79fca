import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/database.js';
import { answerStatements, forwardedDatabase } from '../src/db/forwarded.js';

// The webhook delivery thread's statements on SQLite run on the owner's connection (db/forwarded.ts):
// its transactions must commit, roll back and exclude the owner's writes exactly as the owner's own.
describe('statements forwarded to the owner of a SQLite database', () => {
  let dir: string;
  let owner: Database;
  let thread: Database;
  let ended: () => Promise<void>;

  const organisation = (slug: string) => ({ slug, name: slug, timezone: 'UTC', created_at: 0 });
  const slugs = async () => (await owner.db.selectFrom('organisations').select('slug').orderBy('slug').execute()).map((row) => row.slug);

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-forwarded-'));
    owner = await openDatabase({ databaseUrl: null, sqliteFile: path.join(dir, 'licensor.sqlite') });
    const channel = new MessageChannel();
    ended = answerStatements(owner, channel.port1);
    thread = forwardedDatabase(channel.port2);
  });

  afterEach(async () => {
    await thread.close();
    await ended();
    await owner.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('commits a transaction and runs statements outside one', async () => {
    await thread.db.transaction().execute(async (trx) => {
      await trx.insertInto('organisations').values(organisation('a')).execute();
      await trx.insertInto('organisations').values(organisation('b')).execute();
    });
    await thread.db.insertInto('organisations').values(organisation('c')).execute();
    expect(await slugs()).toEqual(['a', 'b', 'c']);
    expect(await thread.db.selectFrom('organisations').select('slug').where('slug', '=', 'b').executeTakeFirst()).toEqual({ slug: 'b' });
  });

  it('rolls back a transaction that throws, and passes SQLite error codes through', async () => {
    await thread.db.insertInto('organisations').values(organisation('a')).execute();
    const failed = thread.db.transaction().execute(async (trx) => {
      await trx.insertInto('organisations').values(organisation('b')).execute();
      await trx.insertInto('organisations').values(organisation('a')).execute();
    });
    await expect(failed).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect(await slugs()).toEqual(['a']);
  });

  it("holds the owner's writes until the thread's transaction ends", async () => {
    let ownerWrote = false;
    let ownerWrite: Promise<unknown> = Promise.resolve();
    await thread.db.transaction().execute(async (trx) => {
      await trx.insertInto('organisations').values(organisation('thread')).execute();
      ownerWrite = owner.db
        .insertInto('organisations')
        .values(organisation('owner'))
        .execute()
        .then(() => (ownerWrote = true));
      await sleep(50);
      expect(ownerWrote).toBe(false);
      const count = await trx
        .selectFrom('organisations')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(count.n)).toBe(1);
    });
    await ownerWrite;
    expect(await slugs()).toEqual(['owner', 'thread']);
  });

  it('rolls back a transaction that holds the connection too long, and frees it for the owner', async () => {
    const held = thread.db.transaction().execute(async (trx) => {
      await trx.insertInto('organisations').values(organisation('slow')).execute();
      await sleep(2_300);
      await trx.insertInto('organisations').values(organisation('late')).execute();
    });
    await sleep(100);
    // The owner waits behind the open transaction, then writes once the limit has rolled it back.
    await owner.db.insertInto('organisations').values(organisation('owner')).execute();
    await expect(held).rejects.toThrow(/ran too long/);
    expect(await slugs()).toEqual(['owner']);
    // The thread's next transaction works again.
    await thread.db.transaction().execute((trx) => trx.insertInto('organisations').values(organisation('next')).execute());
    expect(await slugs()).toEqual(['next', 'owner']);
  });

  it('rolls back what a thread that ended left open', async () => {
    let begun!: () => void;
    const opened = new Promise<void>((resolve) => (begun = resolve));
    void thread.db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('organisations').values(organisation('orphan')).execute();
        begun();
        await new Promise(() => {});
      })
      .catch(() => {});
    await opened;
    await ended();
    await owner.db.insertInto('organisations').values(organisation('owner')).execute();
    expect(await slugs()).toEqual(['owner']);
  });
});
