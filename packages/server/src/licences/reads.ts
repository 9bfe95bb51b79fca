import { listAudit } from '../audit/service.js';
import type { Ctx } from '../core/context.js';
import { badRequest, notFound } from '../core/errors.js';
import { claimsOf, findLicenceView, listViews, toLicence, toLicenceListItem } from '../listings/repos/views.js';
import { leasePeaks } from '../seats/lease-peaks.js';
import { machinesOf } from '../seats/service.js';
import { findLicenceRow, findVersion, toVersionListItem, versionsOf } from './repo.js';

/** What the plain list answers at most: past it, the page listing (listings/) is the way. */
export const MAX_LIST = 25_000;

/** Every licence in list form, or one product's or customer's; refused above MAX_LIST. */
export async function listLicences(ctx: Ctx, filter: { productId?: number | undefined; customerId?: number | undefined; trial?: boolean | undefined }) {
  const found = await listViews(ctx.tenant, ctx.now, filter, MAX_LIST + 1);
  if (found.length > MAX_LIST) throw badRequest(`more than ${MAX_LIST} licences match: use GET /licenses/page`);
  return found.map((view) => toLicenceListItem(view, ctx.now));
}

export const getLicence = async (ctx: Ctx, lid: string) => toLicence(await findLicenceView(ctx.tenant, lid, ctx.now), ctx.now);

/** The licence's current string, for its .lic file. */
export async function licenceFile(ctx: Ctx, lid: string) {
  const row = await findLicenceRow(ctx.tenant, lid);
  return { lid: row.lid, text: row.licence_string };
}

export const licenceMachines = async (ctx: Ctx, lid: string) => machinesOf(ctx.tenant, (await findLicenceRow(ctx.tenant, lid)).id, ctx.now);

export const licenceLeasePeaks = async (ctx: Ctx, lid: string) => leasePeaks(ctx.tenant, (await findLicenceRow(ctx.tenant, lid)).id, ctx.now);

export async function licenceActivity(
  ctx: Ctx,
  lid: string,
  query: { action?: string | undefined; actor?: string | undefined; limit?: number | undefined; offset?: number | undefined },
) {
  const licence = await findLicenceRow(ctx.tenant, lid);
  return listAudit(ctx.tenant, { ...query, lid: licence.lid });
}

export const licenceVersions = async (ctx: Ctx, lid: string) =>
  (await versionsOf(ctx.tenant, (await findLicenceRow(ctx.tenant, lid)).id)).map(toVersionListItem);

async function versionRow(ctx: Ctx, lid: string, versionNo: number) {
  const licence = await findLicenceRow(ctx.tenant, lid);
  const row = await findVersion(ctx.tenant, licence.id, versionNo);
  if (!row) throw notFound(`licence ${lid} has no superseded term ${versionNo}`);
  return row;
}

/** One superseded term with its claims and string. */
export async function licenceVersion(ctx: Ctx, lid: string, versionNo: number) {
  const row = await versionRow(ctx, lid, versionNo);
  return { ...toVersionListItem(row), claims: claimsOf(row.licence_string), licenseString: row.licence_string };
}

export const versionString = async (ctx: Ctx, lid: string, versionNo: number) => (await versionRow(ctx, lid, versionNo)).licence_string;
