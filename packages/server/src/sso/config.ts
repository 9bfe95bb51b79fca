import type net from 'node:net';
import { recordAudit } from '../audit/audit.js';
import type { Ctx, Organisation } from '../core/context.js';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { ApiError, conflict, forbidden, invalid, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { inTransaction } from '../core/transaction.js';
import type { Tenant } from '../db/tenant.js';
import { seal, unseal } from '../keys/sealing.js';
import { forgetClient, testConnection } from './idp.js';
import {
  deleteConfigRow,
  endSsoSessions,
  unlinkRow,
  findConfigRow,
  insertConfigRow,
  membersWithCredentials,
  removeLinks,
  updateConfigRow,
  type SsoConfigRow,
} from './repo.js';

export const ROLE_VALUES = ['ORG_ADMIN', 'ISSUER', 'VIEWER'] as const;
export type SsoRole = (typeof ROLE_VALUES)[number];

export interface RoleRule {
  value: string;
  role: SsoRole;
}

/** The fields a PUT may carry (DESIGN.md 21); the output-only ones are dropped before this. */
export interface SsoInput {
  enabled?: boolean | undefined;
  displayName?: string | undefined;
  issuer?: string | undefined;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  scopes?: string[] | undefined;
  allowedDomains?: string[] | undefined;
  roleClaim?: string | null | undefined;
  roleRules?: RoleRule[] | undefined;
  defaultRole?: SsoRole | null | undefined;
  jitProvisioning?: boolean | undefined;
  enforce?: boolean | undefined;
  breakGlass?: string[] | undefined;
}

export const OUTPUT_ONLY = [
  'clientSecretSet',
  'clientSecretUpdatedAt',
  'redirectUri',
  'verifiedAt',
  'lastAttempt',
  'createdAt',
  'updatedAt',
  'updatedBy',
] as const;

/** Where the IdP sends the browser back, and where a sign-in starts: `{base}/o/{slug}/api/sso/...`. */
export const ssoUrl = (base: string, slug: string, leaf: 'callback' | 'start') => `${base}/o/${slug}/api/sso/${leaf}`;

export const sealContext = (orgId: number) => `sso:${orgId}`;

export const openSecret = (masterKey: Buffer, row: SsoConfigRow) => unseal(masterKey, row.client_secret, sealContext(row.org_id)).toString('utf8');

/** The member ids kept as break-glass that still qualify: active ORG_ADMINs with a password or passkey. */
async function eligibleAdmins(t: Tenant) {
  const members = await membersWithCredentials(t);
  return members.filter((m) => m.role === 'ORG_ADMIN' && m.active === 1 && (m.password_hash !== null || Boolean(m.has_passkey)));
}

export async function breakGlassIds(t: Tenant, row: Pick<SsoConfigRow, 'break_glass'>): Promise<number[]> {
  const eligible = new Set((await eligibleAdmins(t)).map((m) => m.id));
  return (JSON.parse(row.break_glass) as number[]).filter((id) => eligible.has(id));
}

export async function toSsoConfig(t: Tenant, row: SsoConfigRow, base: string, slug: string) {
  const members = new Map((await membersWithCredentials(t)).map((m) => [m.id, m.username]));
  const ids = await breakGlassIds(t, row);
  return {
    enabled: row.enabled === 1,
    displayName: row.display_name,
    issuer: row.issuer,
    clientId: row.client_id,
    clientSecretSet: true,
    clientSecretUpdatedAt: iso(row.client_secret_updated_at),
    scopes: JSON.parse(row.scopes) as string[],
    allowedDomains: JSON.parse(row.allowed_domains) as string[],
    roleClaim: row.role_claim,
    roleRules: JSON.parse(row.role_rules) as RoleRule[],
    defaultRole: row.default_role,
    jitProvisioning: row.jit_provisioning === 1,
    enforce: row.enforce === 1,
    breakGlass: ids.map((id) => members.get(id)!),
    redirectUri: ssoUrl(base, slug, 'callback'),
    verifiedAt: iso(row.verified_at),
    lastAttempt: row.last_attempt === null ? null : JSON.parse(row.last_attempt),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    updatedBy: row.updated_by,
  };
}

async function requireConfig(t: Tenant): Promise<SsoConfigRow> {
  const row = await findConfigRow(t);
  if (!row) throw notFound('single sign-on is not configured');
  return row;
}

/** `GET /auth/methods`: what the sign-in page offers. */
export async function signInMethods(database: Database, base: string, org: Organisation) {
  const row = await findConfigRow(tenant(database.db, org.id));
  if (row?.enabled !== 1) return { sso: null };
  return { sso: { displayName: row.display_name, enforced: row.enforce === 1, startUrl: ssoUrl(base, org.slug, 'start') } };
}

export async function getSsoConfig(ctx: Ctx, base: string) {
  return toSsoConfig(ctx.tenant, await requireConfig(ctx.tenant), base, ctx.org.slug);
}

// Syntax rules the schema's lengths leave to words (DESIGN.md 21).
const PRINTABLE_ASCII = /^[\x20-\x7E]+$/;
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const DOMAIN = new RegExp(`^(?=.{1,253}$)(?:${LABEL}\\.)+${LABEL}$`);
const CLAIM_PATH = /^[\x21-\x2D\x2F-\x7E]+(?:\.[\x21-\x2D\x2F-\x7E]+)*$/;

/** The issuer as stored: absolute http(s), no query, fragment or user info, without a trailing `/`. */
function normalisedIssuer(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('issuer', 'must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('issuer', 'must start with https://');
  if (url.search !== '' || raw.includes('?')) throw invalid('issuer', 'may not carry a query');
  if (url.hash !== '' || raw.includes('#')) throw invalid('issuer', 'may not carry a fragment');
  if (url.username !== '' || url.password !== '') throw invalid('issuer', 'may not carry a user name or password');
  return url.href.replace(/\/+$/, '');
}

function checkSyntax(input: SsoInput): void {
  if (input.clientId !== undefined && !PRINTABLE_ASCII.test(input.clientId)) throw invalid('clientId', 'must be printable ASCII characters');
  if (input.clientSecret !== undefined && !PRINTABLE_ASCII.test(input.clientSecret)) throw invalid('clientSecret', 'must be printable ASCII characters');
  if (input.scopes !== undefined) {
    const bad = input.scopes.findIndex((s) => !SCOPE_TOKEN.test(s));
    if (bad >= 0) throw invalid(`scopes[${bad}]`, 'not a scope (printable ASCII without spaces, quotes or backslashes)', `Scope ${bad + 1}`);
    if (!input.scopes.includes('openid')) throw invalid('scopes', 'must include openid');
  }
  if (input.allowedDomains !== undefined) {
    const bad = input.allowedDomains.findIndex((d) => !DOMAIN.test(d));
    if (bad >= 0)
      throw invalid(`allowedDomains[${bad}]`, 'must be a lower-case host name with at least one dot (no @, * or port)', `Allowed domain ${bad + 1}`);
  }
  if (input.roleClaim != null && !CLAIM_PATH.test(input.roleClaim))
    throw invalid('roleClaim', 'must be a claim path: printable ASCII, no spaces, no empty part between dots');
}

/** A platform account's PUT may only switch single sign-on or its enforcement off (DESIGN.md 21). */
function refusePlatformChange(ctx: Ctx, input: SsoInput): void {
  if (ctx.actor.kind !== 'platform') return;
  const onlyOff = Object.entries(input).every(([k, v]) => v === undefined || ((k === 'enabled' || k === 'enforce') && v === false));
  if (!onlyOff) throw forbidden('a platform account may only turn single sign-on or its enforcement off inside an organisation');
}

const REQUIRED_AT_FIRST = ['displayName', 'issuer', 'clientId', 'clientSecret', 'allowedDomains'] as const;

/**
 * DESIGN.md 21's PUT: judged on the configuration it would leave, in its order, nothing saved on
 * a refusal; discovery and the JWKS checked when it creates the configuration or changes the issuer.
 */
export async function putSsoConfig(ctx: Ctx, masterKey: Buffer, allowed: net.BlockList, base: string, input: SsoInput) {
  refusePlatformChange(ctx, input);
  checkSyntax(input);
  const issuer = input.issuer === undefined ? undefined : normalisedIssuer(input.issuer);
  const before = await findConfigRow(ctx.tenant);
  if (!before) for (const field of REQUIRED_AT_FIRST) if (input[field] === undefined) throw invalid(field, 'required to set up single sign-on');
  const issuerChanged = issuer !== undefined && issuer !== before?.issuer;
  const clientChanged = input.clientId !== undefined && input.clientId !== before?.client_id;
  const enabled = input.enabled ?? (before ? before.enabled === 1 : true);
  const enforce = input.enabled === false ? false : (input.enforce ?? before?.enforce === 1);
  if (before && (issuerChanged || clientChanged) && enforce)
    throw new ApiError(409, 'turn enforcement off before changing the issuer or client ID', {}, { reason: 'SSO_ENFORCED' });
  const roleClaim = input.roleClaim !== undefined ? input.roleClaim : (before?.role_claim ?? null);
  const defaultRole = input.defaultRole !== undefined ? input.defaultRole : before ? before.default_role : 'VIEWER';
  const jit = input.jitProvisioning ?? before?.jit_provisioning === 1;
  if (jit && roleClaim === null && defaultRole === null) throw invalid('defaultRole', 'needed to create members at first sign-in when roles are not mapped');
  const eligible = await eligibleAdmins(ctx.tenant);
  let breakGlass: number[];
  if (input.breakGlass !== undefined) {
    breakGlass = [];
    for (const username of input.breakGlass) {
      const member = eligible.find((m) => m.username === username);
      if (!member) throw invalid('breakGlass', `${username} is not an active administrator with a password or passkey`, 'Break-glass administrators');
      if (!breakGlass.includes(member.id)) breakGlass.push(member.id);
    }
  } else breakGlass = before ? await breakGlassIds(ctx.tenant, before) : [];
  const verifiedAt = issuerChanged || clientChanged ? null : (before?.verified_at ?? null);
  if (input.enforce === true && !enabled) throw invalid('enforce', 'single sign-on must be on to be required');
  if (enforce) {
    if (breakGlass.length === 0)
      throw invalid('breakGlass', 'requiring single sign-on needs at least one break-glass administrator', 'Break-glass administrators');
    if (verifiedAt === null)
      throw new ApiError(409, 'an ORG_ADMIN must sign in once with single sign-on before it can be required', {}, { reason: 'SSO_NOT_VERIFIED' });
  }
  const scopes = input.scopes ?? (before ? (JSON.parse(before.scopes) as string[]) : ['openid', 'email', 'profile']);
  if (!before || issuerChanged) {
    const result = await testConnection(issuer!, scopes, allowed);
    const error = result.problems.find((p) => p.severity === 'error');
    if (error) throw new ApiError(400, error.message, {}, { reason: error.code });
  }

  const secret = input.clientSecret === undefined ? null : seal(masterKey, Buffer.from(input.clientSecret, 'utf8'), sealContext(ctx.org.id));
  const values = {
    enabled: enabled ? 1 : 0,
    display_name: input.displayName ?? before!.display_name,
    issuer: issuer ?? before!.issuer,
    client_id: input.clientId ?? before!.client_id,
    client_secret: secret ?? before!.client_secret,
    client_secret_updated_at: secret ? ctx.now : before!.client_secret_updated_at,
    scopes: JSON.stringify(scopes),
    allowed_domains: input.allowedDomains ? JSON.stringify(input.allowedDomains) : before!.allowed_domains,
    role_claim: roleClaim,
    role_rules: input.roleRules ? JSON.stringify(input.roleRules.map(({ value, role }) => ({ value, role }))) : (before?.role_rules ?? '[]'),
    default_role: defaultRole,
    jit_provisioning: jit ? 1 : 0,
    enforce: enforce ? 1 : 0,
    break_glass: JSON.stringify(breakGlass),
    verified_at: verifiedAt,
    version: (before?.version ?? 0) + 1,
    updated_at: ctx.now,
    updated_by: ctx.actor.name,
  };
  // Only fields whose value differs count as changed: a GET-then-PUT round trip writes nothing.
  const changed = before
    ? (Object.keys(values) as Array<keyof typeof values>).filter((k) => k !== 'version' && k !== 'updated_at' && k !== 'updated_by' && values[k] !== before[k])
    : [];
  if (before && changed.length === 0) return { created: false, config: await toSsoConfig(ctx.tenant, before, base, ctx.org.slug) };
  const saved = await inTransaction(ctx, async (t) => {
    if (!before) {
      await insertConfigRow(t, { ...values, last_attempt: null, created_at: ctx.now });
      await recordAudit(t, ctx, { action: 'sso.created', subjectType: 'sso', subjectId: null, summary: `Set up single sign-on with ${values.display_name}` });
    } else {
      await updateConfigRow(t, values);
      const linksRemoved = issuerChanged || clientChanged ? await removeLinks(t) : 0;
      const fields = changed
        .filter((k) => k !== 'client_secret' && k !== 'client_secret_updated_at')
        .map((k) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()));
      await recordAudit(t, ctx, {
        action: 'sso.updated',
        subjectType: 'sso',
        subjectId: null,
        summary: `Changed single sign-on (${[...fields, ...(secret ? ['client secret'] : [])].join(', ')})`,
        details: { fields, clientSecretChanged: secret !== null, linksRemoved },
      });
    }
    return toSsoConfig(t, (await findConfigRow(t))!, base, ctx.org.slug);
  });
  forgetClient(ctx.org.id);
  return { created: !before, config: saved };
}

export async function deleteSsoConfig(ctx: Ctx): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const row = await requireConfig(t);
    await deleteConfigRow(t);
    await removeLinks(t);
    await endSsoSessions(t);
    await recordAudit(t, ctx, { action: 'sso.deleted', subjectType: 'sso', subjectId: null, summary: `Removed single sign-on with ${row.display_name}` });
  });
  forgetClient(ctx.org.id);
}

export async function testSsoConfig(ctx: Ctx, allowed: net.BlockList) {
  const row = await requireConfig(ctx.tenant);
  return testConnection(row.issuer, JSON.parse(row.scopes) as string[], allowed);
}

/** `licensor sso disable`: enabled and enforce off, from the database alone (DESIGN.md 21). */
export async function disableSso(ctx: Ctx): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const row = await findConfigRow(t);
    if (!row) throw conflict(`organisation ${ctx.org.slug} has no single sign-on`);
    await updateConfigRow(t, { enabled: 0, enforce: 0, version: row.version + 1, updated_at: ctx.now, updated_by: ctx.actor.name });
    await recordAudit(t, ctx, {
      action: 'sso.disabled',
      subjectType: 'sso',
      subjectId: null,
      summary: 'Turned single sign-on and its enforcement off from the command line',
    });
  });
}

/** `DELETE /users/{id}/sso-link`: the member signs in with single sign-on no more until linked again; its SSO sessions end. */
export async function unlinkMember(ctx: Ctx, id: number): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const member = await unlinkRow(t, id);
    if (!member) throw notFound(`member ${id} is not linked to single sign-on`);
    await endSsoSessions(t, id);
    await recordAudit(t, ctx, { action: 'sso.unlinked', subjectType: 'user', subjectId: id, summary: `Unlinked ${member.username} from single sign-on` });
  });
}
