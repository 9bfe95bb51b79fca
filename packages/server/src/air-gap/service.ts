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
import { recordAudit } from '../audit/audit.js';
import { transaction, type Database } from '../db/database.js';
import { tenant, type Tenant } from '../db/tenant.js';
import { badRequest, conflict, forbidden, invalid, refused } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { statusOf, type LicenceRow } from '../listings/repos/views.js';
import { findLicenceRow, lockLicenceRow } from '../licences/repo.js';
import { findKeyWithVersion } from '../keys/repo.js';
import { findProductRow } from '../products/repo.js';
import { addRebinds, insertBinding, liveBindings, markReleased, updateBinding, type BindingRow } from '../seats/repo.js';
import { selfReleasesInWindow } from '../seats/self-release.js';
import { machineData } from '../seats/service.js';
import {
  activationByNonce,
  activationKey,
  endActivationsOf,
  findActivation,
  insertActivation,
  sharingActivation,
  storeResponse,
  updateActivation,
  type ActivationRow,
} from './repo.js';

/** Who activates or deactivates: an operator (Management API) or a customer (portal). */
export interface AirGapCaller {
  database: Database;
  tenant: Tenant;
  /** The audit actor: a member, a token or `customer/<id>`. */
  actor: { name: string };
  now: number;
}

const DAY_MS = 86_400_000;
/** DESIGN.md 14: a request older (or dated further ahead) than this is refused. */
const REQUEST_LIFETIME_MS = 7 * DAY_MS;
const seconds = (ms: number) => Math.floor(ms / 1000);

const within = <T>(caller: AirGapCaller, work: (t: Tenant) => Promise<T>) => transaction(caller.database, (trx) => work(tenant(trx, caller.tenant.orgId)));

/** A text as a person pasted or typed it, parsed; a malformed one is a 400 naming the field. */
function read<T>(field: string, text: string, parse: (text: string) => T): T {
  try {
    return parse(compactText(text));
  } catch (err) {
    if (err instanceof MalformedError) throw invalid(field, err.message);
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
  // DESIGN.md 18: a trial is one machine's ONLINE licence, started by that machine's own request.
  if (licence.trial === 1) throw badRequest('trials are activated online');
  const request = read('request', requestText, parseActivationRequest);
  if (!verifyActivationRequest(request)) throw invalid('request', 'the signature does not verify with its device key');
  const { fields } = request;
  if (fields.lid !== lid) throw invalid('request', `it was made for licence ${fields.lid}, not this one`);
  const product = (await findProductRow(caller.tenant, licence.product_id))!;
  if (product.air_gap_activation !== 1) throw badRequest("air-gapped activation is off for this licence's product");
  if (licence.licence_type === 'OFFLINE') throw badRequest('an OFFLINE licence needs no activation: it works on its own');
  // A licence keeps the seat model it was issued with, whatever its product became (DESIGN.md 13).
  if (licence.seat_model === 'FLOATING') throw badRequest('a floating licence cannot be activated air-gapped: its seats are leases its checks renew');
  if (Math.abs(now - fields.iat * 1000) > REQUEST_LIFETIME_MS) {
    throw invalid('request', 'it was made more than 7 days ago (or its computer’s clock is far off): make a new one');
  }
  const parts = JSON.stringify(parseFingerprint(fields.fp));

  const made = await within(caller, async (t) => {
    const row = await lockLicenceRow(caller.database.dialect, t, lid);
    const used = await activationByNonce(t, row.id, fields.nonce);
    if (used) {
      if (used.request === request.text && used.ended_at === null && used.until > now) return { created: false, activation: used };
      throw conflict('request: it was already used on this licence: make a new request on the computer');
    }
    const status = refuseStatus(row, now);
    const live = await liveBindings(t, row.id, now);
    const graceEnd = row.grace_ends_at ?? Number.POSITIVE_INFINITY;
    const until = seconds(Math.min(graceEnd, now + product.air_gap_activation_days * DAY_MS)) * 1000;
    const held = live.find((b) => b.parts === parts);
    let seat: Pick<BindingRow, 'id' | 'bound_at'>;
    if (held) {
      seat = held;
      // A seat a check made ordinary, or one named at issue, stays so; an activation's seat lasts to the latest end.
      if (held.lease_ends_at !== null && held.lease_ends_at < until) await updateBinding(t, seat.id, { lease_ends_at: until });
      // The same installation's earlier activation of this seat is replaced by this one.
      await endActivationsOf(t, seat.id, fields.dpk, caller.actor.name, now);
    } else {
      if (live.length >= row.max_machines) throw refused(`all ${row.max_machines} seats of this licence are taken: release a machine first`, 'SEATS_FULL');
      seat = await insertBinding(t, {
        licence_id: row.id,
        fingerprint: fields.fp,
        parts,
        bound_at: now,
        released_at: null,
        released_by: null,
        at_issue: 0,
        label: null,
        last_seen_at: null,
        lease_ends_at: until,
      });
    }
    const activation = await insertActivation(t, {
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
    });
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
    answer: {
      machineId: activation.binding_id,
      activationId: String(activation.id),
      until: iso(activation.until),
      response: await responseOf(caller, keyring, licence, activation),
    },
  };
}

/**
 * The stored response, or the activation's fields signed now (outside any transaction) with the
 * key that signed the licence, then stored; a concurrent signer's stored text wins.
 */
async function responseOf(caller: AirGapCaller, keyring: Keyring, licence: LicenceRow, activation: ActivationRow): Promise<string> {
  if (activation.response !== null) return activation.response;
  const key = await findKeyWithVersion(caller.tenant, licence.key_id);
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
  return storeResponse(caller.tenant, activation.id, text);
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
  if (code.fields.lid !== lid) throw invalid('code', `it was made for licence ${code.fields.lid}, not this one`);
  const known = await activationKey(caller.tenant, licence.id, Number(code.fields.aid));
  if (!known) throw invalid('code', `this licence has no air-gapped activation ${code.fields.aid}`);
  if (!verifyDeactivation(code, known.dpk)) throw invalid('code', 'the signature does not verify with the key of the computer that was activated');

  return within(caller, async (t) => {
    const row = await lockLicenceRow(caller.database.dialect, t, lid);
    const activation = await findActivation(t, Number(code.fields.aid));
    if (activation.released !== null) return deactivationAnswer(activation);
    const [seat] = await liveBindings(t, row.id, now, activation.binding_id);
    const sharing = await sharingActivation(t, activation.binding_id, activation.id, now);
    // Only a node-locked seat's end is an activation's (a floating licence's is its lease).
    const release = seat !== undefined && row.seat_model === 'NODE_LOCKED' && seat.lease_ends_at !== null && sharing === undefined;
    const counted = release && !force;
    if (counted) {
      const limit = (await findProductRow(t, row.product_id))!.self_release_limit;
      if (limit !== null && (await selfReleasesInWindow(t, row.id, now)) >= limit) throw forbidden('self-service release limit reached');
    }
    const ended = { ended_at: now, ended_by: caller.actor.name, released: release ? 1 : 0, counted: counted ? 1 : 0 };
    await updateActivation(t, activation.id, ended);
    const details = { airGapped: true, activationId: String(activation.id), released: release, ...(force ? { force: true } : {}) };
    if (release) {
      await markReleased(t, seat, caller.actor.name, now);
      await addRebinds(t, row.id, 1);
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
