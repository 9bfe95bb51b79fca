import fs from 'node:fs';
import path from 'node:path';
import { verifyPassword } from '../core/passwords.js';

/** DESIGN.md 1: where the first start leaves the generated password of `admin`. */
export const initialPasswordFile = (dataDir: string) => path.join(dataDir, 'initial-admin-password');

export function writeInitialPassword(dataDir: string, password: string): string {
  const file = initialPasswordFile(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return file;
}

/**
 * Called after a password change with the hash it replaced: when that was the password the file
 * holds, the file goes, so nobody reading it later fails to sign in (issue 45). Judging by the
 * password itself, not by a name, finds the account it was made for wherever it was renamed.
 */
export async function retireInitialPassword(dataDir: string, replacedHash: string | null): Promise<void> {
  if (replacedHash === null) return;
  const file = initialPasswordFile(dataDir);
  let held: string;
  try {
    held = fs.readFileSync(file, 'utf8').trim();
  } catch {
    return; // Already gone (or never written here: another host bootstrapped, or the password was chosen).
  }
  if (await verifyPassword(held, replacedHash)) fs.rmSync(file, { force: true });
}
