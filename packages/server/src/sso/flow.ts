import { createHash, randomBytes } from 'node:crypto';
import type net from 'node:net';
import * as oidc from 'openid-client';
import { recordAudit } from '../audit/audit.js';
import { insertSession } from '../auth/repo.js';
import { SESSION_LIFETIME_MS } from '../auth/credentials.js';
import type { Organisation } from '../core/context.js';
import { badRequest } from '../core/errors.js';
import { digestsEqual, newSecret, sha256Hex } from '../core/secrets.js';
import type { Database } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import { inTransaction } from '../core/transaction.js';
import { insertMember } from '../users/service.js';
import { findUser, type UserRow } from '../users/repo.js';
import { breakGlassIds, openSecret, ssoUrl, type RoleRule, type SsoRole } from './config.js';
import { clientFor, idpProblemIn } from './idp.js';
import {
  findConfigRow,
  findLinkedMember,
  hasPasskey,
  insertState,
  membersByEmail,
  membersWithCredentials,
  setMember,
  spendState,
  updateConfigRow,
  usernameTaken,
  type SsoConfigRow,
} from './repo.js';

/** DESIGN.md 21: a pending sign-in lasts ten minutes. */
const STATE_MS = 10 * 60_000;
export const SSO_COOKIE = 'svc_sso';
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;

/** A refusal of the flow: the sign-in page shows its code as a sentence. */
export class SsoRefusal extends Error {
  constructor(
    readonly code: string,
    readonly details: { emailDomain?: string | null; memberId?: number | null; roleClaimValues?: string[]; role?: string | null } = {},
  ) {
    super(code);
  }
}

const random = () => randomBytes(32).toString('base64url');
const signInPage = (base: string, slug: string, code: string) => `${base}/o/${slug}/sign-in?ssoError=${code}`;

/** `returnTo`: a path of this organisation's console, never its API, nothing that leaves the site. */
export function checkReturnTo(slug: string, value: string | undefined): string {
  const path = value ?? `/o/${slug}/`;
  const prefix = `/o/${slug}/`;
  if (
    path.length > 1024 ||
    !path.startsWith(prefix) ||
    path.startsWith(`${prefix}api/`) ||
    path.includes('//') ||
    path.includes('\\') ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a control character is what this refuses
    /[\x00-\x1F\x7F]/.test(path)
  ) {
    throw badRequest(`returnTo must be a path under ${prefix} outside ${prefix}api/`);
  }
  return path;
}

const settingsOf = (row: SsoConfigRow, masterKey: Buffer) => ({
  orgId: row.org_id,
  version: row.version,
  issuer: row.issuer,
  clientId: row.client_id,
  clientSecret: openSecret(masterKey, row),
});

export interface StartAnswer {
  location: string;
  /** The `svc_sso` value to set, when the sign-in goes to the IdP. */
  cookie: string | null;
  /** The refusal's code when `location` is the sign-in page. */
  refused: string | null;
}

/**
 * DESIGN.md 21's start: the state, nonce and PKCE verifier kept in the database (so any instance
 * finishes it), bound to the browser's `svc_sso` cookie, and the IdP's authorization URL.
 */
export async function startSignIn(
  database: Database,
  masterKey: Buffer,
  allowed: net.BlockList,
  base: string,
  org: Organisation,
  input: { returnTo: string; prompt?: string | undefined; cookie?: string | undefined; linkUserId?: number },
): Promise<StartAnswer> {
  const t = tenant(database.db, org.id);
  const row = await findConfigRow(t);
  const refuse = (code: string): StartAnswer => ({ location: signInPage(base, org.slug, code), cookie: null, refused: code });
  if (row?.enabled !== 1) return refuse('SSO_DISABLED');
  if (org.suspended) return refuse('ORG_SUSPENDED');
  const now = Date.now();
  let config: oidc.Configuration;
  try {
    config = await clientFor(settingsOf(row, masterKey), allowed, now);
  } catch (err) {
    if (idpProblemIn(err)) return refuse('IDP_UNAVAILABLE');
    throw err;
  }
  const state = random();
  const nonce = random();
  const verifier = random();
  const cookie = input.cookie !== undefined && COOKIE_VALUE.test(input.cookie) ? input.cookie : random();
  await insertState(
    t,
    {
      state_hash: sha256Hex(state),
      nonce,
      code_verifier: verifier,
      return_to: input.returnTo,
      binding: sha256Hex(cookie),
      link_user_id: input.linkUserId ?? null,
      expires_at: now + STATE_MS,
    },
    now,
  );
  const url = oidc.buildAuthorizationUrl(config, {
    response_type: 'code',
    redirect_uri: ssoUrl(base, org.slug, 'callback'),
    scope: (JSON.parse(row.scopes) as string[]).join(' '),
    state,
    nonce,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...(input.prompt ? { prompt: input.prompt } : {}),
  });
  return { location: url.href, cookie, refused: null };
}

type Claims = Record<string, unknown>;

const ENTRA = /^https:\/\/login\.microsoftonline\.com\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/v2\.0$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** The verified email, or EMAIL_NOT_VERIFIED (Entra's `xms_edov` stands in when neither source says). */
function verifiedEmail(claims: Claims, issuer: string): string {
  const email = claims.email;
  const flag = claims.email_verified;
  const verified = flag === undefined ? ENTRA.test(issuer) && claims.xms_edov === true : flag === true || flag === 'true';
  if (typeof email !== 'string' || email.length > 320 || !EMAIL.test(email) || !verified)
    throw new SsoRefusal('EMAIL_NOT_VERIFIED', { emailDomain: typeof email === 'string' ? domainOf(email) : null });
  return email;
}

const domainOf = (email: string) => email.slice(email.lastIndexOf('@') + 1).toLowerCase();

/** The claim named by the whole path, else the path walked at its dots; a string is one value, an array its strings. */
export function claimValues(claims: Claims, path: string): string[] {
  let value: unknown = claims[path];
  if (value === undefined) {
    value = claims;
    for (const part of path.split('.')) value = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Claims)[part] : undefined;
  }
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The username a provisioned member gets: the email lower-cased, other characters `-`, at most 64, `-2`, `-3`… when taken. */
async function freeUsername(t: Tenant, email: string): Promise<string> {
  const stem = email
    .toLowerCase()
    .replace(/[^a-z0-9._@-]/g, '-')
    .slice(0, 64);
  if (!(await usernameTaken(t, stem))) return stem;
  for (let n = 2; ; n++) {
    const candidate = `${stem.slice(0, 64 - `-${n}`.length)}-${n}`;
    if (!(await usernameTaken(t, candidate))) return candidate;
  }
}

export interface CallbackInput {
  query: Record<string, string | undefined>;
  cookie: string | undefined;
}

export interface CallbackAnswer {
  location: string;
  /** The new `svc_session` value on success. */
  session: string | null;
  outcome: string;
}

interface SignedIn {
  member: UserRow;
  provisioned: boolean;
  linked: boolean;
  roleFrom: string | null;
  roleTo: string;
}

/**
 * DESIGN.md 21's callback, in its order: the state spent and the browser binding compared; the
 * configuration and organisation; the IdP's answer, the code exchange and the ID token's checks
 * (openid-client); the claims, the member and the role; then the session.
 */
export async function finishSignIn(
  database: Database,
  masterKey: Buffer,
  allowed: net.BlockList,
  base: string,
  org: Organisation,
  input: CallbackInput,
): Promise<CallbackAnswer> {
  const t = tenant(database.db, org.id);
  const now = Date.now();
  const refused = (code: string): CallbackAnswer => ({ location: signInPage(base, org.slug, code), session: null, outcome: code });
  const state = input.query.state;
  const pending = state === undefined ? undefined : await spendState(t, sha256Hex(state), now);
  if (!pending || input.cookie === undefined || !COOKIE_VALUE.test(input.cookie) || !digestsEqual(pending.binding, sha256Hex(input.cookie)))
    return refused('STATE_INVALID');
  const row = await findConfigRow(t);
  try {
    if (row?.enabled !== 1) throw new SsoRefusal('SSO_DISABLED');
    if (org.suspended) throw new SsoRefusal('ORG_SUSPENDED');
    if (input.query.error !== undefined) throw new SsoRefusal('IDP_ERROR');
    const claims = await exchange(row, masterKey, allowed, base, org, input.query, pending);
    const cookieValue = newSecret();
    // Under the organisation's lock: concurrent first sign-ins of one `sub` make one member and one link.
    await inTransaction(
      { database, org },
      async (tt) => {
        const result = pending.link_user_id === null ? await memberFor(tt, row, claims, now) : await linkingMember(tt, row, claims, pending.link_user_id, now);
        const member = result.member;
        await insertSession(tt, {
          id: sha256Hex(cookieValue),
          user_id: member.id,
          created_at: now,
          last_seen_at: now,
          expires_at: now + SESSION_LIFETIME_MS,
          method: 'sso',
          sso_at: now,
          hard_end: now + SESSION_LIFETIME_MS,
        });
        const fresh = (await findConfigRow(tt))!;
        await updateConfigRow(tt, {
          last_attempt: attempt(now, 'SIGNED_IN', member.username, claims.emailDomain, claims.roleClaimValues, member.role),
          ...(fresh.verified_at === null && member.role === 'ORG_ADMIN' ? { verified_at: now } : {}),
        });
        await recordAudit(
          tt,
          { actor: { name: member.username }, now },
          {
            action: 'auth.sso_login',
            subjectType: 'user',
            subjectId: member.id,
            summary: `${member.username} signed in with ${row.display_name}`,
            details: { provisioned: result.provisioned, linked: result.linked, roleFrom: result.roleFrom, roleTo: result.roleTo },
          },
        );
        return result;
      },
      { lockOrganisation: true },
    );
    return { location: `${base}${pending.return_to}`, session: cookieValue, outcome: 'SIGNED_IN' };
  } catch (err) {
    if (!(err instanceof SsoRefusal)) throw err;
    if (row) await recordRefusal(database, org, err, now);
    return refused(err.code);
  }
}

const attempt = (at: number, outcome: string, member: string | null, emailDomain: string | null, values: string[], role: string | null) =>
  JSON.stringify({ at: new Date(at).toISOString(), outcome, member, emailDomain, roleClaimValues: values.slice(0, 20), role });

/** `auth.sso_refused` (actor `sso`) and the configuration's `lastAttempt`: a domain, never an outsider's email. */
async function recordRefusal(database: Database, org: Organisation, refusal: SsoRefusal, now: number): Promise<void> {
  const { emailDomain = null, memberId = null, roleClaimValues = [], role = null } = refusal.details;
  await inTransaction({ database, org }, async (tt) => {
    if (!(await findConfigRow(tt))) return;
    await updateConfigRow(tt, { last_attempt: attempt(now, refusal.code, null, emailDomain, roleClaimValues, role) });
    await recordAudit(
      tt,
      { actor: { name: 'sso' }, now },
      {
        action: 'auth.sso_refused',
        subjectType: 'sso',
        subjectId: memberId,
        summary: `A single sign-on was refused: ${refusal.code}`,
        details: { reason: refusal.code, emailDomain, memberId },
      },
    );
  });
}

interface Verified {
  sub: string;
  email: string;
  emailDomain: string;
  name: string | null;
  roleClaimValues: string[];
  /** The mapped role; null when roles are not mapped. */
  role: SsoRole | null;
}

/** The code exchanged (PKCE, `redirect_uri`), the ID token checked, the claims judged; IdP tokens used once and dropped. */
async function exchange(
  row: SsoConfigRow,
  masterKey: Buffer,
  allowed: net.BlockList,
  base: string,
  org: Organisation,
  query: Record<string, string | undefined>,
  pending: { nonce: string; code_verifier: string },
): Promise<Verified> {
  const redirectUri = ssoUrl(base, org.slug, 'callback');
  let tokenAnswered = false;
  let config: oidc.Configuration;
  try {
    config = await clientFor(settingsOf(row, masterKey), allowed, Date.now(), (url, status) => {
      if (url === config.serverMetadata().token_endpoint && status === 200) tokenAnswered = true;
    });
  } catch (err) {
    if (idpProblemIn(err)) throw new SsoRefusal('IDP_UNAVAILABLE');
    throw err;
  }
  const issuer = config.serverMetadata().issuer;
  // RFC 9207: an `iss` naming another issuer is a mix-up, refused before any code is sent.
  if (query.iss !== undefined && query.iss !== issuer) throw new SsoRefusal('ID_TOKEN_INVALID');
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  try {
    tokens = await oidc.authorizationCodeGrant(
      config,
      new URL(`${redirectUri}?${params}`),
      { pkceCodeVerifier: pending.code_verifier, expectedNonce: pending.nonce, expectedState: query.state, idTokenExpected: true },
      { redirect_uri: redirectUri },
    );
  } catch (err) {
    if (idpProblemIn(err)) throw new SsoRefusal('IDP_UNAVAILABLE');
    throw new SsoRefusal(tokenAnswered ? 'ID_TOKEN_INVALID' : 'TOKEN_EXCHANGE_FAILED');
  }
  const idClaims = tokens.claims();
  if (!idClaims) throw new SsoRefusal('ID_TOKEN_INVALID');
  let claims: Claims = { ...idClaims };
  const needs = ['email', 'email_verified', ...(row.role_claim ? [row.role_claim.split('.')[0]!] : [])].some((c) => claims[c] === undefined);
  if (needs && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
    try {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub);
      claims = { ...info, ...Object.fromEntries(Object.entries(claims).filter(([, v]) => v !== undefined)) };
    } catch (err) {
      if (idpProblemIn(err)) throw new SsoRefusal('IDP_UNAVAILABLE');
      throw new SsoRefusal('TOKEN_EXCHANGE_FAILED');
    }
  }
  const email = verifiedEmail(claims, row.issuer);
  const emailDomain = domainOf(email);
  if (!(JSON.parse(row.allowed_domains) as string[]).includes(emailDomain)) throw new SsoRefusal('DOMAIN_NOT_ALLOWED', { emailDomain });
  const roleClaimValues = row.role_claim ? claimValues(claims, row.role_claim) : [];
  let role: SsoRole | null = null;
  if (row.role_claim) {
    const rule = (JSON.parse(row.role_rules) as RoleRule[]).find((r) => roleClaimValues.includes(r.value));
    role = rule?.role ?? (row.default_role as SsoRole | null);
    if (role === null) throw new SsoRefusal('NO_ROLE', { emailDomain, roleClaimValues });
  }
  return {
    sub: idClaims.sub,
    email,
    emailDomain,
    name: typeof claims.name === 'string' && claims.name.trim() !== '' ? claims.name.slice(0, 200) : null,
    roleClaimValues,
    role,
  };
}

/** The member this identity signs in: linked by `sub`, linked now by a verified email, or provisioned (DESIGN.md 21). */
async function memberFor(t: Tenant, row: SsoConfigRow, claims: Verified, now: number): Promise<SignedIn> {
  const known = { emailDomain: claims.emailDomain, roleClaimValues: claims.roleClaimValues, role: claims.role };
  let member = await findLinkedMember(t, claims.sub);
  let linked = false;
  let provisioned = false;
  if (!member) {
    const matches = await membersByEmail(t, claims.email);
    if (matches.length === 1 && matches[0]!.sso_sub === null && matches[0]!.password_hash === null && !matches[0]!.has_passkey) {
      member = await setMember(t, matches[0]!.id, { sso_sub: claims.sub, sso_linked_at: now });
      linked = true;
      await recordAudit(
        t,
        { actor: { name: 'sso' }, now },
        { action: 'sso.linked', subjectType: 'user', subjectId: member.id, summary: `Linked ${member.username} to ${row.display_name} by its verified email` },
      );
    } else if (matches.length > 0) {
      throw new SsoRefusal('ACCOUNT_NOT_LINKED', { ...known, memberId: matches.length === 1 ? matches[0]!.id : null });
    } else if (row.jit_provisioning === 1) {
      const username = await freeUsername(t, claims.email);
      const created = await insertMember(
        t,
        { actor: { kind: 'system', name: 'sso' }, now },
        { username, displayName: claims.name ?? claims.email, email: claims.email, role: claims.role ?? (row.default_role as SsoRole) },
        null,
      );
      member = await setMember(t, created.id, { sso_sub: claims.sub, sso_linked_at: now });
      provisioned = true;
    } else {
      throw new SsoRefusal('NOT_PROVISIONED', known);
    }
  }
  return signedIn(t, row, claims, member, { linked, provisioned }, now);
}

/**
 * A link's callback (`POST /auth/sso/link`): the member who asked is linked to this `sub`, an older
 * link of its own replaced; a `sub` linked to another member is ALREADY_LINKED.
 */
async function linkingMember(t: Tenant, row: SsoConfigRow, claims: Verified, userId: number, now: number): Promise<SignedIn> {
  const known = { emailDomain: claims.emailDomain, roleClaimValues: claims.roleClaimValues, role: claims.role };
  const holder = await findLinkedMember(t, claims.sub);
  if (holder && holder.id !== userId) throw new SsoRefusal('ALREADY_LINKED', { ...known, memberId: userId });
  let member = await findUser(t, userId);
  if (!member) throw new SsoRefusal('MEMBER_INACTIVE', known);
  if (member.active !== 1) throw new SsoRefusal('MEMBER_INACTIVE', { ...known, memberId: member.id });
  const linked = member.sso_sub !== claims.sub;
  if (linked) {
    const replaced = member.sso_sub !== null;
    member = await setMember(t, member.id, { sso_sub: claims.sub, sso_linked_at: now });
    await recordAudit(
      t,
      { actor: { name: member.username }, now },
      {
        action: 'sso.linked',
        subjectType: 'user',
        subjectId: member.id,
        summary: `${member.username} linked their account to ${row.display_name}${replaced ? ', replacing an older link' : ''}`,
        details: { replaced },
      },
    );
  }
  return signedIn(t, row, claims, member, { linked, provisioned: false }, now);
}

/** The member signs in: the mapped role set (unless it keeps its own), `email` the verified one, the sign-in stamped. */
async function signedIn(
  t: Tenant,
  row: SsoConfigRow,
  claims: Verified,
  found: UserRow,
  { linked, provisioned }: { linked: boolean; provisioned: boolean },
  now: number,
): Promise<SignedIn> {
  let member = found;
  const known = { emailDomain: claims.emailDomain, roleClaimValues: claims.roleClaimValues, role: claims.role };
  if (member.active !== 1) throw new SsoRefusal('MEMBER_INACTIVE', { ...known, memberId: member.id });
  const roleFrom = member.role;
  let role = member.role;
  if (claims.role !== null && claims.role !== member.role && !(await keepsRole(t, row, member))) role = claims.role;
  member = await setMember(t, member.id, { role, email: claims.email, sso_signed_in_at: now, last_login_at: now });
  return { member, provisioned, linked, roleFrom: provisioned ? null : roleFrom, roleTo: role };
}

/** A break-glass member, and the last active ORG_ADMIN with a password or passkey, keep their role. */
async function keepsRole(t: Tenant, row: SsoConfigRow, member: UserRow): Promise<boolean> {
  if ((await breakGlassIds(t, row)).includes(member.id)) return true;
  if (member.role !== 'ORG_ADMIN' || member.active !== 1) return false;
  if (member.password_hash === null && !(await hasPasskey(t, member.id))) return false;
  const others = (await membersWithCredentials(t)).filter(
    (m) => m.id !== member.id && m.role === 'ORG_ADMIN' && m.active === 1 && (m.password_hash !== null || Boolean(m.has_passkey)),
  );
  return others.length === 0;
}
