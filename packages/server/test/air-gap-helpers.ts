// Shared by the air-gap API tests: an installation's device key and the texts it signs (DESIGN.md 14).
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { devicePublicKeyText, signActivationRequest, signDeactivation, type ActivationRequestFields } from '@licensor/protocol';
import { fingerprint } from './licence-helpers.js';

export interface Device {
  key: KeyObject;
  dpk: string;
  /** A signed request for `lid` from machine `machine` (fields overridable). */
  request(lid: string, machine: string | number, fields?: Partial<ActivationRequestFields>): string;
  deactivation(lid: string, aid: string): string;
}

export function device(): Device {
  const key = generateKeyPairSync('ed25519').privateKey;
  const dpk = devicePublicKeyText(key);
  return {
    key,
    dpk,
    request: (lid, machine, fields = {}) =>
      signActivationRequest(
        { lid, fp: fingerprint(machine), dpk, nonce: randomBytes(18).toString('base64url'), iat: Math.floor(Date.now() / 1000), ...fields },
        key,
      ),
    deactivation: (lid, aid) => signDeactivation({ lid, aid, iat: Math.floor(Date.now() / 1000) }, key),
  };
}
