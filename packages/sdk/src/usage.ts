import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { LicenceClaims } from '@licensor/protocol';
import { LicensorError } from './errors.js';
import { isObject, writeFileAtomically } from './store.js';

/** A meter key, as a product parameter's (DESIGN.md 19). */
export const METER_KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
/** The largest amount one event may carry. */
export const MAX_AMOUNT = 1_000_000_000;
/** Queued events of one licence beyond which recordUsage() fails QUEUE_FULL. */
export const QUEUE_LIMIT = 1000;
/** Events per usage request at most. */
export const BATCH_SIZE = 100;

const EVENT_ID = /^[A-Za-z0-9_-]{1,128}$/;
const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?Z$/;

/** An event as queued on disk and sent, exactly `{id, meter, amount, at}`. */
export interface UsageEvent {
  id: string;
  meter: string;
  amount: number;
  /** When it happened by the service's clock as this machine knows it (ISO 8601 UTC, ms). */
  at: string;
}

/** A licence's signed meter (`mtr` claim): null limit is unlimited, null overage no ceiling. */
export interface LicenceMeter {
  key: string;
  period: 'NONE' | 'DAY' | 'MONTH' | 'YEAR';
  limit: number | null;
  overage: number | null;
}

/** The licence's signed meters (`mtr`), in signed order; none when the claim is absent or not of its form. */
export function licenceMeters(claims: LicenceClaims): LicenceMeter[] {
  const mtr = claims.mtr;
  if (!Array.isArray(mtr)) return [];
  const count = (value: unknown) => value === null || (Number.isSafeInteger(value) && (value as number) >= 0);
  const meters: LicenceMeter[] = [];
  for (const entry of mtr) {
    if (!isObject(entry) || Object.keys(entry).length !== 4 || typeof entry.k !== 'string' || !['NONE', 'DAY', 'MONTH', 'YEAR'].includes(entry.p as string))
      return [];
    if (!count(entry.l) || !count(entry.o)) return [];
    meters.push({ key: entry.k, period: entry.p as LicenceMeter['period'], limit: entry.l as number | null, overage: entry.o as number | null });
  }
  return meters;
}

/** Refuses (INVALID_OPTIONS, nothing queued) what the service would answer 400, so no queued event can draw one. */
export function checkEvent(meter: unknown, amount: unknown): asserts meter is string {
  if (typeof meter !== 'string' || !METER_KEY.test(meter))
    throw new LicensorError('INVALID_OPTIONS', 'meter must be a meter key: a letter, then up to 63 letters, digits, "_", "." or "-"');
  if (!Number.isSafeInteger(amount) || (amount as number) < 1 || (amount as number) > MAX_AMOUNT) {
    throw new LicensorError('INVALID_OPTIONS', `amount must be an integer from 1 to ${MAX_AMOUNT}`);
  }
}

function parseEvent(data: unknown, name: string): UsageEvent | null {
  if (!isObject(data)) return null;
  const { id, meter, amount, at } = data;
  if (typeof id !== 'string' || !EVENT_ID.test(id) || `${id}.json` !== name) return null;
  if (typeof meter !== 'string' || !METER_KEY.test(meter)) return null;
  if (!Number.isSafeInteger(amount) || (amount as number) < 1 || (amount as number) > MAX_AMOUNT) return null;
  if (typeof at !== 'string' || !AT.test(at) || Number.isNaN(Date.parse(at))) return null;
  return { id, meter, amount: amount as number, at };
}

const isEventFile = (name: string) => name.endsWith('.json') && EVENT_ID.test(name.slice(0, -5));

/**
 * One licence's queued events, `<stateDir>/usage/<lid>/<id>.json` (docs/protocol.md section 12):
 * each written (temporary name, fsync, rename) before any send and removed only once a verified
 * answer gives it a final result, so a crash loses nothing and a resend counts nothing twice.
 */
export class UsageQueue {
  constructor(readonly directory: string) {}

  /** The event files here; a folder that does not exist holds none. */
  async #names(): Promise<string[]> {
    try {
      return (await readdir(this.directory)).filter(isEventFile);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
      throw error;
    }
  }

  /** Queues a new event, or fails QUEUE_FULL with QUEUE_LIMIT events here. */
  async add(meter: string, amount: number, at: string): Promise<UsageEvent> {
    if ((await this.#names()).length >= QUEUE_LIMIT)
      throw new LicensorError('QUEUE_FULL', `${QUEUE_LIMIT} usage events are waiting to be sent for this licence`);
    const event = { id: randomBytes(16).toString('base64url'), meter, amount, at };
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    await writeFileAtomically(path.join(this.directory, `${event.id}.json`), `${JSON.stringify(event)}\n`);
    return event;
  }

  /** The readable events, oldest first (by `at`, then `id`); an unreadable file is never sent. */
  async events(): Promise<UsageEvent[]> {
    const events: UsageEvent[] = [];
    for (const name of await this.#names()) {
      const text = await readFile(path.join(this.directory, name), 'utf8').catch(() => null);
      let data: unknown = null;
      try {
        data = text === null ? null : JSON.parse(text);
      } catch {
        // Not JSON: left alone, never sent.
      }
      const event = parseEvent(data, name);
      if (event !== null) events.push(event);
    }
    return events.sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async remove(id: string): Promise<void> {
    await rm(path.join(this.directory, `${id}.json`), { force: true });
  }
}

/** How many events wait in the other licences' folders of `<stateDir>/usage/` (never sent for this one). */
export async function pendingElsewhere(usageRoot: string, lid: string): Promise<number> {
  let folders: string[];
  try {
    folders = await readdir(usageRoot);
  } catch {
    return 0;
  }
  let count = 0;
  for (const folder of folders) if (folder !== lid) count += (await new UsageQueue(path.join(usageRoot, folder)).events()).length;
  return count;
}
