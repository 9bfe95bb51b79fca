import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * The last verified check answer: exactly the signed receipt fields and the receipt, so the
 * client re-verifies it on every load and a cache edited by hand is worth nothing.
 */
export interface CachedAnswer {
  /** The receipt's tag: `SVCR1` (terms v 3 and 4) or `SVCR2` (v 5, floating: `leaseEndsAt` is signed too). Absent in older caches: SVCR1. */
  tag?: 'SVCR1' | 'SVCR2';
  lid: string;
  status: string;
  nonce: string;
  checkedAt: string;
  boundAt: string;
  fpDigest: string;
  /** Empty unless the tag is SVCR2. */
  leaseEndsAt?: string;
  receipt: string;
  /** The unsigned `renewed` hint of that answer. */
  renewed: boolean;
  /**
   * The service's clock minus this machine's when the answer arrived (milliseconds), so a clock
   * that runs a little off is not taken for a rollback. Absent in caches written before it existed.
   */
  offsetMs?: number;
  /** The newest term (`iat`, seconds) of this licence seen on this machine: an older one is refused. */
  newestIat?: number;
}

/** Where the client keeps its last verified answer per licence (`lid`). */
export interface CheckCache {
  load(lid: string): Promise<CachedAnswer | null>;
  save(answer: CachedAnswer): Promise<void>;
  /** Forgets the answer for a licence (after release(): the next check starts fresh). */
  clear(lid: string): Promise<void>;
}

/** Keeps answers for the life of the process only. */
export function memoryCache(): CheckCache {
  const answers = new Map<string, CachedAnswer>();
  return {
    async load(lid) {
      return answers.get(lid) ?? null;
    },
    async save(answer) {
      answers.set(answer.lid, { ...answer });
    },
    async clear(lid) {
      answers.delete(lid);
    },
  };
}

/**
 * The user's configuration directory for Licensor: `$XDG_CONFIG_HOME/licensor` or
 * `~/.config/licensor` (Linux and others), `~/Library/Application Support/licensor` (macOS),
 * `%APPDATA%\licensor` (Windows).
 */
export function defaultCacheDir(
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
  home: string = os.homedir(),
): string {
  if (platform === 'win32') return path.win32.join(env.APPDATA || path.win32.join(home, 'AppData', 'Roaming'), 'licensor');
  if (platform === 'darwin') return path.posix.join(home, 'Library', 'Application Support', 'licensor');
  return path.posix.join(env.XDG_CONFIG_HOME || path.posix.join(home, '.config'), 'licensor');
}

/**
 * One JSON file (`check-cache.json` in `dir`, default defaultCacheDir()) holding the last
 * answer per `lid`. Written to a temporary file and renamed over the old one, so a crash or a
 * concurrent reader never sees half a file. An unreadable or corrupt file counts as empty.
 */
export function fileCache(dir: string = defaultCacheDir()): CheckCache & { file: string } {
  const file = path.join(dir, 'check-cache.json');

  async function readAll(): Promise<Record<string, CachedAnswer>> {
    try {
      const data: unknown = JSON.parse(await readFile(file, 'utf8'));
      // Without a prototype, a key named "__proto__" stays an ordinary entry.
      const all = Object.create(null) as Record<string, CachedAnswer>;
      return data !== null && typeof data === 'object' && !Array.isArray(data) ? Object.assign(all, data) : all;
    } catch {
      return Object.create(null) as Record<string, CachedAnswer>;
    }
  }

  /** Written to a temporary file and renamed over the old one. */
  async function writeAll(all: Record<string, CachedAnswer>) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(temporary, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }

  return {
    file,
    async load(lid) {
      const all = await readAll();
      return all[lid] ?? null;
    },
    async save(answer) {
      const all = await readAll();
      all[answer.lid] = answer;
      await writeAll(all);
    },
    async clear(lid) {
      const all = await readAll();
      if (!(lid in all)) return;
      delete all[lid];
      await writeAll(all);
    },
  };
}
