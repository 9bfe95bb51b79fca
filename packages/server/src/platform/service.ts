import type { Actor, Organisation } from '../core/context.js';
import type { PlatformAccount } from '../auth/credentials.js';
import { isZoneName } from '../core/calendar.js';
import { conflict, invalid, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { hashPassword } from '../core/passwords.js';
import { isUniqueViolation, transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { activeTrials, planCount, tallies } from '../listings/repos/tallies.js';
import { findOrganisationBySlug, insertOrganisation, listOrganisations, mailEnabledOf, setMailEnabled, updateOrganisation } from '../orgs/repo.js';
import { insertMember } from '../users/service.js';
import type { Role } from '../core/access.js';
import { endPlatformSession, insertPlatformAudit, organisationCounts, platformAuditPage } from './repo.js';

/** Who acts on the control plane, as its audit trail names them. */
const actorName = (account: PlatformAccount) => `platform/${account.username}`;

async function orgOr404(database: Database, slug: string): Promise<Organisation> {
  const org = await findOrganisationBySlug(database.db, slug);
  if (!org) throw notFound(`no organisation "${slug}"`);
  return org;
}

/** An organisation as the control plane shows it, with its counts now. */
async function toRecord(database: Database, org: Organisation, now: number) {
  const t = tenant(database.db, org.id);
  const counts = await organisationCounts(t);
  return {
    slug: org.slug,
    name: org.name,
    planLimit: org.planLimit,
    trialLimit: org.trialLimit,
    suspended: org.suspended,
    mailEnabled: await mailEnabledOf(database.db, org.id),
    timezone: org.timezone,
    createdAt: iso(org.createdAt),
    counts: {
      licences: counts.licences,
      countingLicences: await planCount(t, await tallies({ database, org, tenant: t, now }), now),
      trials: await activeTrials(t, now),
      products: counts.products,
      members: counts.members,
    },
  };
}

export async function organisationRecords(database: Database) {
  const now = Date.now();
  return Promise.all((await listOrganisations(database.db)).map((org) => toRecord(database, org, now)));
}

export const organisationRecord = async (database: Database, slug: string) => toRecord(database, await orgOr404(database, slug), Date.now());

export async function createOrganisation(
  database: Database,
  account: PlatformAccount,
  input: { slug: string; name: string; planLimit?: number | null | undefined; trialLimit?: number | null | undefined; timezone?: string | undefined },
) {
  const { slug, planLimit = null, trialLimit = null, timezone = 'UTC' } = input;
  const name = input.name.trim();
  if (!name) throw invalid('name', 'must not be blank');
  if (!isZoneName(timezone)) throw invalid('timezone', `"${timezone}" is not an IANA zone name`);
  const now = Date.now();
  const org = await transaction(database, async (trx) => {
    const created = await insertOrganisation(trx, { slug, name, planLimit, trialLimit, timezone }, now);
    if (!created) throw conflict(`an organisation with slug "${slug}" already exists`);
    await insertPlatformAudit(trx, actorName(account), now, {
      action: 'organisation.created',
      organisation: slug,
      details: { name, planLimit, trialLimit, timezone },
    });
    return created;
  });
  return toRecord(database, org, now);
}

/** A new name, plan limit, trial limit, suspension or mail switch, each change audited. */
export async function changeOrganisation(
  database: Database,
  account: PlatformAccount,
  slug: string,
  input: {
    name?: string | undefined;
    planLimit?: number | null | undefined;
    trialLimit?: number | null | undefined;
    suspended?: boolean | undefined;
    mailEnabled?: boolean | undefined;
  },
) {
  const org = await orgOr404(database, slug);
  const name = input.name?.trim();
  if (name === '') throw invalid('name', 'must not be blank');
  const change = { name, planLimit: input.planLimit, trialLimit: input.trialLimit, suspended: input.suspended };
  const now = Date.now();
  await transaction(database, async (trx) => {
    if (Object.values(change).some((v) => v !== undefined)) await updateOrganisation(trx, org.id, change);
    // DESIGN.md 22: false refuses send and the test, queues no integration email and holds pending ones.
    const mailBefore = await mailEnabledOf(trx, org.id);
    if (input.mailEnabled !== undefined && input.mailEnabled !== mailBefore) await setMailEnabled(trx, org.id, input.mailEnabled);
    const actor = actorName(account);
    const changed = {
      ...(input.mailEnabled !== undefined && input.mailEnabled !== mailBefore ? { mailEnabled: { from: mailBefore, to: input.mailEnabled } } : {}),
      ...(name !== undefined && name !== org.name ? { name: { from: org.name, to: name } } : {}),
      ...(change.planLimit !== undefined && change.planLimit !== org.planLimit ? { planLimit: { from: org.planLimit, to: change.planLimit } } : {}),
      ...(change.trialLimit !== undefined && change.trialLimit !== org.trialLimit ? { trialLimit: { from: org.trialLimit, to: change.trialLimit } } : {}),
    };
    if (Object.keys(changed).length) await insertPlatformAudit(trx, actor, now, { action: 'organisation.updated', organisation: org.slug, details: changed });
    if (change.suspended !== undefined && change.suspended !== org.suspended) {
      await insertPlatformAudit(trx, actor, now, { action: change.suspended ? 'organisation.suspended' : 'organisation.resumed', organisation: org.slug });
    }
  });
  return toRecord(database, await orgOr404(database, org.slug), now);
}

/** A member of an organisation (its first administrator), audited in both trails. */
export async function addMember(
  database: Database,
  account: PlatformAccount,
  slug: string,
  input: { username: string; password: string; role: Role; email?: string | null | undefined; displayName?: string | undefined },
) {
  const org = await orgOr404(database, slug);
  const passwordHash = await hashPassword(input.password);
  const now = Date.now();
  const actor: Actor = {
    kind: 'platform',
    name: actorName(account),
    accountId: account.id,
    displayName: account.displayName,
    platformRole: account.role,
    role: 'ORG_ADMIN',
    sessionId: account.sessionId,
  };
  try {
    return await transaction(database, async (trx) => {
      const created = await insertMember(tenant(trx, org.id), { actor, now }, input, passwordHash);
      await insertPlatformAudit(trx, actor.name, now, {
        action: 'member.created',
        organisation: org.slug,
        details: { username: created.username, role: created.role },
      });
      return created;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`username "${input.username}" is already taken in "${org.slug}"`);
    throw err;
  }
}

/** The platform's audit trail, newest first. */
export async function platformActivity(database: Database, page: { limit?: number | undefined; offset?: number | undefined }) {
  const { limit = 50, offset = 0 } = page;
  const { rows, total } = await platformAuditPage(database.db, limit, offset);
  return {
    items: rows.map((r) => ({
      id: r.id,
      at: iso(r.at),
      actor: r.actor,
      action: r.action,
      organisation: r.organisation,
      details: r.details === null ? null : JSON.parse(r.details),
    })),
    total,
    limit,
    offset,
  };
}

export const signOut = (database: Database, account: PlatformAccount) => endPlatformSession(database.db, account.sessionId);
