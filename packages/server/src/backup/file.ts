import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { once } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import { finished } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { DialectName } from '../db/database.js';

/*
 * The backup file (DESIGN.md 17): gzip of JSON lines. A header line; then for each table a line
 * naming it and its columns, followed by one JSON array per row in that column order; then a
 * trailer line with the row count of each table and the SHA-256 (hex) of every uncompressed byte
 * before the trailer line. Values are what both dialects store: numbers, text and null.
 */
export const FORMAT = 'licensor-backup';
export const FORMAT_VERSION = 1;

export interface Header {
  format: typeof FORMAT;
  version: number;
  /** The last migration applied to the database backed up. */
  schema: string;
  createdAt: string;
  database: DialectName;
}

export interface TableLine {
  table: string;
  columns: string[];
}

export interface Trailer {
  trailer: true;
  counts: Record<string, number>;
  sha256: string;
}

/** Writes the lines, hashing each; the file appears under its name, mode 0600, only once complete. */
export class BackupWriter {
  private readonly hash = createHash('sha256');
  private readonly gzip = createGzip();
  private readonly partial: string;
  private readonly done: Promise<void>;
  private failure: Error | null = null;
  bytes = 0;

  constructor(private readonly file: string) {
    if (fs.existsSync(file)) throw new Error(`${file} already exists: choose another name`);
    this.partial = `${file}.partial`;
    const out = fs.createWriteStream(this.partial, { mode: 0o600, flags: 'w' });
    this.gzip.pipe(out);
    // A failure of the file fails the compressor too, so a write waiting for its drain hears of it, and the next write throws it.
    out.on('error', (err) => {
      this.failure = err;
      this.gzip.destroy(err);
    });
    this.gzip.on('error', () => {});
    this.done = finished(out);
    this.done.catch(() => {});
  }

  /** Writes lines (each a JSON text without its newline), waiting while the compressor is full. */
  async write(lines: string[]): Promise<void> {
    if (this.failure) throw this.failure;
    if (lines.length === 0) return;
    const text = `${lines.join('\n')}\n`;
    this.hash.update(text);
    this.bytes += Buffer.byteLength(text);
    if (!this.gzip.write(text)) await once(this.gzip, 'drain');
  }

  async close(counts: Record<string, number>): Promise<Trailer> {
    const trailer: Trailer = { trailer: true, counts, sha256: this.hash.digest('hex') };
    this.gzip.end(`${JSON.stringify(trailer)}\n`);
    await this.done;
    fs.chmodSync(this.partial, 0o600);
    fs.renameSync(this.partial, this.file);
    return trailer;
  }

  /** Removes what was written of a backup that failed. */
  abandon(): void {
    this.gzip.destroy();
    fs.rmSync(this.partial, { force: true });
  }
}

export type Line = { kind: 'table'; table: TableLine } | { kind: 'rows'; rows: unknown[][] };

const corrupt = (why: string) => new Error(`the backup file is not usable: ${why}`);

/**
 * Reads a backup as it streams: the header first (`header` resolves with it), then tables and
 * batches of rows. Every line is hashed as it is read, and the trailer is checked (digest and
 * counts) before the reading ends, so a consumer that commits after its loop rolls back on a
 * mismatch instead. `onBytes` reports compressed bytes read, for progress.
 */
export async function* readBackup(
  file: string,
  onHeader: (header: Header) => Promise<void> | void,
  onBytes: (bytes: number) => void = () => {},
  batch = 1000,
): AsyncGenerator<Line> {
  const input = fs.createReadStream(file);
  input.on('data', (chunk) => onBytes(chunk.length));
  const gunzip = input.pipe(createGunzip());
  input.on('error', (err) => gunzip.destroy(err));
  const hash = createHash('sha256');
  const decoder = new StringDecoder('utf8');
  const counts: Record<string, number> = {};
  let header: Header | null = null;
  let table: string | null = null;
  let rows: unknown[][] = [];
  let trailer: Trailer | null = null;
  let carry = '';

  const take = async function* (line: string): AsyncGenerator<Line> {
    if (trailer) throw corrupt('it goes on after its trailer');
    if (line.startsWith('{"trailer"')) {
      trailer = parse(line) as Trailer;
      if (rows.length) yield { kind: 'rows', rows };
      rows = [];
      return;
    }
    hash.update(`${line}\n`);
    if (header === null) {
      const first = parse(line) as Header;
      if (first.format !== FORMAT) throw corrupt('it is not a Licensor backup');
      if (first.version !== FORMAT_VERSION) throw corrupt(`its format version ${first.version} is not one this release reads`);
      header = first;
      await onHeader(first);
    } else if (line.startsWith('[')) {
      if (table === null) throw corrupt('a row comes before its table');
      const row = parse(line);
      if (!Array.isArray(row)) throw corrupt('a row is not an array');
      counts[table]!++;
      rows.push(row);
      if (rows.length >= batch) {
        yield { kind: 'rows', rows };
        rows = [];
      }
    } else {
      const next = parse(line) as TableLine;
      if (typeof next.table !== 'string' || !Array.isArray(next.columns)) throw corrupt('a line is neither a table nor a row');
      if (rows.length) yield { kind: 'rows', rows };
      rows = [];
      table = next.table;
      counts[table] = 0;
      yield { kind: 'table', table: next };
    }
  };

  try {
    for await (const chunk of gunzip) {
      const lines = (carry + decoder.write(chunk as Buffer)).split('\n');
      carry = lines.pop()!;
      for (const line of lines) yield* take(line);
    }
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('Z_')) throw corrupt('the compressed data is damaged or cut short');
    throw err;
  }
  if (carry + decoder.end() !== '') throw corrupt('it is cut short');
  const end = trailer as Trailer | null;
  if (!end) throw corrupt('it is cut short (no trailer)');
  if (end.sha256 !== hash.digest('hex')) throw corrupt('its SHA-256 does not match its contents');
  if (JSON.stringify(Object.entries(end.counts).sort()) !== JSON.stringify(Object.entries(counts).sort())) {
    throw corrupt('its row counts do not match its contents');
  }
}

function parse(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    throw corrupt('a line is not JSON');
  }
}
