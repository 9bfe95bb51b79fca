import type { Db } from '../db/database.js';

export interface Organisation {
  id: number;
  slug: string;
  name: string;
  planLimit: number | null;
  timezone: string;
  settingsUpdatedAt: number | null;
  settingsUpdatedBy: string | null;
}

// Organisations are the tenants themselves, so these are the queries that need no tenant.
const columns = ['id', 'slug', 'name', 'plan_limit', 'timezone', 'settings_updated_at', 'settings_updated_by'] as const;

function toOrganisation(row: {
  id: number;
  slug: string;
  name: string;
  plan_limit: number | null;
  timezone: string;
  settings_updated_at: number | null;
  settings_updated_by: string | null;
}): Organisation {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    planLimit: row.plan_limit,
    timezone: row.timezone,
    settingsUpdatedAt: row.settings_updated_at,
    settingsUpdatedBy: row.settings_updated_by,
  };
}

export async function findOrganisationBySlug(db: Db, slug: string): Promise<Organisation | undefined> {
  const row = await db.selectFrom('organisations').select(columns).where('slug', '=', slug).executeTakeFirst();
  return row && toOrganisation(row);
}

export async function anyOrganisationExists(db: Db): Promise<boolean> {
  return (await db.selectFrom('organisations').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Inserts the organisation; undefined when the slug is taken (also by a concurrent insert). */
export async function insertOrganisation(
  db: Db,
  values: { slug: string; name: string; planLimit: number | null },
  now: number,
): Promise<Organisation | undefined> {
  const row = await db
    .insertInto('organisations')
    .values({ slug: values.slug, name: values.name, plan_limit: values.planLimit, timezone: 'UTC', created_at: now })
    .onConflict((oc) => oc.column('slug').doNothing())
    .returning(columns)
    .executeTakeFirst();
  return row && toOrganisation(row);
}

export async function updateOrganisationTimezone(db: Db, id: number, timezone: string, actor: string, now: number) {
  await db
    .updateTable('organisations')
    .set({ timezone, settings_updated_at: now, settings_updated_by: actor })
    .where('id', '=', id)
    .execute();
}
