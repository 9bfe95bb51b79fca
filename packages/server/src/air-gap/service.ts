import {
  compactText,
  MalformedError,
  parseActivationRequest,
  parseDeactivation,
  parseFingerprint,
  signActivationResponseWith,
  verifyActivationRequest,
  verifyDeactivation,
} from '@licensor/protocol';
import type { Selectable } from 'kysely';
import { recordAudit } from '../audit/audit.js';
import { transaction, type Database } from '../db/database.js';
import type { AirGapActivationsTable } from '../db/schema.js';
import { tenant, type Tenant } from '../db/tenant.js';
import { badRequest, conflict, forbidden, refused } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { liveBinding } from '../licences/live.js';
import { findLicenceRow, lockLicenceRow, machineData, statusOf, type BindingRow, type LicenceRow } from '../licences/repo.js';
import { releasedColumns, selfReleasesInWindow } from '../licences/self-release.js';

/** Who activates or deactivates: an operator (Management API) or a customer (portal). */
export interface AirGapCaller {
  database: Database;
  tenant: Tenant;
  /** The audit actor: a member, a token or `customer/<id>`. */
  actor: { name: string };
  now: number;
}

type ActivationRow = Selectable<AirGapActivationsTable>;

const DAY_MS = 86_400_000;
/** DESIGN.md 14: a request older (or dated further ahead) than this is refused. */
const REQUEST_LIFETIME_MS = 7 * DAY_MS;
const seconds = (ms: number) => Math.floor(ms / 1000);

const within = <T>(caller: AirGapCaller, work: (t: Tenant) => Promise<T>) =>
  transaction(caller.database, (trx) => work(tenant(trx, caller.tenant.orgId)));

/** A text as a person pasted or typed it, parsed; a malformed one is a 400 naming the field. */
function read<T>(field: string, text: string, parse: (text: string) => T): T {
  try {
    return parse(compactText(text));
  } catch (err) {
    if (err instanceof MalformedError) throw badRequest(`${field}: ${err.message}`);
    throw err;
  }
}

/** The 403s of DESIGN.md 14, with the licence's status as the reason. */
function refuseStatus(row: LicenceRow, now: number): 'ACTIVE' | 'GRACE' {
  const status = statusOf(row, now);
  if (status === 'REVOKED') throw refused('the licence is revoked', 'REVOKED');
  if (status === 'EXPIRED') throw refused('the licence has expired', 'EXPIRED');
  if (status === 'PENDING') throw refused('the licence is not valid yet', 'NOT_YET_VALID');
  return status;
}

/**
 * DESIGN.md 14: activates a machine that never reaches the service from its signed request.
 * The seat is taken under the licence-row lock as a check takes it (an equal fingerprint's live
 * seat is reused, else a free one); the response is signed after the commit and stored, so the
 * same request again answers the same response.
 */
export async function activateAirGapped(caller: AirGapCaller, keyring: Keyring, lid: string, requestText: string) {
  const { now } = caller;
  const licence = await findLicenceRow(caller.tenant, lid);
  const request = read('request', requestText, parseActivationRequest);
  if (!verifyActivationRequest(request)) throw badRequest('request: the signature does not verify with its device key');
  const { fields } = request;
  if (fields.lid !== lid) throw badRequest(`request: it was made for licence ${fields.lid}, not this one`);
  const product = await caller.tenant
    .selectFrom('products')
    .select(['air_gap_activation', 'air_gap_activation_days'])
    .where('id', '=', licence.product_id)
    .executeTakeFirstOrThrow();
  if (product.air_gap_activation !== 1) throw badRequest("air-gapped activation is off for this licence's product");
  if (licence.licence_type === 'OFFLINE') throw badRequest('an OFFLINE licence needs no activation: it works on its own');
  // A licence keeps the seat model it was issued with, whatever its product became (DESIGN.md 13).
  if (licence.seat_model === 'FLOATING') throw badRequest('a floating licence cannot be activated air-gapped: its seats are leases its checks renew');
  if (Math.abs(now - fields.iat * 1000) > REQUEST_LIFETIME_MS) {
    throw badRequest('request: it was made more than 7 days ago (or its computer’s clock is far off): make a new one');
  }
  const parts = JSON.stringify(parseFingerprint(fields.fp));

  const made = await within(caller, async (t) => {
    const row = await lockLicenceRow(caller.database.dialect, t, lid);
    const used = await t.selectFrom('air_gap_activations').selectAll().where('licence_id', '=', row.id).where('nonce', '=', fields.nonce).executeTakeFirst();
    if (used) {
      if (used.request === request.text && used.ended_at === null && used.until > now) return { created: false, activation: used };
      throw conflict('request: it was already used on this licence: make a new request on the computer');
    }
    const status = refuseStatus(row, now);
    const live = await t.selectFrom('machine_bindings').selectAll().where('licence_id', '=', row.id).where(liveBinding('machine_bindings', now)).orderBy('id').execute();
    const graceEnd = row.grace_ends_at ?? Number.POSITIVE_INFINITY;
    const until = seconds(Math.min(graceEnd, now + product.air_gap_activation_days * DAY_MS)) * 1000;
    const held = live.find((b) => b.parts === parts);
    let seat: Pick<BindingRow, 'id' | 'bound_at'>;
    if (held) {
      seat = held;
      // A seat a check made ordinary, or one named at issue, stays so; an activation's seat lasts to the latest end.
      if (held.lease_ends_at !== null && held.lease_ends_at < until) await t.updateTable('machine_bindings').set({ lease_ends_at: until }).where('id', '=', seat.id).execute();
      // The same installation's earlier activation of this seat is replaced by this one.
      await t.updateTable('air_gap_activations').set({ ended_at: now, ended_by: caller.actor.name }).where('binding_id', '=', seat.id).where('dpk', '=', fields.dpk).where('ended_at', 'is', null).execute();
    } else {
      if (live.length >= row.max_machines) throw refused(`all ${row.max_machines} seats of this licence are taken: release a machine first`, 'SEATS_FULL');
      seat = await t
        .insertInto('machine_bindings', { licence_id: row.id, fingerprint: fields.fp, parts, bound_at: now, released_at: null, released_by: null, at_issue: 0, label: null, last_seen_at: null, lease_ends_at: until })
        .returning(['id', 'bound_at'])
        .executeTakeFirstOrThrow();
    }
    const activation = await t
      .insertInto('air_gap_activations', {
        licence_id: row.id,
        binding_id: seat.id,
        request: request.text,
        nonce: fields.nonce,
        dpk: fields.dpk,
        fingerprint: fields.fp,
        status,
        issued_at: seconds(now) * 1000,
        bound_at: seat.bound_at,
        until,
        response: null,
        created_by: caller.actor.name,
        ended_at: null,
        ended_by: null,
        released: null,
        counted: 0,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(t, caller, {
      action: 'machine.bound',
      subjectType: 'machine',
      subjectId: seat.id,
      lid,
      event: () => machineData(t, seat.id, lid, now),
      summary: `Activated machine ${seat.id} air-gapped until ${iso(until)}`,
      details: { airGapped: true, activationId: String(activation.id), until: iso(until), parts: JSON.parse(parts) as Record<string, string> },
    });
    return { created: true, activation };
  });

  const { activation } = made;
  return {
    created: made.created,
    answer: { machineId: activation.binding_id, activationId: String(activation.id), until: iso(activation.until), response: await responseOf(caller, keyring, licence, activation) },
  };
}

/**
 * The stored response, or the activation's fields signed now (outside any transaction) with the
 * key that signed the licence, then stored; a concurrent signer's stored text wins.
 */
async function responseOf(caller: AirGapCaller, keyring: Keyring, licence: LicenceRow, activation: ActivationRow): Promise<string> {
  if (activation.response !== null) return activation.response;
  const key = await caller.tenant
    .selectFrom('product_keys')
    .innerJoin('products', 'products.id', 'product_keys.product_id')
    .selectAll('product_keys')
    .select('products.version')
    .where('product_keys.id', '=', licence.key_id)
    .executeTakeFirstOrThrow();
  const signer = keyring.signerOf(key, key.version);
  const text = await signActivationResponseWith(
    {
      lid: licence.lid,
      aid: String(activation.id),
      fp: activation.fingerprint,
      dpk: activation.dpk,
      nonce: activation.nonce,
      status: activation.status as 'ACTIVE' | 'GRACE',
      iat: seconds(activation.issued_at),
      boundAt: seconds(activation.bound_at),
      until: seconds(activation.until),
    },
    (data) => signer.sign(data),
  );
  await caller.tenant.updateTable('air_gap_activations').set({ response: text }).where('id', '=', activation.id).where('response', 'is', null).execute();
  const stored = await caller.tenant.selectFrom('air_gap_activations').select('response').where('id', '=', activation.id).executeTakeFirstOrThrow();
  return stored.response!;
}

const deactivationAnswer = (a: Pick<ActivationRow, 'binding_id' | 'ended_at' | 'released'>) => ({
  machineId: a.binding_id,
  releasedAt: a.released === 1 ? iso(a.ended_at) : null,
  released: a.released === 1,
});

/**
 * DESIGN.md 14: ends an activation on the code its installation signed. The seat is released
 * only when the activation made it and nothing else holds it (no check has used it, no other
 * live activation shares it); such a release before `until` counts towards selfReleaseLimit
 * unless an operator forces it. The same code (or any code for an ended activation) answers the same.
 */
export async function deactivateAirGapped(caller: AirGapCaller, lid: string, codeText: string, force: boolean) {
  const { now } = caller;
  const licence = await findLicenceRow(caller.tenant, lid);
  const code = read('code', codeText, parseDeactivation);
  if (code.fields.lid !== lid) throw badRequest(`code: it was made for licence ${code.fields.lid}, not this one`);
  const known = await caller.tenant
    .selectFrom('air_gap_activations')
    .select('dpk')
    .where('licence_id', '=', licence.id)
    .where('id', '=', Number(code.fields.aid))
    .executeTakeFirst();
  if (!known) throw badRequest(`code: this licence has no air-gapped activation ${code.fields.aid}`);
  if (!verifyDeactivation(code, known.dpk)) throw badRequest('code: the signature does not verify with the key of the computer that was activated');

  return within(caller, async (t) => {
    const row = await lockLicenceRow(caller.database.dialect, t, lid);
    const activation = await t.selectFrom('air_gap_activations').selectAll().where('id', '=', Number(code.fields.aid)).executeTakeFirstOrThrow();
    if (activation.released !== null) return deactivationAnswer(activation);
    const seat = await t.selectFrom('machine_bindings').selectAll().where('id', '=', activation.binding_id).where(liveBinding('machine_bindings', now)).executeTakeFirst();
    const sharing = await t
      .selectFrom('air_gap_activations')
      .select('id')
      .where('binding_id', '=', activation.binding_id)
      .where('id', '<>', activation.id)
      .where('ended_at', 'is', null)
      .where('until', '>', now)
      .executeTakeFirst();
    // Only a node-locked seat's end is an activation's (a floating licence's is its lease).
    const release = seat !== undefined && row.seat_model === 'NODE_LOCKED' && seat.lease_ends_at !== null && sharing === undefined;
    const counted = release && !force;
    if (counted) {
      const product = await t.selectFrom('products').select('self_release_limit').where('id', '=', row.product_id).executeTakeFirstOrThrow();
      const limit = product.self_release_limit;
      if (limit !== null && (await selfReleasesInWindow(t, row.id, now)) >= limit) throw forbidden('self-service release limit reached');
    }
    const ended = { ended_at: now, ended_by: caller.actor.name, released: release ? 1 : 0, counted: counted ? 1 : 0 };
    await t.updateTable('air_gap_activations').set(ended).where('id', '=', activation.id).execute();
    const details = { airGapped: true, activationId: String(activation.id), released: release, ...(force ? { force: true } : {}) };
    if (release) {
      await t.updateTable('machine_bindings').set(releasedColumns(seat, caller.actor.name, now)).where('id', '=', seat.id).execute();
      await t
        .updateTable('licences')
        .set((eb) => ({ rebind_count: eb('rebind_count', '+', 1) }))
        .where('id', '=', row.id)
        .execute();
    }
    await recordAudit(t, caller, {
      action: release ? 'machine.released' : 'machine.air_gap_deactivated',
      subjectType: 'machine',
      subjectId: activation.binding_id,
      lid,
      event: () => machineData(t, activation.binding_id, lid, now),
      summary: release
        ? `Released machine ${activation.binding_id} on its air-gapped deactivation${force ? ' (forced: not counted)' : ''}`
        : `Ended air-gapped activation ${activation.id}; machine ${activation.binding_id} keeps its seat`,
      details,
    });
    return deactivationAnswer({ ...activation, ...ended });
  });
}

/** Machine bindings with their current air-gapped activation, if any (DESIGN.md 14). */
export async function withActivations<T extends { id: number }>(t: Tenant, bindings: T[]) {
  const ids = bindings.map((b) => b.id);
  const rows = ids.length === 0 ? [] : await t.selectFrom('air_gap_activations').select(['id', 'binding_id', 'until']).where('binding_id', 'in', ids).where('ended_at', 'is', null).orderBy('id').execute();
  const latest = new Map(rows.map((r) => [r.binding_id, r]));
  return bindings.map((binding) => {
    const activation = latest.get(binding.id);
    return { ...binding, airGapped: activation !== undefined, activationId: activation ? String(activation.id) : null, until: activation ? iso(activation.until) : null };
  });
}
