import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  compactText,
  devicePrivateKey,
  devicePrivateKeySeed,
  devicePublicKeyText,
  groupsOfFive,
  MalformedError,
  parseActivationRequest,
  parseActivationResponse,
  parseFingerprint,
  signActivationRequest,
  signDeactivation,
  verifyActivationResponse,
  type ActivationResponseFields,
} from '@licensor/protocol';
import { isObject, lock, readStateFile, writeFileAtomically } from './store.js';
import { LicensorError } from './errors.js';

/**
 * DESIGN.md 14's state of one installation of one product, in `<root>/<slug>/<productKey>/`
 * beside the licences' files (docs/protocol.md section 8):
 * - `device.json` `{format: 1, seed, dpk, fingerprint}`: the Ed25519 device key (its 32-byte seed,
 *   B64U) and the fingerprint it was made on; another fingerprint makes a new key.
 * - `air-gap.json` `{format: 1, pending, activations, deactivated}`: the pending request text (one
 *   at a time) or null; the accepted response text per lid; the `aid` and `nonce` of every
 *   activation deactivated here, never accepted again.
 * Both mode 0600, written like the licences' files, under the lock `air-gap.lock`.
 */
export interface AirGapState {
  pending: string | null;
  activations: Record<string, string>;
  deactivated: Array<{ aid: string; nonce: string }>;
}

export interface DeviceKey {
  key: KeyObject;
  dpk: string;
  fingerprint: string;
}

/** An accepted activation as this machine judges it. */
export interface AirGapActivation {
  fields: ActivationResponseFields;
  /** The response verifies with a product key, for this device key and this machine's exact fingerprint. */
  usable: boolean;
}

/** How many deactivated activations are remembered (the oldest are forgotten first). */
const DEACTIVATED_KEPT = 1000;

const emptyAirGap = (): AirGapState => ({ pending: null, activations: {}, deactivated: [] });

/** Reads each field alone; anything unreadable is empty (a damaged file costs the pending request, never a key). */
function parseAirGap(data: Record<string, unknown> | null): AirGapState {
  if (data === null) return emptyAirGap();
  const activations = isObject(data.activations)
    ? Object.fromEntries(Object.entries(data.activations).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
    : {};
  const deactivated = Array.isArray(data.deactivated)
    ? data.deactivated
        .filter((d): d is { aid: string; nonce: string } => isObject(d) && typeof d.aid === 'string' && typeof d.nonce === 'string')
        .map(({ aid, nonce }) => ({ aid, nonce }))
    : [];
  return { pending: typeof data.pending === 'string' ? data.pending : null, activations, deactivated };
}

function parseDevice(data: Record<string, unknown> | null): DeviceKey | null {
  try {
    if (data === null || typeof data.seed !== 'string' || typeof data.fingerprint !== 'string') return null;
    const key = devicePrivateKey(data.seed);
    return { key, dpk: devicePublicKeyText(key), fingerprint: data.fingerprint };
  } catch {
    return null;
  }
}

/** The air-gap files of one product directory. */
export class AirGapFiles {
  constructor(readonly directory: string) {}

  get #state() {
    return path.join(this.directory, 'air-gap.json');
  }

  get #device() {
    return path.join(this.directory, 'device.json');
  }

  async load(): Promise<AirGapState> {
    return parseAirGap(await readStateFile(this.#state));
  }

  /** The device key made on this fingerprint, if there is one. */
  async deviceKey(fingerprint: string): Promise<DeviceKey | null> {
    const device = parseDevice(await readStateFile(this.#device));
    return device !== null && device.fingerprint === fingerprint ? device : null;
  }

  /** Changes the state under the lock; `device` gives the key made on this fingerprint, made now if needed. */
  async update<T>(fingerprint: string, change: (state: AirGapState, device: () => Promise<DeviceKey>) => T | Promise<T>): Promise<T> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const release = await lock(path.join(this.directory, 'air-gap.lock'));
    try {
      const state = await this.load();
      const device = async () => {
        const kept = await this.deviceKey(fingerprint);
        if (kept) return kept;
        const key = generateKeyPairSync('ed25519').privateKey;
        const made = { key, dpk: devicePublicKeyText(key), fingerprint };
        await writeFileAtomically(this.#device, `${JSON.stringify({ format: 1, seed: devicePrivateKeySeed(key), dpk: made.dpk, fingerprint }, null, 2)}\n`);
        return made;
      };
      const result = await change(state, device);
      const kept = { ...state, deactivated: state.deactivated.slice(-DEACTIVATED_KEPT) };
      await writeFileAtomically(this.#state, `${JSON.stringify({ format: 1, ...kept }, null, 2)}\n`);
      return result;
    } finally {
      await release();
    }
  }
}

const bad = (message: string) => new LicensorError('BAD_ACTIVATION', message);
const sameMachine = (a: string, b: string) => {
  try {
    return JSON.stringify(parseFingerprint(a)) === JSON.stringify(parseFingerprint(b));
  } catch {
    return false;
  }
};

/** A new pending request for `lid` from this machine, replacing any other; answers its text and groups of five. */
export async function makeRequest(files: AirGapFiles, lid: string, fingerprint: string, now: number) {
  const request = await files.update(fingerprint, async (state, device) => {
    const { key, dpk } = await device();
    state.pending = signActivationRequest({ lid, fp: fingerprint, dpk, nonce: randomBytes(24).toString('base64url'), iat: Math.floor(now / 1000) }, key);
    return state.pending;
  });
  return { request, groups: groupsOfFive(request) };
}

/**
 * Accepts a response (DESIGN.md 14): it must verify with a product key, and its lid, dpk, nonce
 * and fp equal the pending request's, fp equal this machine's fingerprint now in all five
 * components, and neither its aid nor its nonce belong to an activation deactivated here.
 * Accepting consumes the pending request. Anything else is BAD_ACTIVATION and changes nothing.
 */
export async function acceptResponse(files: AirGapFiles, text: string, lid: string, fingerprint: string, keys: readonly KeyObject[]) {
  let parsed: ReturnType<typeof parseActivationResponse>;
  try {
    parsed = parseActivationResponse(compactText(text));
  } catch (error) {
    if (error instanceof MalformedError) throw bad(`not an activation response: ${error.message}`);
    throw error;
  }
  if (verifyActivationResponse(parsed, keys) === null) throw bad("the response does not verify with this product's keys");
  const { fields } = parsed;
  return files.update(fingerprint, async (state) => {
    if (state.pending === null) throw bad('no activation request is pending on this installation');
    const pending = parseActivationRequest(state.pending).fields;
    if (fields.lid !== lid || pending.lid !== lid) throw bad('the response is for another licence');
    if (fields.dpk !== pending.dpk || (await files.deviceKey(fingerprint))?.dpk !== fields.dpk) throw bad('the response is for another installation');
    if (fields.nonce !== pending.nonce) throw bad('the response answers another request');
    if (fields.fp !== pending.fp || !sameMachine(fields.fp, fingerprint)) throw bad('the response is for another machine');
    if (state.deactivated.some((d) => d.aid === fields.aid || d.nonce === fields.nonce)) throw bad('the response is for an activation deactivated here');
    state.pending = null;
    state.activations[lid] = parsed.text;
    return fields;
  });
}

/** Forgets this licence's activation first, then answers the deactivation code its device key signs. */
export async function deactivate(files: AirGapFiles, lid: string, fingerprint: string, now: number) {
  return files.update(fingerprint, async (state, device) => {
    const text = state.activations[lid];
    if (text === undefined) throw bad('this installation holds no air-gapped activation of this licence');
    const { aid, nonce } = parseActivationResponse(text).fields;
    delete state.activations[lid];
    state.deactivated.push({ aid, nonce });
    const code = signDeactivation({ lid, aid, iat: Math.floor(now / 1000) }, (await device()).key);
    return { code, groups: groupsOfFive(code) };
  });
}

/** This installation's device public key (B64U), made now if there is none for this fingerprint. */
export function devicePublicKey(files: AirGapFiles, fingerprint: string): Promise<string> {
  return files.update(fingerprint, async (_state, device) => (await device()).dpk);
}

/** This licence's kept activation as this machine judges it now, or null. */
export async function keptActivation(files: AirGapFiles, lid: string, fingerprint: string, keys: readonly KeyObject[]): Promise<AirGapActivation | null> {
  const text = (await files.load()).activations[lid];
  if (text === undefined) return null;
  let parsed: ReturnType<typeof parseActivationResponse>;
  try {
    parsed = parseActivationResponse(text);
  } catch {
    return null;
  }
  const device = await files.deviceKey(fingerprint);
  const { fields } = parsed;
  const usable = verifyActivationResponse(parsed, keys) !== null && fields.lid === lid && device?.dpk === fields.dpk && sameMachine(fields.fp, fingerprint);
  return { fields, usable };
}

/** Ends this licence's activation here (a later verified answer said not licensed). */
export async function endActivation(files: AirGapFiles, lid: string, fingerprint: string): Promise<void> {
  await files.update(fingerprint, (state) => {
    delete state.activations[lid];
  });
}
