import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * The last verified check answer: exactly the signed receipt fields and the receipt, so the
 * client re-verifies it on every load and a file edited by hand is worth nothing.
 */
export interface StoredAnswer {
  /** The receipt's tag: `SVCR1` (terms v 3 and 4) or `SVCR2` (v 5, floating: `leaseEndsAt` is signed too). */
  tag: 'SVCR1' | 'SVCR2';
  lid: string;
  status: string;
  nonce: string;
  checkedAt: string;
  boundAt: string;
  fpDigest: string;
  /** Empty unless the tag is SVCR2. */
  leaseEndsAt: string;
  receipt: string;
  /** The unsigned `renewed` hint of that answer. */
  renewed: boolean;
  /** The unsigned `converted` hint of that answer (a converted trial, DESIGN.md 18). */
  converted: boolean;
}

/** What the client keeps per licence (`lid`) on this machine. */
export interface StoredState {
  /** The newest term (`iat`, seconds) of this licence seen here: an older one is refused. Never cleared. */
  newestIat: number | null;
  /**
   * The service's clock minus this machine's when the latest verified answer arrived
   * (milliseconds), so a clock that runs a little off is not taken for a rollback. Never cleared.
   */
  offsetMs: number | null;
  /** The last verified answer; null before the first one, after release() and after clearCache(). */
  answer: StoredAnswer | null;
}

/** Whose state: the organisation (`org` claim), the product (`prd` claim) and the licence. */
export interface StateKey {
  slug: string;
  productKey: string;
  lid: string;
}

/** Where the client keeps its state per licence. */
export interface StateStore {
  /** The state for a licence; an empty one when there is none. */
  load(key: StateKey): Promise<StoredState>;
  /**
   * Loads, changes and saves one licence's state as one step, so that two writers (two
   * processes, or two clients in one) never lose each other's fields. Answers what was saved.
   */
  update(key: StateKey, change: (current: StoredState) => StoredState): Promise<StoredState>;
}

export const emptyState = (): StoredState => ({ newestIat: null, offsetMs: null, answer: null });

/** Keeps state for the life of the process only: for applications that want nothing on disk. */
export function memoryStore(): StateStore {
  const states = new Map<string, StoredState>();
  const id = ({ slug, productKey, lid }: StateKey) => JSON.stringify([slug, productKey, lid]);
  const copy = (state: StoredState): StoredState => ({ ...state, answer: state.answer && { ...state.answer } });
  return {
    async load(key) {
      return copy(states.get(id(key)) ?? emptyState());
    },
    async update(key, change) {
      const next = copy(change(copy(states.get(id(key)) ?? emptyState())));
      states.set(id(key), next);
      return copy(next);
    },
  };
}

/**
 * The user's configuration directory for Licensor: `$XDG_CONFIG_HOME/licensor` or
 * `~/.config/licensor` (Linux and others), `~/Library/Application Support/licensor` (macOS),
 * `%APPDATA%\licensor` (Windows).
 */
export function defaultStoreDir(platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  if (platform === 'win32') return path.win32.join(env.APPDATA || path.win32.join(home, 'AppData', 'Roaming'), 'licensor');
  if (platform === 'darwin') return path.posix.join(home, 'Library', 'Application Support', 'licensor');
  return path.posix.join(env.XDG_CONFIG_HOME || path.posix.join(home, '.config'), 'licensor');
}

/** A lock older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 10_000;
/** How long a writer waits for another's lock before giving up (the save is then reported as failed). */
const LOCK_WAIT_MS = 5_000;
/** Slugs, product keys and lids are this alphabet on the service; anything else never becomes a path. */
const PATH_PART = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * One JSON file per licence, `<root>/<slug>/<productKey>/<lid>.json` (directories 0700, file
 * 0600), so every vendor's application keeps its own state. A save writes a temporary file in
 * the same directory and renames it over the old one (a reader never sees half a file), while
 * holding the lock file `<lid>.lock`, created exclusively; the load that precedes it happens
 * under the same lock. A file that cannot be read counts as empty; readable fields are kept.
 */
export function fileStore(root: string = defaultStoreDir()): StateStore & {
  file(key: StateKey): string;
  productDirectory(slug: string, productKey: string): string;
  usageDirectory(lid: string): string;
  feedFile(key: StateKey): string;
} {
  function file(key: StateKey): string {
    for (const part of [key.slug, key.productKey, key.lid]) {
      if (!PATH_PART.test(part) || /^\.+$/.test(part)) throw new Error(`"${part}" cannot name a state file`);
    }
    return path.join(root, key.slug, key.productKey, `${key.lid}.json`);
  }

  const read = async (target: string) => parseState(await readStateFile(target));

  return {
    file,
    /** The product's directory, where air-gapped activation keeps its device key and requests (DESIGN.md 14). */
    productDirectory(slug: string, productKey: string): string {
      return path.dirname(file({ slug, productKey, lid: 'x' }));
    },
    /** The licence's queue of usage events, `<root>/usage/<lid>/` (DESIGN.md 19). */
    usageDirectory(lid: string): string {
      if (!PATH_PART.test(lid) || /^\.+$/.test(lid)) throw new Error(`"${lid}" cannot name a usage folder`);
      return path.join(root, 'usage', lid);
    },
    /** The licence's kept feed token and URLs, `<lid>.feed.json` beside its state (DESIGN.md 20). */
    feedFile(key: StateKey): string {
      return file(key).replace(/\.json$/, '.feed.json');
    },
    async load(key) {
      return read(file(key));
    },
    async update(key, change) {
      const target = file(key);
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      const release = await lock(target.replace(/\.json$/, '.lock'));
      try {
        const next = change(await read(target));
        await writeFileAtomically(target, serialiseState(key.lid, next));
        return next;
      } finally {
        await release();
      }
    },
  };
}

/** Writes a temporary file (mode 0600) in the same directory and renames it over `target`: a reader never sees half a file. */
export async function writeFileAtomically(target: string, text: string): Promise<void> {
  const temporary = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Takes the lock file (O_CREAT|O_EXCL), removing one older than STALE_LOCK_MS; answers its release. */
export async function lock(lockFile: string): Promise<() => Promise<void>> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(lockFile, 'wx', 0o600);
      await handle.close();
      return () => rm(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const since = await stat(lockFile).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (since > STALE_LOCK_MS) {
      await rm(lockFile, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`the state file is locked by another process (${lockFile})`);
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
  }
}

/** The file's text: the fields of docs/protocol.md section 8 exactly, in that order. */
export function serialiseState(lid: string, state: StoredState): string {
  const answer = state.answer && {
    tag: state.answer.tag,
    lid: state.answer.lid,
    status: state.answer.status,
    nonce: state.answer.nonce,
    checkedAt: state.answer.checkedAt,
    boundAt: state.answer.boundAt,
    fpDigest: state.answer.fpDigest,
    leaseEndsAt: state.answer.leaseEndsAt,
    receipt: state.answer.receipt,
    renewed: state.answer.renewed,
    converted: state.answer.converted,
  };
  return `${JSON.stringify({ format: 1, lid, newestIat: state.newestIat, offsetMs: state.offsetMs, answer }, null, 2)}\n`;
}

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Every state file the SDK keeps (a licence's `<lid>.json`, `air-gap.json`, `device.json`) is a
 * JSON object with `format: 1`: its fields, or null when the file is missing, unreadable or not
 * one, which each reader takes as empty.
 */
export async function readStateFile(file: string): Promise<Record<string, unknown> | null> {
  try {
    const data: unknown = JSON.parse(await readFile(file, 'utf8'));
    return isObject(data) && data.format === 1 ? data : null;
  } catch {
    return null;
  }
}

/**
 * Reads each field alone: a field of the wrong type is null, and an answer missing a field or
 * holding one of the wrong type is no answer, so a damaged answer never costs the newest term.
 */
function parseState(data: Record<string, unknown> | null): StoredState {
  if (data === null) return emptyState();
  const integer = (value: unknown) => (Number.isSafeInteger(value) ? (value as number) : null);
  const newestIat = integer(data.newestIat);
  return { newestIat: newestIat !== null && newestIat >= 0 ? newestIat : null, offsetMs: integer(data.offsetMs), answer: parseAnswer(data.answer) };
}

function parseAnswer(value: unknown): StoredAnswer | null {
  if (!isObject(value) || (value.tag !== 'SVCR1' && value.tag !== 'SVCR2') || typeof value.renewed !== 'boolean') return null;
  const strings = ['lid', 'status', 'nonce', 'checkedAt', 'boundAt', 'fpDigest', 'leaseEndsAt', 'receipt'] as const;
  if (strings.some((name) => typeof value[name] !== 'string')) return null;
  const text = (name: (typeof strings)[number]) => value[name] as string;
  return {
    tag: value.tag,
    lid: text('lid'),
    status: text('status'),
    nonce: text('nonce'),
    checkedAt: text('checkedAt'),
    boundAt: text('boundAt'),
    fpDigest: text('fpDigest'),
    leaseEndsAt: text('leaseEndsAt'),
    receipt: text('receipt'),
    renewed: value.renewed,
    // Optional: files written before trials existed have none.
    converted: value.converted === true,
  };
}
