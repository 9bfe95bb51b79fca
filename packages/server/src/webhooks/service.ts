import { randomBytes } from 'node:crypto';
import type net from 'node:net';
import { recordAudit } from '../audit/audit.js';
import type { Tenant } from '../db/tenant.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { badRequest, forbidden, invalid, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { seal, unseal } from '../keys/sealing.js';
import { AddressRefused, checkTarget } from './address.js';
import {
  deleteEndpointRow,
  endpointRows,
  findEndpointRow,
  hasEndpoint,
  insertEndpoint,
  restartSince,
  updateEndpointRow,
  type EndpointRow,
} from './repos/endpoints.js';
import { EVENT_TYPES, readScopeOf } from '../audit/events.js';

export function toEndpoint(row: EndpointRow) {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.events) as string[],
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    createdAt: iso(row.created_at),
    createdBy: row.created_by,
    updatedAt: iso(row.updated_at),
    lastDeliveryAt: iso(row.last_delivery_at),
    lastStatus: row.last_status,
    failingSince: iso(row.failing_since),
  };
}

const sealContext = (orgId: number, id: number) => `webhook:${orgId}:${id}`;

/** `whsec_` and the base64 of 32 random bytes: the key is the bytes, as Standard Webhooks reads it. */
function newSecret(masterKey: Buffer, orgId: number, id: number) {
  const key = randomBytes(32);
  return { shown: `whsec_${key.toString('base64')}`, sealed: seal(masterKey, key, sealContext(orgId, id)) };
}

/** The keys that sign an attempt at `now`: the current one, and the previous one during its overlap. */
export function signingKeys(
  masterKey: Buffer,
  row: Pick<EndpointRow, 'id' | 'org_id' | 'secret' | 'previous_secret' | 'previous_until'>,
  now: number,
): Buffer[] {
  const context = sealContext(row.org_id, row.id);
  const keys = [unseal(masterKey, row.secret, context)];
  if (row.previous_secret !== null && row.previous_until !== null && now < row.previous_until) keys.push(unseal(masterKey, row.previous_secret, context));
  return keys;
}

/** The read scopes saving `*` needs at the least (DESIGN.md 15). */
const STAR_SCOPES = ['licenses:read', 'products:read', 'customers:read'] as const;

/**
 * DESIGN.md 15: subscribing needs each event's read scope; `*` needs the first three and stands
 * for every event whose read scope the saving credential holds. Answers what the endpoint keeps
 * as `covers`: the events `*` stood for at this save, or null for a list.
 */
function authorizeEvents(ctx: Ctx, events: string[]): string[] | null {
  for (const event of events) {
    if (event !== '*' && !(EVENT_TYPES as readonly string[]).includes(event)) throw invalid('events', `unknown event "${event}"`);
  }
  const listed = events.filter((e) => e !== '*');
  const star = events.length > listed.length;
  for (const scope of new Set([...(star ? STAR_SCOPES : []), ...listed.map(readScopeOf)])) {
    if (!ctx.can(scope)) throw forbidden(`subscribing to these events needs ${scope}`);
  }
  return star ? EVENT_TYPES.filter((type) => ctx.can(readScopeOf(type))) : null;
}

async function checkUrl(url: string, allowed: net.BlockList): Promise<void> {
  try {
    await checkTarget(url, allowed);
  } catch (err) {
    if (err instanceof AddressRefused) throw badRequest(err.message);
    throw err;
  }
}

export async function findEndpoint(t: Tenant, id: number): Promise<EndpointRow> {
  const row = await findEndpointRow(t, id);
  if (!row) throw notFound(`no webhook endpoint ${id}`);
  return row;
}

export async function listEndpoints(ctx: Ctx) {
  return (await endpointRows(ctx.tenant)).map(toEndpoint);
}

export const getEndpoint = async (ctx: Ctx, id: number) => toEndpoint(await findEndpoint(ctx.tenant, id));

export interface EndpointInput {
  url: string;
  events: string[];
  description?: string | null | undefined;
}

export async function createEndpoint(ctx: Ctx, masterKey: Buffer, allowed: net.BlockList, input: EndpointInput) {
  const covers = authorizeEvents(ctx, input.events);
  await checkUrl(input.url, allowed);
  return inTransaction(
    ctx,
    async (t) => {
      // The expiring window counts from when the organisation has had an endpoint without a break.
      if (!(await hasEndpoint(t))) await restartSince(t, ctx.now);
      const { id } = await insertEndpoint(t, {
        url: input.url,
        description: input.description ?? null,
        events: JSON.stringify(input.events),
        covers: covers && JSON.stringify(covers),
        enabled: 1,
        disabled_reason: null,
        secret: '',
        previous_secret: null,
        previous_until: null,
        created_at: ctx.now,
        created_by: ctx.actor.name,
        updated_at: ctx.now,
        last_delivery_at: null,
        last_status: null,
        failing_since: null,
      });
      const secret = newSecret(masterKey, t.orgId, id);
      await updateEndpointRow(t, id, { secret: secret.sealed });
      await recordAudit(t, ctx, {
        action: 'webhook.created',
        subjectType: 'webhook',
        subjectId: id,
        summary: `Added webhook endpoint ${input.url}`,
        details: { events: input.events },
      });
      return { ...toEndpoint(await findEndpoint(t, id)), secret: secret.shown };
    },
    { lockOrganisation: true },
  );
}

export interface EndpointChange {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

export async function updateEndpoint(ctx: Ctx, allowed: net.BlockList, id: number, change: EndpointChange) {
  const covers = change.events && authorizeEvents(ctx, change.events);
  if (change.url !== undefined) await checkUrl(change.url, allowed);
  return inTransaction(ctx, async (t) => {
    const row = await findEndpoint(t, id);
    const set: Partial<EndpointRow> = { updated_at: ctx.now };
    if (change.url !== undefined) set.url = change.url;
    if (change.events !== undefined) {
      set.events = JSON.stringify(change.events);
      set.covers = covers && JSON.stringify(covers);
    }
    if (change.description !== undefined) set.description = change.description;
    if (change.enabled !== undefined && change.enabled !== (row.enabled === 1)) {
      set.enabled = change.enabled ? 1 : 0;
      set.disabled_reason = change.enabled ? null : `disabled by ${ctx.actor.name}`;
      set.failing_since = null;
    }
    await updateEndpointRow(t, id, set);
    const fields = Object.keys(change).filter((k) => change[k as keyof EndpointChange] !== undefined);
    await recordAudit(t, ctx, {
      action: 'webhook.updated',
      subjectType: 'webhook',
      subjectId: id,
      summary: `Changed webhook endpoint ${set.url ?? row.url} (${fields.join(', ')})`,
      details: { fields },
    });
    return toEndpoint(await findEndpoint(t, id));
  });
}

export async function deleteEndpoint(ctx: Ctx, id: number): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const row = await findEndpoint(t, id);
    await deleteEndpointRow(t, id);
    await recordAudit(t, ctx, { action: 'webhook.deleted', subjectType: 'webhook', subjectId: id, summary: `Deleted webhook endpoint ${row.url}` });
  });
}

/** A new secret, shown once; the one it replaces signs beside it for `overlapHours` (an earlier overlap ends now). */
export async function rotateSecret(ctx: Ctx, masterKey: Buffer, id: number, overlapHours: number) {
  const secret = newSecret(masterKey, ctx.org.id, id);
  return inTransaction(ctx, async (t) => {
    const row = await findEndpoint(t, id);
    await updateEndpointRow(t, id, {
      secret: secret.sealed,
      previous_secret: overlapHours > 0 ? row.secret : null,
      previous_until: overlapHours > 0 ? ctx.now + overlapHours * 3_600_000 : null,
      updated_at: ctx.now,
    });
    await recordAudit(t, ctx, {
      action: 'webhook.secret_rotated',
      subjectType: 'webhook',
      subjectId: id,
      summary: `Rotated the secret of webhook endpoint ${row.url}`,
      details: { overlapHours },
    });
    return { secret: secret.shown, previousValidUntil: overlapHours > 0 ? iso(ctx.now + overlapHours * 3_600_000) : null };
  });
}
