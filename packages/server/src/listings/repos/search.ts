import { sql, type SqlBool } from 'kysely';
import { substringPattern, type DialectName } from '../../db/database.js';
import type { Tenant } from '../../db/tenant.js';

/*
 * How `q` finds its licences (issue 15). Both databases index every three-character substring
 * of search_text (SQLite: FTS5's trigram table; PostgreSQL: licence_trigrams). Asking the index
 * for every trigram of the phrase is slow when they are common (in `customer 4242`, `cus` is in
 * every row), so a search asks only for its two rarest, judged on a sample of the organisation's
 * licences, and confirms each candidate with the substring test. When even the rarest trigram is
 * in a large share of rows, or the phrase is shorter than three characters, the index cannot
 * narrow much and the licences are scanned.
 */

export interface Search {
  q: string;
  dialect: DialectName;
  /** The trigrams to ask the index for; null to scan. */
  trigrams: string[] | null;
  /** The products whose name holds `q`: all their licences match. */
  productIds: number[];
}

const SAMPLE_SIZE = 2000;
const SAMPLE_TTL_MS = 10 * 60_000;
/** A trigram in more than this share of the sample is too common for the index to pay. */
const SCAN_ABOVE = 0.3;
const samples = new Map<number, { at: number; texts: string[] }>();

/** The distinct three-character substrings of the lower-cased phrase (by code point, as both indexes count). */
export function trigramsOf(q: string): string[] {
  const chars = [...q.toLowerCase()];
  return [...new Set(chars.slice(2).map((_, i) => chars.slice(i, i + 3).join('')))];
}

/** The newest licences' search text, kept for a few minutes: only an estimate of what is common. */
async function sampleOf(t: Tenant): Promise<string[]> {
  const kept = samples.get(t.orgId);
  if (kept && Date.now() - kept.at < SAMPLE_TTL_MS) return kept.texts;
  const rows = await t.selectFrom('licences').select('search_text').orderBy('id', 'desc').limit(SAMPLE_SIZE).execute();
  const texts = rows.map((r) => r.search_text);
  samples.set(t.orgId, { at: Date.now(), texts });
  return texts;
}

export async function planSearch(t: Tenant, dialect: DialectName, q: string): Promise<Search> {
  const products = await t
    .selectFrom('products')
    .select('products.id')
    .where(sql<SqlBool>`lower(products.name) like ${substringPattern(q)} escape '\\'`)
    .execute();
  return { q, dialect, trigrams: await rarestTrigrams(t, q), productIds: products.map((p) => Number(p.id)) };
}

async function rarestTrigrams(t: Tenant, q: string): Promise<string[] | null> {
  const trigrams = trigramsOf(q);
  if (trigrams.length === 0) return null;
  const texts = await sampleOf(t);
  const ranked = trigrams.map((trigram) => ({ trigram, in: texts.reduce((n, text) => (text.includes(trigram) ? n + 1 : n), 0) })).sort((a, b) => a.in - b.in);
  if (ranked[0]!.in > SCAN_ABOVE * texts.length) return null;
  return ranked.slice(0, 2).map((r) => r.trigram);
}

/** What `q` matches: licensee, email, lid and notes, lower-cased (product names are matched separately). */
export function searchText(fields: { licensee: string; email: string | null; lid: string; notes: string | null }): string {
  return [fields.licensee, fields.email ?? '', fields.lid, fields.notes ?? ''].join('\n').toLowerCase();
}
