// Runs test/fixtures/JavaVerifier.java so tests can prove a JDK accepts our signatures.
// Imported by other packages' tests too; keep it free of test-framework imports.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KeyObject } from 'node:crypto';

export interface JavaVerifyItem {
  /** JDK name: Ed25519, SHA256withRSA, SHA256withECDSA, SHA384withECDSA. */
  algorithm: string;
  publicKey: KeyObject;
  /** The signed bytes, or a receipt whose bytes Java builds itself from its tag and fields. */
  message: Uint8Array | { tag: string; fields: ReadonlyArray<string | null | undefined> };
  signature: Uint8Array;
}

const SOURCE = fileURLToPath(new URL('./fixtures/JavaVerifier.java', import.meta.url));

let available: boolean | undefined;
let compiled: Promise<string> | undefined;

/** True when both javac and java run. */
export function javaAvailable(): boolean {
  if (available === undefined) {
    const ok = (command: string) => {
      const result = spawnSync(command, ['-version'], { stdio: 'ignore' });
      return result.error === undefined && result.status === 0;
    };
    available = ok('javac') && ok('java');
  }
  return available;
}

function compile(): Promise<string> {
  compiled ??= new Promise((resolve, reject) => {
    const dir = mkdtempSync(join(tmpdir(), 'licensor-java-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const javac = spawn('javac', ['-d', dir, SOURCE], { stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    javac.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    javac.on('error', reject);
    javac.on('close', (code) => (code === 0 ? resolve(dir) : reject(new Error(`javac failed: ${errors}`))));
  });
  return compiled;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/** Verifies every item in one JVM; true where Java accepts the signature. */
export async function javaVerify(items: readonly JavaVerifyItem[]): Promise<boolean[]> {
  if (items.length === 0) return [];
  const dir = await compile();
  const input = items
    .map((item) => {
      const spki = item.publicKey.export({ type: 'spki', format: 'der' });
      if (item.message instanceof Uint8Array) return `${item.algorithm} ${b64(spki)} ${b64(item.message)} ${b64(item.signature)}\n`;
      const fields = item.message.fields.map((field) => (field ? Buffer.from(field, 'utf8').toString('base64') : '-'));
      return `RECEIPT ${item.algorithm} ${b64(spki)} ${item.message.tag} ${fields.join(' ')} ${b64(item.signature)}\n`;
    })
    .join('');
  const output = await new Promise<string>((resolve, reject) => {
    const java = spawn('java', ['-cp', dir, 'JavaVerifier'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let errors = '';
    java.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    java.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    java.on('error', reject);
    java.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`java exited ${code}: ${errors}`))));
    java.stdin.end(input);
  });
  const lines = output.split('\n').filter((line) => line !== '');
  if (lines.length !== items.length) throw new Error(`JavaVerifier answered ${lines.length} lines for ${items.length} items`);
  return lines.map((line) => line.trim() === 'OK');
}
