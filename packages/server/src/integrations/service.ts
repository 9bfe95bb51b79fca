import { recordAudit } from '../audit/audit.js';
import { isUniqueViolation } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { badRequest, conflict, forbidden, invalid, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { seal } from '../keys/sealing.js';
import { entryOf } from './entries.js';
import { checkMappings } from './mappings.js';
import {
  countOutcomes,
  deleteIntegrationRows,
  eventPage,
  findIntegrationNamed,
  findIntegrationRow,
  insertIntegration,
  integrationRows,
  updateIntegrationRow,
  type IntegrationRow,
} from './repo.js';
import type { ChangeInput, CreateInput, MappingInput } from './schemas.js';
import type { Provider } from './signature.js';

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Printable ASCII without the space, 16 to 255 characters. */
const SECRET = /^[\x21-\x7e]{16,255}$/;

export const sealContext = (orgId: number, id: number) => `integration:${orgId}:${id}`;

/** The audit actor, `issuedBy` and `createdBy` of what a connection does (DESIGN.md 22). */
export const actorOf = (row: Pick<IntegrationRow, 'name'>) => `integration/${row.name}`;

export async function toIntegration(t: Tenant, publicUrl: string, slug: string, row: IntegrationRow) {
  const counts = await countOutcomes(t, row.id);
  return {
    id: row.id,
    name: row.name,
    provider: row.provider,
    enabled: row.enabled === 1,
    sendOnIssue: row.send_on_issue === 1,
    sendOnRenew: row.send_on_renew === 1,
    mappings: JSON.parse(row.mappings) as MappingInput[],
    secretSet: row.secret !== '',
    hookUrl: `${publicUrl}/o/${slug}/api/hooks/${row.provider}/${row.id}`,
    createdAt: iso(row.created_at),
    createdBy: row.created_by,
    updatedAt: iso(row.updated_at),
    lastEventAt: iso(row.last_event_at),
    lastFailureAt: iso(row.last_failure_at),
    lastFailure: row.last_failure,
    failedEvents: counts.failed,
    waitingEvents: counts.waiting,
  };
}

/** DESIGN.md 22: a connection issues in the organisation's name, so saving one needs licenses:write. */
export function authorizeSave(ctx: Ctx): void {
  if (!ctx.can('licenses:write')) throw forbidden('a connection issues licences: creating or changing one needs licenses:write');
}

function checkName(name: string): void {
  if (!NAME.test(name)) throw invalid('name', 'must be 1 to 63 of lowercase letters, digits and hyphens, starting with a letter or digit');
}

function checkSecret(secret: string): void {
  if (!SECRET.test(secret)) throw invalid('signingSecret', "must be the provider's endpoint secret: 16 to 255 printable ASCII characters, no space");
}

async function findIntegration(t: Tenant, id: number): Promise<IntegrationRow> {
  const row = await findIntegrationRow(t, id);
  if (!row) throw notFound(`no integration ${id}`);
  return row;
}

async function refuseTakenName(t: Tenant, name: string, id?: number): Promise<void> {
  const other = await findIntegrationNamed(t, name);
  if (other && other.id !== id) throw conflict(`an integration named ${name} already exists`);
}

export async function listIntegrations(ctx: Ctx, publicUrl: string) {
  const rows = await integrationRows(ctx.tenant);
  return Promise.all(rows.map((row) => toIntegration(ctx.tenant, publicUrl, ctx.org.slug, row)));
}

export const getIntegration = async (ctx: Ctx, publicUrl: string, id: number) =>
  toIntegration(ctx.tenant, publicUrl, ctx.org.slug, await findIntegration(ctx.tenant, id));

/** The unique name's 409 even when two creates race past the first look. */
async function named<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`an integration named ${name} already exists`);
    throw err;
  }
}

export async function createIntegration(ctx: Ctx, masterKey: Buffer, publicUrl: string, input: CreateInput) {
  authorizeSave(ctx);
  checkName(input.name);
  checkSecret(input.signingSecret);
  return named(input.name, () =>
    inTransaction(ctx, async (t) => {
      await refuseTakenName(t, input.name);
      const mappings = await checkMappings(t, input.provider as Provider, input.mappings);
      const { id } = await insertIntegration(t, {
        name: input.name,
        provider: input.provider as Provider,
        secret: '',
        enabled: input.enabled === false ? 0 : 1,
        send_on_issue: input.sendOnIssue === false ? 0 : 1,
        send_on_renew: input.sendOnRenew === true ? 1 : 0,
        mappings: JSON.stringify(mappings),
        created_at: ctx.now,
        created_by: ctx.actor.name,
        updated_at: ctx.now,
        last_event_at: null,
        last_failure_at: null,
        last_failure: null,
        failed_hour: null,
      });
      await updateIntegrationRow(t, id, { secret: seal(masterKey, Buffer.from(input.signingSecret, 'utf8'), sealContext(t.orgId, id)) });
      await recordAudit(t, ctx, {
        action: 'integration.created',
        subjectType: 'integration',
        subjectId: id,
        summary: `Added ${input.provider} integration ${input.name}`,
        details: { provider: input.provider, name: input.name, mappings: mappings.length },
      });
      return toIntegration(t, publicUrl, ctx.org.slug, await findIntegration(t, id));
    }),
  );
}

export async function updateIntegration(ctx: Ctx, masterKey: Buffer, publicUrl: string, id: number, change: ChangeInput) {
  authorizeSave(ctx);
  if (change.name !== undefined) checkName(change.name);
  if (change.signingSecret !== undefined) checkSecret(change.signingSecret);
  return named(change.name ?? '', () =>
    inTransaction(ctx, async (t) => {
      const row = await findIntegration(t, id);
      if (change.provider !== undefined && change.provider !== row.provider) throw badRequest('provider: a connection keeps its provider: add another one');
      const set: Partial<IntegrationRow> = { updated_at: ctx.now };
      if (change.name !== undefined) {
        await refuseTakenName(t, change.name, id);
        set.name = change.name;
      }
      if (change.mappings !== undefined) set.mappings = JSON.stringify(await checkMappings(t, row.provider, change.mappings));
      if (change.enabled !== undefined) set.enabled = change.enabled ? 1 : 0;
      if (change.sendOnIssue !== undefined) set.send_on_issue = change.sendOnIssue ? 1 : 0;
      if (change.sendOnRenew !== undefined) set.send_on_renew = change.sendOnRenew ? 1 : 0;
      if (change.signingSecret !== undefined) set.secret = seal(masterKey, Buffer.from(change.signingSecret, 'utf8'), sealContext(t.orgId, id));
      await updateIntegrationRow(t, id, set);
      const fields = Object.keys(change).filter((k) => k !== 'signingSecret' && k !== 'provider' && change[k as keyof ChangeInput] !== undefined);
      if (fields.length > 0) {
        await recordAudit(t, ctx, {
          action: 'integration.updated',
          subjectType: 'integration',
          subjectId: id,
          summary: `Changed integration ${set.name ?? row.name} (${fields.join(', ')})`,
          details: { fields },
        });
      }
      if (change.signingSecret !== undefined) {
        await recordAudit(t, ctx, {
          action: 'integration.secret_replaced',
          subjectType: 'integration',
          subjectId: id,
          summary: `Replaced the signing secret of integration ${set.name ?? row.name}`,
        });
      }
      return toIntegration(t, publicUrl, ctx.org.slug, await findIntegration(t, id));
    }),
  );
}

export async function deleteIntegration(ctx: Ctx, id: number): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const row = await findIntegration(t, id);
    await deleteIntegrationRows(t, id);
    await recordAudit(t, ctx, {
      action: 'integration.deleted',
      subjectType: 'integration',
      subjectId: id,
      summary: `Deleted ${row.provider} integration ${row.name}`,
      details: { provider: row.provider, name: row.name },
    });
  });
}

/** `GET /integrations/{id}/events`: the ledger, newest first, paged as activity. */
export async function listEvents(ctx: Ctx, id: number, query: { outcome?: string | undefined; limit?: number | undefined; offset?: number | undefined }) {
  await findIntegration(ctx.tenant, id);
  const limit = query.limit ?? 50;
  const offset = query.offset ?? 0;
  const { rows, total } = await eventPage(ctx.tenant, id, { outcome: query.outcome, limit, offset });
  return { items: rows.map(entryOf), total, limit, offset };
}
