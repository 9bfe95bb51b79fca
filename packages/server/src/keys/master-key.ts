import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';

function readKeyFile(file: string): Buffer {
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} does not hold a base64 32-byte key`);
  return key;
}

const keyFile = (dataDir: string) => path.join(dataDir, 'master.key');

/** The master key in use without making one: LICENSOR_MASTER_KEY, or the data dir's generated key, or null. */
export function existingMasterKey(config: Pick<Config, 'masterKey' | 'dataDir'>): Buffer | null {
  if (config.masterKey) return config.masterKey;
  return fs.existsSync(keyFile(config.dataDir)) ? readKeyFile(keyFile(config.dataDir)) : null;
}

/**
 * The key that wraps every sealed private key. From LICENSOR_MASTER_KEY when set; otherwise
 * (SQLite only, config enforces it) generated once into the data dir, readable by us alone.
 */
export function loadMasterKey(config: Pick<Config, 'masterKey' | 'dataDir'>, warn: (message: string) => void): Buffer {
  const existing = existingMasterKey(config);
  if (existing) return existing;
  const file = keyFile(config.dataDir);
  const key = randomBytes(32);
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another process starting at the same moment wrote it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readKeyFile(file);
    throw err;
  }
  warn(`generated a master key into ${file}: back it up, and set LICENSOR_MASTER_KEY to use it on other machines`);
  return key;
}
