import { randomBytes } from 'node:crypto';
import { transaction, type Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { hashPassword } from '../core/passwords.js';
import { makeCtx, type Ctx, type Organisation } from '../core/context.js';
import { conflict, invalid, notFound } from '../core/errors.js';
import { insertMember, updateMember } from '../users/service.js';
import { findUserByUsername } from '../users/repo.js';
import { anyOrganisationExists, findOrganisationBySlug, insertOrganisation } from './repo.js';
import { writeInitialPassword } from '../users/initial-password.js';

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

export async function createOrganisation(database: Database, input: { slug: string; name: string; planLimit: number | null }): Promise<Organisation> {
  if (!SLUG.test(input.slug)) throw invalid('slug', 'lower-case letters, digits and inner dashes, 1 to 64 characters');
  if (!input.name.trim()) throw invalid('name', 'must not be blank');
  if (input.planLimit !== null && (!Number.isInteger(input.planLimit) || input.planLimit < 0)) {
    throw invalid('planLimit', 'a whole number of at least 0');
  }
  const org = await insertOrganisation(database.db, input, Date.now());
  if (!org) throw conflict(`an organisation with slug "${input.slug}" already exists`);
  return org;
}

/** The operator's own context for an organisation: the CLI acts with every permission. */
export async function operatorCtx(database: Database, slug: string): Promise<Ctx> {
  const org = await findOrganisationBySlug(database.db, slug);
  if (!org) throw notFound(`no organisation "${slug}"`);
  return makeCtx(database, org, { kind: 'system', name: 'cli' });
}

/** The CLI's `user set-password`; `dataDir` is where the first start may have left the password it replaces. */
export async function setPasswordByUsername(ctx: Ctx, username: string, password: string, dataDir: string) {
  const user = await findUserByUsername(ctx.tenant, username);
  if (!user) throw notFound(`no user "${username}" in organisation "${ctx.org.slug}"`);
  return updateMember(ctx, user.id, { password }, dataDir);
}

/**
 * First run: with no organisation at all, creates `default` and its ORG_ADMIN `admin`. Two
 * instances starting together create it once (the slug is unique; the loser sees no row).
 * Returns the generated password when one was made, for the caller to show once.
 */
export async function bootstrap(
  database: Database,
  options: { dataDir: string; bootstrapPassword: string | null },
): Promise<{ generatedPassword: string | null; passwordFile: string | null } | null> {
  if (await anyOrganisationExists(database.db)) return null;
  const generated = options.bootstrapPassword ? null : randomBytes(18).toString('base64url');
  const password = options.bootstrapPassword ?? generated!;
  const passwordHash = await hashPassword(password);
  const now = Date.now();
  // The organisation and its administrator appear together or not at all.
  const created = await transaction(database, async (trx) => {
    const org = await insertOrganisation(trx, { slug: 'default', name: 'Default organisation', planLimit: null }, now);
    if (!org) return false;
    const input = { username: 'admin', displayName: 'Administrator', role: 'ORG_ADMIN' as const };
    await insertMember(tenant(trx, org.id), { actor: { kind: 'system', name: 'bootstrap' }, now }, input, passwordHash);
    return true;
  });
  if (!created) return null;
  if (!generated) return { generatedPassword: null, passwordFile: null };
  return { generatedPassword: generated, passwordFile: writeInitialPassword(options.dataDir, generated) };
}
