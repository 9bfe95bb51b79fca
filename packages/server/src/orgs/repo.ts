import type { Selectable } from 'kysely';
import type { Organisation } from '../core/context.js';
import type { Db } from '../db/database.js';
import type { OrganisationsTable } from '../db/schema.js';

// Organisations are the tenants themselves, so these are the queries that need no tenant.
export const ORGANISATION_COLUMNS = [
  'id',
  'slug',
  'name',
  'plan_limit',
  'trial_limit',
  'timezone',
  'settings_updated_at',
  'settings_updated_by',
  'suspended',
  'created_at',
] as const;

export function toOrganisation(row: Pick<Selectable<OrganisationsTable>, (typeof ORGANISATION_COLUMNS)[number]>): Organisation {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    planLimit: row.plan_limit,
    trialLimit: row.trial_limit === null ? null : Number(row.trial_limit),
    timezone: row.timezone,
    settingsUpdatedAt: row.settings_updated_at,
    settingsUpdatedBy: row.settings_updated_by,
    suspended: row.suspended === 1,
    createdAt: row.created_at,
  };
}

export async function findOrganisationBySlug(db: Db, slug: string): Promise<Organisation | undefined> {
  const row = await db.selectFrom('organisations').select(ORGANISATION_COLUMNS).where('slug', '=', slug).executeTakeFirst();
  return row && toOrganisation(row);
}

export async function findOrganisationById(db: Db, id: number): Promise<Organisation | undefined> {
  const row = await db.selectFrom('organisations').select(ORGANISATION_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toOrganisation(row);
}

/**
 * Organisations by slug for the check path, which must not pay a query for them per request.
 * A check uses only the organisation's id and slug (a suspension does not stop checks,
 * DESIGN.md 8), and its product query confirms both: it joins the organisation by id and
 * filters by slug. A slug that no longer leads there is forgotten and read again.
 */
export class OrganisationCache {
  private readonly bySlug = new Map<string, Organisation>();

  async find(db: Db, slug: string): Promise<Organisation | undefined> {
    const cached = this.bySlug.get(slug);
    if (cached) return cached;
    const org = await findOrganisationBySlug(db, slug);
    if (org) this.remember(org);
    return org;
  }

  private remember(org: Organisation): void {
    if (!this.bySlug.has(org.slug) && this.bySlug.size >= 10_000) this.bySlug.delete(this.bySlug.keys().next().value!);
    this.bySlug.set(org.slug, org);
  }

  forget(slug: string): void {
    this.bySlug.delete(slug);
  }
}

/** The organisation's plan limit as it is now (read under the organisation's lock by a writer that may add to the count). */
export async function planLimitOf(db: Db, id: number): Promise<number | null> {
  return (await db.selectFrom('organisations').select('plan_limit').where('id', '=', id).executeTakeFirstOrThrow()).plan_limit;
}

export async function listOrganisations(db: Db): Promise<Organisation[]> {
  return (await db.selectFrom('organisations').select(ORGANISATION_COLUMNS).orderBy('slug').execute()).map(toOrganisation);
}

export async function updateOrganisation(
  db: Db,
  id: number,
  change: { name?: string | undefined; planLimit?: number | null | undefined; trialLimit?: number | null | undefined; suspended?: boolean | undefined },
) {
  await db
    .updateTable('organisations')
    .set({
      ...(change.name === undefined ? {} : { name: change.name }),
      ...(change.planLimit === undefined ? {} : { plan_limit: change.planLimit }),
      ...(change.trialLimit === undefined ? {} : { trial_limit: change.trialLimit }),
      ...(change.suspended === undefined ? {} : { suspended: change.suspended ? 1 : 0 }),
    })
    .where('id', '=', id)
    .execute();
}

export async function anyOrganisationExists(db: Db): Promise<boolean> {
  return (await db.selectFrom('organisations').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Inserts the organisation; undefined when the slug is taken (also by a concurrent insert). */
export async function insertOrganisation(
  db: Db,
  values: { slug: string; name: string; planLimit: number | null; trialLimit?: number | null; timezone?: string },
  now: number,
): Promise<Organisation | undefined> {
  const row = await db
    .insertInto('organisations')
    .values({
      slug: values.slug,
      name: values.name,
      plan_limit: values.planLimit,
      trial_limit: values.trialLimit ?? null,
      timezone: values.timezone ?? 'UTC',
      created_at: now,
    })
    .onConflict((oc) => oc.column('slug').doNothing())
    .returning(ORGANISATION_COLUMNS)
    .executeTakeFirst();
  return row && toOrganisation(row);
}

export async function updateOrganisationTimezone(db: Db, id: number, timezone: string, actor: string, now: number) {
  await db.updateTable('organisations').set({ timezone, settings_updated_at: now, settings_updated_by: actor }).where('id', '=', id).execute();
}

/** GET /settings: the timezone and who last changed the settings, and when. */
export const settingsRow = (db: Db, id: number) =>
  db.selectFrom('organisations').select(['timezone', 'settings_updated_at', 'settings_updated_by']).where('id', '=', id).executeTakeFirstOrThrow();

/** A settings change that leaves the timezone as stored still says who made it. */
export async function stampSettings(db: Db, id: number, actor: string, now: number) {
  await db.updateTable('organisations').set({ settings_updated_at: now, settings_updated_by: actor }).where('id', '=', id).execute();
}

/** The platform's mail switch (DESIGN.md 22): on unless turned off. */
export const mailEnabledOf = async (db: Db, id: number) =>
  Number((await db.selectFrom('organisations').select('mail_enabled').where('id', '=', id).executeTakeFirst())?.mail_enabled ?? 1) === 1;

export async function setMailEnabled(db: Db, id: number, enabled: boolean) {
  await db
    .updateTable('organisations')
    .set({ mail_enabled: enabled ? 1 : 0 })
    .where('id', '=', id)
    .execute();
}
