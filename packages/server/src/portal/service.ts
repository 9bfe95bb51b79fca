import type { FastifyRequest } from 'fastify';
import { balances, metersOf } from '../usage/service.js';
import { timezoneOf } from '../usage/repo.js';
import { graceEndsAt } from '@licensor/protocol';
import { findCustomerRow } from '../customers/repo.js';
import { findProductRow } from '../products/repo.js';
import {
  endLinkSessions,
  endPortalSessionRow,
  findCustomerLink,
  findPortalSession,
  insertLink,
  insertPortalSession,
  linkByCode,
  linksOf,
  revokeLink,
  useLink,
} from './repo.js';
import { bindingsNewestFirst, liveBindings } from '../seats/repo.js';
import { withActivations } from '../seats/service.js';
import { recordAudit } from '../audit/audit.js';
import { newSecret, sha256Hex } from '../core/secrets.js';
import type { Config } from '../config.js';
import { transaction, type Database } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import type { Ctx, Organisation, PortalSession } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { forbidden, invalid, notFound, unauthorized } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { isLive } from '../seats/live.js';
import { findLicenceView, licenceViews, statusOf, type LicenceView } from '../listings/repos/views.js';
import { lockLicenceRow } from '../licences/repo.js';
import { releaseSelf, selfReleasesInWindow } from '../seats/self-release.js';
import { downloadLicence, portalGrant, portalReleases, resetDownloadLinks, updatesUntilOf, type DownloadDeps } from '../downloads/service.js';

export const PORTAL_COOKIE = 'svc_portal';
const LINK_LIFETIME_MS = 24 * 60 * 60 * 1000;
export const PORTAL_SESSION_MS = 8 * 60 * 60 * 1000;
const SECRET = /^[0-9a-f]{64}$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

async function customerOr404(t: Tenant, customerId: number) {
  const customer = await findCustomerRow(t, customerId);
  if (!customer) throw notFound(`no customer ${customerId}`);
  return customer;
}

const toLink = (row: { id: number; created_at: number; created_by: string; expires_at: number; used_at: number | null; revoked_at: number | null }) => ({
  id: row.id,
  createdAt: iso(row.created_at),
  createdBy: row.created_by,
  expiresAt: iso(row.expires_at),
  usedAt: iso(row.used_at),
  revokedAt: iso(row.revoked_at),
});

/** A single-use link for 24 hours; only the code's SHA-256 is stored, the URL is shown once. */
export async function createPortalLink(ctx: Ctx, publicUrl: string, customerId: number) {
  const code = newSecret();
  const expiresAt = ctx.now + LINK_LIFETIME_MS;
  await inTransaction(ctx, async (t) => {
    const customer = await customerOr404(t, customerId);
    const link = await insertLink(t, {
      customer_id: customerId,
      code_hash: sha256Hex(code),
      created_at: ctx.now,
      created_by: ctx.actor.name,
      expires_at: expiresAt,
      used_at: null,
      revoked_at: null,
    });
    await recordAudit(t, ctx, {
      action: 'portal_link.created',
      subjectType: 'customer',
      subjectId: customerId,
      summary: `Created portal link ${link.id} for ${customer.name}`,
      details: { linkId: link.id, expiresAt: iso(expiresAt) },
    });
  });
  return { url: `${publicUrl}/o/${ctx.org.slug}/portal/${code}`, expiresAt: iso(expiresAt) };
}

export async function listPortalLinks(ctx: Ctx, customerId: number) {
  await customerOr404(ctx.tenant, customerId);
  return (await linksOf(ctx.tenant, customerId)).map(toLink);
}

/** Revokes a link and ends the sessions opened with it. */
export async function revokePortalLink(ctx: Ctx, customerId: number, linkId: number) {
  await inTransaction(ctx, async (t) => {
    const link = await findCustomerLink(t, customerId, linkId);
    if (!link) throw notFound(`no portal link ${linkId} for customer ${customerId}`);
    if (link.revoked_at === null) await revokeLink(t, linkId, ctx.now);
    await endLinkSessions(t, linkId);
    await recordAudit(t, ctx, { action: 'portal_link.revoked', subjectType: 'customer', subjectId: customerId, summary: `Revoked portal link ${linkId}` });
  });
}

/**
 * Uses a link up and opens a portal session: unknown, used, expired and revoked codes all get
 * the same 401. The code is marked used by a conditional update, so two tabs racing with one
 * link open one session.
 */
export async function openPortalSession(database: Database, org: Organisation, code: string, now: number) {
  const invalid = unauthorized('this portal link is not valid any more: ask your vendor for a new one');
  if (!SECRET.test(code)) throw invalid;
  const cookieValue = newSecret();
  const customer = await transaction(database, async (trx) => {
    const t = tenant(trx, org.id);
    const link = await linkByCode(t, sha256Hex(code));
    if (!link || link.used_at !== null || link.revoked_at !== null || link.expires_at <= now) throw invalid;
    if (!(await useLink(t, link.id, now))) throw invalid;
    await insertPortalSession(t, {
      id: sha256Hex(cookieValue),
      customer_id: link.customer_id,
      link_id: link.id,
      created_at: now,
      expires_at: now + PORTAL_SESSION_MS,
    });
    return customerOr404(t, link.customer_id);
  });
  return { cookieValue, customer: { name: customer.name }, organisation: { name: org.name } };
}

/**
 * The portal's credential (DESIGN.md 12): its own cookie only. A token or an organisation's
 * session is a 401 here, as the portal cookie is on the Management API.
 */
export async function authenticatePortal(
  request: FastifyRequest,
  database: Database,
  config: Pick<Config, 'ownOrigins'>,
  org: Organisation,
  now: number,
): Promise<PortalSession> {
  if (request.headers.authorization !== undefined) throw unauthorized('the portal takes its own session only: open your portal link');
  const value = request.cookies[PORTAL_COOKIE];
  if (!value || !SECRET.test(value)) throw unauthorized('portal session expired or signed out: open a new portal link');
  const t = tenant(database.db, org.id);
  const session = await findPortalSession(t, sha256Hex(value));
  if (!session || session.expires_at <= now) throw unauthorized('portal session expired or signed out: open a new portal link');
  const origin = request.headers.origin;
  if (!SAFE_METHODS.has(request.method) && origin !== undefined && !config.ownOrigins.includes(origin)) {
    throw forbidden(`requests from origin ${origin} are not accepted`);
  }
  return { customerId: session.customer_id, sessionId: session.id, tenant: t, actor: `customer/${session.customer_id}` };
}

/** The customer-facing fields of a licence (DESIGN.md 12): never notes, issuer or fingerprint parts. */
function portalItem(view: LicenceView, now: number) {
  const graceEnd = view.expires_at === null ? null : graceEndsAt(Math.floor(view.expires_at / 1000), view.grace_days)! * 1000;
  return {
    lid: view.lid,
    productName: view.product_name,
    licenceType: view.licence_type,
    status: statusOf(view, now),
    startsAt: iso(view.starts_at),
    expiresAt: iso(view.expires_at),
    graceEndsAt: iso(graceEnd),
    maxMachines: view.max_machines,
    seatsUsed: Number(view.seats_used ?? 0),
  };
}

export async function portalLicences(session: PortalSession, now: number) {
  const views = await licenceViews(session.tenant, now)
    .where('licences.customer_id', '=', session.customerId)
    .where('licences.archived', '=', 0)
    .orderBy('licences.issued_at', 'desc')
    .execute();
  return views.map((view) => portalItem(view as LicenceView, now));
}

/** This customer's licence, not archived; another customer's is a 404 like an unknown one. */
export async function ownLicence(session: PortalSession, lid: string, now: number): Promise<LicenceView> {
  const view = await findLicenceView(session.tenant, lid, now).catch(() => null);
  if (!view || view.customer_id !== session.customerId || view.archived === 1) throw notFound(`no licence ${lid}`);
  return view;
}

export async function portalLicence(session: PortalSession, lid: string, now: number) {
  const view = await ownLicence(session, lid, now);
  const product = (await findProductRow(session.tenant, view.product_id))!;
  const limit = product.self_release_limit;
  const machines = await bindingsNewestFirst(session.tenant, view.id);
  // DESIGN.md 19: the usage answer's meters, in the organisation's timezone.
  const usage = await balances(session.tenant, { id: view.id, lid: view.lid, meters: metersOf(view.meters) }, now, await timezoneOf(session.tenant));
  return {
    ...portalItem(view, now),
    // What air-gapped activation needs (DESIGN.md 14), so the portal offers it only where it works.
    airGapActivation: product.air_gap_activation === 1 && view.licence_type !== 'OFFLINE' && view.seat_model !== 'FLOATING',
    feedGeneration: Number(view.feed_generation),
    updatesUntil: iso(updatesUntilOf(view)),
    releasesLeft: limit === null ? null : Math.max(0, limit - (await selfReleasesInWindow(session.tenant, view.id, now))),
    usage: usage.map(({ periodKey: _, ...meter }) => meter),
    machines: await withActivations(
      session.tenant,
      machines.map((m) => ({ id: m.id, boundAt: iso(m.bound_at), releasedAt: iso(m.released_at), live: isLive(m, now), atIssue: m.at_issue === 1 })),
    ),
  };
}

export async function portalDownload(session: PortalSession, lid: string, now: number): Promise<string> {
  return (await ownLicence(session, lid, now)).licence_string;
}

/** The customer frees one of their machines, within the product's limit, under the licence-row lock. */
export async function portalRelease(database: Database, session: PortalSession, lid: string, machineId: number, now: number) {
  const view = await ownLicence(session, lid, now);
  await transaction(database, async (trx) => {
    const t = tenant(trx, session.tenant.orgId);
    const row = await lockLicenceRow(database.dialect, t, lid);
    const [seat] = await liveBindings(t, row.id, now, machineId);
    if (!seat) throw invalid('machineId', `no machine ${machineId} holds a seat of this licence`);
    if (seat.at_issue === 1) throw invalid('machineId', 'this machine is named in the licence itself and cannot be released');
    if (seat.borrowed_until !== null && seat.borrowed_until > now) {
      throw invalid('machineId', `this machine has borrowed its seat until ${iso(seat.borrowed_until)}; only the vendor can free it sooner`);
    }
    // A lease frees itself within leaseSeconds anyway, so releasing one is never limited (DESIGN.md 13).
    const limit = row.seat_model === 'FLOATING' ? null : (await findProductRow(t, view.product_id))!.self_release_limit;
    await releaseSelf(t, { licenceId: row.id, lid, bindingId: seat.id, parts: seat.parts, lease_ends_at: seat.lease_ends_at }, limit, {
      actor: { name: session.actor },
      now,
    });
  });
  return portalLicence(session, lid, now);
}

/** The customer stops the feed URLs of their licence at once (DESIGN.md 20), as the operator's reset does. */
export async function portalResetDownloadLinks(database: Database, org: Organisation, session: PortalSession, lid: string, now: number) {
  await ownLicence(session, lid, now);
  await resetDownloadLinks({ database, org, actor: { name: session.actor }, now }, lid);
  return portalLicence(session, lid, now);
}

/** What the licence's product has published, each release with whether this licence covers it (DESIGN.md 20). */
export async function portalLicenceReleases(session: PortalSession, lid: string, now: number) {
  await ownLicence(session, lid, now);
  return portalReleases(session.tenant, (await downloadLicence(session.tenant, lid))!, now);
}

/** A download link for one of the customer's covered artifacts. */
export async function portalArtifactGrant(deps: DownloadDeps, org: Organisation, session: PortalSession, lid: string, artifactId: number, now: number) {
  await ownLicence(session, lid, now);
  return portalGrant(deps, session.tenant, org, (await downloadLicence(session.tenant, lid))!, artifactId, now);
}

export async function endPortalSession(session: PortalSession) {
  await endPortalSessionRow(session.tenant, session.sessionId);
}

export async function portalIdentity(session: PortalSession, org: Organisation) {
  const customer = await customerOr404(session.tenant, session.customerId);
  return { customer: { name: customer.name }, organisation: { name: org.name } };
}
