import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultCacheDir, fileCache, memoryCache, type CachedAnswer } from '@licensor/sdk';

const answer = (lid: string, checkedAt = '2026-11-22T07:00:00.000Z'): CachedAnswer => ({
  lid,
  status: 'ACTIVE',
  nonce: 'n0nce_ABCDEFGHIJKLmnop',
  checkedAt,
  boundAt: '2026-01-05T09:30:12.345Z',
  fpDigest: '781575c1b48e839d52b91dac74decc5a',
  receipt: 'c2lnbmF0dXJl',
  renewed: false,
});

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'licensor-sdk-cache-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe('fileCache', () => {
  it('round-trips answers keyed by lid, creating its directory', async () => {
    const dir = path.join(tempDir(), 'nested', 'licensor');
    const cache = fileCache(dir);
    expect(await cache.load('a')).toBeNull();
    await cache.save(answer('a'));
    await cache.save(answer('b', '2026-11-23T07:00:00.000Z'));
    await cache.save(answer('a', '2026-11-24T07:00:00.000Z'));
    const again = fileCache(dir);
    expect(await again.load('a')).toEqual(answer('a', '2026-11-24T07:00:00.000Z'));
    expect(await again.load('b')).toEqual(answer('b', '2026-11-23T07:00:00.000Z'));
    expect(await again.load('__proto__')).toBeNull();
    expect(statSync(cache.file).mode & 0o777).toBe(0o600);
  });

  it('forgets one licence’s answer on clear, keeping the others', async () => {
    const dir = tempDir();
    const cache = fileCache(dir);
    await cache.save(answer('a'));
    await cache.save(answer('b'));
    await cache.clear('a');
    await cache.clear('never-saved');
    const again = fileCache(dir);
    expect(await again.load('a')).toBeNull();
    expect(await again.load('b')).toEqual(answer('b'));
    const memory = memoryCache();
    await memory.save(answer('a'));
    await memory.clear('a');
    expect(await memory.load('a')).toBeNull();
  });

  it('writes a temporary file and renames it over the old one', async () => {
    const cache = fileCache(tempDir());
    await cache.save(answer('a'));
    const before = statSync(cache.file).ino;
    await cache.save(answer('b'));
    // An in-place write keeps the inode; a rename brings the new file's.
    expect(statSync(cache.file).ino).not.toBe(before);
    expect(readdirSync(path.dirname(cache.file))).toEqual(['check-cache.json']);
  });

  it('never shows a reader half a file while writers race', async () => {
    const cache = fileCache(tempDir());
    await cache.save(answer('seed'));
    let writing = true;
    const writes = Promise.all(Array.from({ length: 30 }, (_, i) => cache.save(answer(`lid-${i}`)))).finally(() => (writing = false));
    let reads = 0;
    while (writing) {
      expect(JSON.parse(readFileSync(cache.file, 'utf8'))).toHaveProperty('seed');
      reads++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await writes;
    expect(reads).toBeGreaterThan(1);
    expect(readdirSync(path.dirname(cache.file))).toEqual(['check-cache.json']);
  });

  it('treats a corrupt file as empty and replaces it on the next save', async () => {
    const cache = fileCache(tempDir());
    writeFileSync(cache.file, '{"a": tru');
    expect(await cache.load('a')).toBeNull();
    await cache.save(answer('a'));
    expect(await cache.load('a')).toEqual(answer('a'));
  });
});

describe('memoryCache', () => {
  it('round-trips answers by lid', async () => {
    const cache = memoryCache();
    await cache.save(answer('a'));
    expect(await cache.load('a')).toEqual(answer('a'));
    expect(await cache.load('b')).toBeNull();
  });
});

describe('defaultCacheDir', () => {
  it('follows each platform\'s convention for configuration', () => {
    expect(defaultCacheDir('linux', {}, '/home/ada')).toBe('/home/ada/.config/licensor');
    expect(defaultCacheDir('linux', { XDG_CONFIG_HOME: '/xdg' }, '/home/ada')).toBe('/xdg/licensor');
    expect(defaultCacheDir('darwin', {}, '/Users/ada')).toBe('/Users/ada/Library/Application Support/licensor');
    expect(defaultCacheDir('win32', { APPDATA: 'C:\\Users\\ada\\AppData\\Roaming' }, 'C:\\Users\\ada')).toBe('C:\\Users\\ada\\AppData\\Roaming\\licensor');
  });
});
