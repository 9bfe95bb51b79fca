import http from 'node:http';
// Shared by downloads.test.ts and feeds.test.ts (DESIGN.md 20): a product with releases and its licensed downloads.
import { checkBody, checkedProduct, type CheckedProduct } from './check-helpers.js';
import type { Harness, Response } from './harness.js';

export interface ReleaseFile {
  filename: string;
  platform: string;
  arch: string;
  content: string;
  tauriSignature?: string;
  edSignature?: string;
}

export interface ReleasedProduct extends CheckedProduct {
  /** Creates, uploads to and (unless `draft`) publishes a release; answers the release record. */
  ship(version: string, files: ReleaseFile[], body?: Record<string, unknown> & { publishedAt?: string; draft?: boolean }): Promise<any>;
  /** POSTs `.../download` and `.../feed-token` with this product's check token. */
  grant(body: unknown): Promise<Response>;
  feedToken(body: unknown): Promise<Response>;
  /** An ONLINE licence checked on `machine`, so that machine holds a seat. */
  seated(machine: string, body?: Record<string, unknown>): Promise<any>;
}

export async function releasedProduct(h: Harness, body: Record<string, unknown> = {}): Promise<ReleasedProduct> {
  const p = await checkedProduct(h, body);
  const caller = h.as({ token: p.token });
  return {
    ...p,
    async ship(version, files, { publishedAt, draft, ...fields } = {}) {
      const created = await h.admin('POST', `/products/${p.id}/releases`, { version, ...fields });
      if (created.statusCode !== 201) throw new Error(`release: ${created.statusCode} ${created.body}`);
      for (const file of files) {
        const query = new URLSearchParams({ filename: file.filename, platform: file.platform, arch: file.arch });
        if (file.tauriSignature) query.set('tauriSignature', file.tauriSignature);
        if (file.edSignature) query.set('edSignature', file.edSignature);
        const uploaded = await h.admin('POST', `/releases/${created.data.id}/artifacts?${query}`, file.content, {
          'content-type': file.filename.endsWith('.zip') ? 'application/zip' : 'application/octet-stream',
        });
        if (uploaded.statusCode !== 201) throw new Error(`upload: ${uploaded.statusCode} ${uploaded.body}`);
      }
      if (draft) return (await h.admin('GET', `/releases/${created.data.id}`)).data;
      const published = await h.admin('POST', `/releases/${created.data.id}/publish`, publishedAt ? { publishedAt } : {});
      if (published.statusCode !== 200) throw new Error(`publish: ${published.statusCode} ${published.body}`);
      return published.data;
    },
    grant: (b) => caller('POST', `/public/license/${p.checkId}/download`, b),
    feedToken: (b) => caller('POST', `/public/license/${p.checkId}/feed-token`, b),
    async seated(machine, issue = {}) {
      const licence = await p.issue(issue);
      const checked = await p.check(checkBody(licence.licenseString, machine));
      if (!checked.data.valid) throw new Error(`check: ${checked.body}`);
      return licence;
    },
  };
}

/** The path and query of a URL the service made, for h.request (its host is the configured public URL). */
export const pathOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

/** A Tauri `.sig` file's content: standard base64 of a minisign signature file. */
export const tauriSig = (label: string) => Buffer.from(`untrusted comment: signature from tauri secret key\n${label}\n`).toString('base64');
/** A Sparkle EdDSA signature: standard base64 of 64 bytes. */
export const edSig = (byte: number) => Buffer.alloc(64, byte).toString('base64');

/** An upload to `url` (a release's artifacts path) whose connection breaks off after 1,000 of its 3,000 bytes. */
export function brokenUpload(url: string, token: string): Promise<void> {
  return new Promise((resolve) => {
    const request = http.request(`${url}?filename=broken.bin&platform=any&arch=any`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-length': '3000' },
    });
    request.on('error', () => resolve());
    request.write(Buffer.alloc(1000));
    setTimeout(() => {
      request.destroy();
      resolve();
    }, 200);
  });
}
