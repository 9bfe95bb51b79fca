import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultStoreDir, fileStore, memoryStore, type StoredAnswer, type StoredState } from '@licensor/sdk';

const answer = (lid: string, checkedAt = '2026-11-22T07:00:00.000Z'): StoredAnswer => ({
  tag: 'SVCR1',
  lid,
  status: 'ACTIVE',
  nonce: 'n0nce_ABCDEFGHIJKLmnop',
  checkedAt,
  boundAt: '2026-01-05T09:30:12.345Z',
  fpDigest: '781575c1b48e839d52b91dac74decc5a',
  leaseEndsAt: '',
  receipt: 'c2lnbmF0dXJl',
  renewed: false,
  converted: false,
});
const state = (lid: string, newestIat: number | null = 1764000000, offsetMs: number | null = -1234): StoredState => ({
  newestIat,
  offsetMs,
  answer: answer(lid),
});
const key = (lid: string, productKey = 'cad', slug = 'acme') => ({ slug, productKey, lid });

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'licensor-sdk-store-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('fileStore', () => {
  it('keeps one file per licence under its organisation and product, in the shared format', async () => {
    const root = path.join(tempDir(), 'licensor');
    const store = fileStore(root);
    expect(await store.load(key('a'))).toEqual({ newestIat: null, offsetMs: null, answer: null });
    await store.update(key('a'), () => state('a'));
    await store.update(key('a', 'paint'), () => state('a', 5, 6));
    await store.update(key('a', 'cad', 'globex'), () => state('a', 7, 8));

    const file = path.join(root, 'acme', 'cad', 'a.json');
    expect(store.file(key('a'))).toBe(file);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ format: 1, lid: 'a', ...state('a') });
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')))).toEqual(['format', 'lid', 'newestIat', 'offsetMs', 'answer']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    for (const dir of [root, path.join(root, 'acme'), path.join(root, 'acme', 'cad')]) expect(statSync(dir).mode & 0o777).toBe(0o700);
    // The lock is gone once the write is done; no temporary file is left behind.
    expect(readdirSync(path.dirname(file))).toEqual(['a.json']);

    const again = fileStore(root);
    expect(await again.load(key('a'))).toEqual(state('a'));
    expect(await again.load(key('a', 'paint'))).toEqual(state('a', 5, 6));
    expect(await again.load(key('a', 'cad', 'globex'))).toEqual(state('a', 7, 8));
  });

  it("never makes a path of a name outside the service's alphabet", async () => {
    const store = fileStore(tempDir());
    for (const bad of [key('..'), key('a', '../etc'), key('a', 'cad', 'a/b'), key('')]) {
      await expect(store.update(bad, () => state('a'))).rejects.toThrow('cannot name a state file');
      await expect(store.load(bad)).rejects.toThrow('cannot name a state file');
    }
  });

  it('writes a temporary file and renames it over the old one', async () => {
    const store = fileStore(tempDir());
    await store.update(key('a'), () => state('a'));
    const before = statSync(store.file(key('a'))).ino;
    await store.update(key('a'), (s) => ({ ...s, answer: null }));
    // An in-place write keeps the inode; a rename brings the new file's.
    expect(statSync(store.file(key('a'))).ino).not.toBe(before);
  });

  it('counts a damaged file as empty, keeping the fields that still read', async () => {
    const store = fileStore(tempDir());
    const file = store.file(key('a'));
    await store.update(key('a'), () => state('a'));
    writeFileSync(file, '{"format": 1, "newestIat": 17');
    expect(await store.load(key('a'))).toEqual({ newestIat: null, offsetMs: null, answer: null });
    writeFileSync(file, JSON.stringify({ format: 1, lid: 'a', newestIat: 17, offsetMs: 'x', answer: { ...answer('a'), renewed: 'no' } }));
    expect(await store.load(key('a'))).toEqual({ newestIat: 17, offsetMs: null, answer: null });
    writeFileSync(file, JSON.stringify({ format: 1, lid: 'a', newestIat: 1.5, offsetMs: -3, answer: { ...answer('a'), tag: 'SVCR9' } }));
    expect(await store.load(key('a'))).toEqual({ newestIat: null, offsetMs: -3, answer: null });
    await store.update(key('a'), (s) => ({ ...s, answer: answer('a') }));
    expect(await store.load(key('a'))).toEqual({ newestIat: null, offsetMs: -3, answer: answer('a') });
    // `converted` (DESIGN.md 18) is optional: a file written before trials reads as not converted.
    const { converted: _converted, ...older } = answer('a');
    writeFileSync(file, JSON.stringify({ format: 1, lid: 'a', newestIat: 5, offsetMs: 0, answer: { ...older, converted: 'yes' } }));
    expect(await store.load(key('a'))).toEqual({ newestIat: 5, offsetMs: 0, answer: answer('a') });
    writeFileSync(file, JSON.stringify({ format: 1, lid: 'a', newestIat: 5, offsetMs: 0, answer: older }));
    expect(await store.load(key('a'))).toEqual({ newestIat: 5, offsetMs: 0, answer: answer('a') });
  });

  it("waits for another writer's lock, and removes one left by a process that died", async () => {
    const store = fileStore(tempDir());
    await store.update(key('a'), () => state('a', 1));
    const lockFile = store.file(key('a')).replace(/\.json$/, '.lock');
    writeFileSync(lockFile, '');
    let done = false;
    const waiting = store.update(key('a'), (s) => ({ ...s, newestIat: s.newestIat! + 1 })).then(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(done).toBe(false);
    rmSync(lockFile);
    await waiting;
    expect((await store.load(key('a'))).newestIat).toBe(2);

    writeFileSync(lockFile, '');
    const old = (Date.now() - 11_000) / 1000;
    utimesSync(lockFile, old, old);
    await store.update(key('a'), (s) => ({ ...s, newestIat: s.newestIat! + 1 }));
    expect((await store.load(key('a'))).newestIat).toBe(3);
    expect(readdirSync(path.dirname(lockFile))).toEqual(['a.json']);
  });

  it('loses no update when two processes write at once', async () => {
    const root = tempDir();
    const times = 40;
    const writer = (name: string) =>
      promisify(execFile)(
        process.execPath,
        [
          path.resolve(import.meta.dirname, '../../../node_modules/tsx/dist/cli.mjs'),
          path.join(import.meta.dirname, 'store-writer.ts'),
          root,
          name,
          String(times),
        ],
        {
          timeout: 60_000,
        },
      );
    await Promise.all([writer('first'), writer('second')]);
    const store = fileStore(root);
    expect((await store.load(key('shared'))).newestIat).toBe(2 * times);
    expect((await store.load(key('first'))).offsetMs).toBe(times);
    expect((await store.load(key('second'))).offsetMs).toBe(times);
    expect(readdirSync(path.join(root, 'acme', 'cad')).sort()).toEqual(['first.json', 'second.json', 'shared.json']);
  });
});

describe('memoryStore', () => {
  it('keeps state per organisation, product and licence, and hands out copies', async () => {
    const store = memoryStore();
    await store.update(key('a'), () => state('a'));
    expect(await store.load(key('a'))).toEqual(state('a'));
    expect(await store.load(key('a', 'paint'))).toEqual({ newestIat: null, offsetMs: null, answer: null });
    const loaded = await store.load(key('a'));
    loaded.answer!.status = 'REVOKED';
    expect((await store.load(key('a'))).answer!.status).toBe('ACTIVE');
  });
});

describe('defaultStoreDir', () => {
  it("follows each platform's convention for configuration", () => {
    expect(defaultStoreDir('linux', {}, '/home/ada')).toBe('/home/ada/.config/licensor');
    expect(defaultStoreDir('linux', { XDG_CONFIG_HOME: '/xdg' }, '/home/ada')).toBe('/xdg/licensor');
    expect(defaultStoreDir('darwin', {}, '/Users/ada')).toBe('/Users/ada/Library/Application Support/licensor');
    expect(defaultStoreDir('win32', { APPDATA: 'C:\\Users\\ada\\AppData\\Roaming' }, 'C:\\Users\\ada')).toBe('C:\\Users\\ada\\AppData\\Roaming\\licensor');
  });
});
