// Shared by the licences-*.test.ts API tests: products, licences, fingerprints and dates.
import { createPublicKey, verify as cryptoVerify, constants } from 'node:crypto';
import { buildFingerprint, parseFingerprint } from '@licensor/protocol';
import { createOrganisation, operatorCtx } from '../src/orgs/service.js';
import { createMember } from '../src/users/service.js';
import { ADMIN_PASSWORD, type Caller, type Harness } from './harness.js';

export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let seq = 0;

/** Creates a product (Ed25519 and the documented defaults unless `body` says otherwise). */
export async function createProduct(caller: Caller, body: Record<string, unknown> = {}) {
  const n = ++seq;
  const response = await caller('POST', '/products', { productKey: `lic-prod-${n}`, name: `Licensed Product ${n}`, ...body });
  if (response.statusCode !== 201) throw new Error(`product creation failed: ${response.statusCode} ${response.body}`);
  return response.data;
}

/** Issues and insists on 201; returns the licence. */
export async function issueOk(caller: Caller, body: Record<string, unknown>, headers?: Record<string, string>) {
  const response = await caller('POST', '/licenses', body, headers);
  if (response.statusCode !== 201) throw new Error(`issue failed: ${response.statusCode} ${response.body}`);
  return response.data;
}

/** A distinct, well-formed fingerprint per label. */
export const fingerprint = (label: string | number) =>
  buildFingerprint({ machine: `machine-${label}`, host: `host-${label}`, mac: `mac-${label}`, cpu: `cpu-${label}`, disk: `disk-${label}` });

// Calendar arithmetic of the tests' own, on `YYYY-MM-DD` text in UTC.
export const todayUtc = () => new Date().toISOString().slice(0, 10);
export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}
export function addMonths(date: string, months: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const monthIndex = y * 12 + (m - 1) + months;
  const year = Math.floor(monthIndex / 12);
  const month = monthIndex % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(Date.UTC(year, month, Math.min(d, lastDay))).toISOString().slice(0, 10);
}
/** Start of a date in a UTC organisation. */
export const startUtc = (date: string) => `${date}T00:00:00.000Z`;

/** The stored row of a licence, read directly. */
export const licenceRow = (h: Harness, lid: string) => h.database.db.selectFrom('licences').selectAll().where('lid', '=', lid).executeTakeFirstOrThrow();

export async function countRows(h: Harness, table: 'licences' | 'customers' | 'licence_versions' | 'machine_bindings'): Promise<number> {
  const row = await h.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A live binding made "by a check" (not at issue), written directly: the check API is elsewhere. */
export async function insertCheckBinding(h: Harness, lid: string, label: string | number, boundAt = Date.now()) {
  const licence = await licenceRow(h, lid);
  const fp = fingerprint(label);
  const row = await h.database.db
    .insertInto('machine_bindings')
    .values({
      org_id: licence.org_id,
      licence_id: licence.id,
      fingerprint: fp,
      parts: JSON.stringify(parseFingerprint(fp)),
      bound_at: boundAt,
      released_at: null,
      released_by: null,
      at_issue: 0,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

let orgSeq = 0;

/** An organisation with a plan limit and a signed-in ORG_ADMIN, made as the operator CLI does. */
export async function planOrg(h: Harness, planLimit: number): Promise<{ slug: string; admin: Caller }> {
  const slug = `plan-${++orgSeq}-${process.pid}`;
  await createOrganisation(h.database, { slug, name: `Plan org ${slug}`, planLimit });
  await createMember(await operatorCtx(h.database, slug), { username: 'admin', role: 'ORG_ADMIN', password: ADMIN_PASSWORD });
  return { slug, admin: h.as({ cookie: await h.signIn('admin', ADMIN_PASSWORD, slug) }, slug) };
}

/** Verifies a licence string with bare node:crypto and the product's public key PEM. */
export function nodeVerifies(licenseString: string, publicKeyPem: string, algorithm: string): boolean {
  const [payloadPart, signaturePart] = licenseString.split('.') as [string, string];
  const data = Buffer.from(payloadPart, 'ascii');
  const signature = Buffer.from(signaturePart, 'base64url');
  const key = createPublicKey(publicKeyPem);
  switch (algorithm) {
    case 'ED25519':
      return cryptoVerify(null, data, key, signature);
    case 'RSA_2048':
    case 'RSA_3072':
    case 'RSA_4096':
      return cryptoVerify('sha256', data, { key, padding: constants.RSA_PKCS1_PADDING }, signature);
    case 'EC_P256':
      return cryptoVerify('sha256', data, { key, dsaEncoding: 'der' }, signature);
    case 'EC_P384':
      return cryptoVerify('sha384', data, { key, dsaEncoding: 'der' }, signature);
    default:
      throw new Error(`unknown algorithm ${algorithm}`);
  }
}

/** The payload part decoded as text: the exact signed JSON. */
export const payloadText = (licenseString: string) => Buffer.from(licenseString.split('.')[0]!, 'base64url').toString('utf8');
