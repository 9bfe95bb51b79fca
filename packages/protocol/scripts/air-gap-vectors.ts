// The air-gap section of the golden vectors (DESIGN.md 14), made with the algorithm keys already
// in the file: the request and deactivation signed by a device key, a response per algorithm.
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import {
  b64uEncode,
  devicePrivateKeySeed,
  devicePublicKeyText,
  groupsOfFive,
  signActivationRequest,
  signActivationResponse,
  signBytes,
  signDeactivation,
  type ActivationRequestFields,
  type ActivationResponseFields,
  type DeactivationFields,
} from '../src/index.js';
import type { AirGapVectors, AlgorithmVector, BadText } from '../test-vectors/index.js';

const LID = '0b8f6a52-3f0e-4c59-9a55-6a1d2f6f7c01';
const NONCE = 'aG9hcmQtbm9uY2UtMDAx_-';

/** A text of this tag over any payload JSON, correctly signed, so only the payload is wrong. */
function signedText(tag: string, json: string, key: KeyObject): string {
  const part = `${tag}.${b64uEncode(json)}`;
  return `${part}.${signBytes(key, Buffer.from(part, 'latin1')).toString('base64url')}`;
}

/** Refusals every format shares: a changed field, a foreign key, and strict-parsing cases. */
function badTexts(tag: string, text: string, key: KeyObject, otherKey: KeyObject, edit: [string, string]): BadText[] {
  const [, payload, signature] = text.split('.') as [string, string, string];
  const json = Buffer.from(payload, 'base64url').toString('utf8');
  return [
    { name: 'field edited', text: `${tag}.${b64uEncode(json.replace(edit[0], edit[1]))}.${signature}`, expected: 'BAD_SIGNATURE' },
    { name: 'signed by another key', text: signedText(tag, json, otherKey), expected: 'BAD_SIGNATURE' },
    { name: 'signature truncated', text: `${tag}.${payload}.${b64uEncode(Buffer.from(signature, 'base64url').subarray(0, -2))}`, expected: 'BAD_SIGNATURE' },
    { name: 'other tag', text: `${tag.slice(0, -1)}2.${payload}.${signature}`, expected: 'MALFORMED' },
    { name: 'lowercase tag', text: `${tag.toLowerCase()}.${payload}.${signature}`, expected: 'MALFORMED' },
    { name: 'padding appended', text: `${text}=`, expected: 'MALFORMED' },
    { name: 'two parts', text: `${tag}.${payload}`, expected: 'MALFORMED' },
    { name: 'four parts', text: `${text}.AAAA`, expected: 'MALFORMED' },
    { name: 'signed with an unknown field', text: signedText(tag, json.replace(/}$/, ',"x":1}'), key), expected: 'MALFORMED' },
    { name: 'signed without iat', text: signedText(tag, json.replace(/,?"iat":\d+/, ''), key), expected: 'MALFORMED' },
    { name: 'signed with a duplicate field', text: signedText(tag, json.replace(/^\{/, '{"lid":"forged",'), key), expected: 'MALFORMED' },
    { name: 'signed with fractional iat', text: signedText(tag, json.replace(/"iat":(\d+)/, '"iat":$1.0'), key), expected: 'MALFORMED' },
    { name: 'signed with string iat', text: signedText(tag, json.replace(/"iat":(\d+)/, '"iat":"$1"'), key), expected: 'MALFORMED' },
    { name: 'signed JSON array', text: signedText(tag, '[]', key), expected: 'MALFORMED' },
  ];
}

export function airGapVectors(algorithms: AlgorithmVector[], fp: string, otherFp: string): AirGapVectors {
  const device = generateKeyPairSync('ed25519').privateKey;
  const otherDevice = generateKeyPairSync('ed25519').privateKey;
  const dpk = devicePublicKeyText(device);
  const requestFields: ActivationRequestFields = { lid: LID, fp, dpk, nonce: NONCE, iat: 1_764_000_000 };
  const request = signActivationRequest(requestFields, device);
  const deactivationFields: DeactivationFields = { lid: LID, aid: '42', iat: 1_764_086_400 };
  const deactivation = signDeactivation(deactivationFields, device);

  const responses = algorithms.map((vector) => {
    const fields: ActivationResponseFields = {
      lid: LID,
      aid: '42',
      fp,
      dpk,
      nonce: NONCE,
      status: 'ACTIVE',
      iat: 1_764_000_600,
      boundAt: 1_764_000_600,
      until: 1_771_776_600,
    };
    return { algorithm: vector.algorithm, fields, text: signActivationResponse(fields, createPrivateKey(vector.privateKeyPem)) };
  });
  const [first] = responses;
  const firstKey = createPrivateKey(algorithms[0]!.privateKeyPem);
  const secondKey = createPrivateKey(algorithms[1]!.privateKeyPem);
  const badResponses: BadText[] = [
    ...badTexts('SVCX1', first!.text, firstKey, secondKey, ['"until":1771776600', '"until":1871776600']),
    {
      name: 'fp of another machine, re-encoded',
      text: `SVCX1.${b64uEncode(Buffer.from(first!.text.split('.')[1]!, 'base64url').toString('utf8').replace(fp, otherFp))}.${first!.text.split('.')[2]}`,
      expected: 'BAD_SIGNATURE',
    },
    { name: 'signed with status EXPIRED', text: signActivationResponseRaw(first!.fields, firstKey, { status: 'EXPIRED' }), expected: 'MALFORMED' },
    { name: 'signed with a numeric aid', text: signActivationResponseRaw(first!.fields, firstKey, { aid: 42 }), expected: 'MALFORMED' },
  ];

  return {
    description:
      "DESIGN.md 14. Responses are signed with the key of the algorithm vector of the same name (the first verifies with the first algorithm vector's public key); badResponses verify with algorithms[0]'s public key; badRequests and badDeactivations with deviceKey.",
    deviceKey: { seed: devicePrivateKeySeed(device), dpk },
    otherDeviceKey: { seed: devicePrivateKeySeed(otherDevice), dpk: devicePublicKeyText(otherDevice) },
    request: { fields: requestFields, text: request, groups: groupsOfFive(request) },
    badRequests: [
      ...badTexts('SVCA1', request, device, otherDevice, [NONCE, `${NONCE}x`]),
      { name: 'signed with a short nonce', text: signedText('SVCA1', JSON.stringify({ ...requestFields, nonce: 'short' }), device), expected: 'MALFORMED' },
      { name: 'signed with a bad fingerprint', text: signedText('SVCA1', JSON.stringify({ ...requestFields, fp: 'SVC1.x.y' }), device), expected: 'MALFORMED' },
      {
        name: 'signed with a 31-byte dpk',
        text: signedText('SVCA1', JSON.stringify({ ...requestFields, dpk: dpk.slice(0, 42) }), device),
        expected: 'MALFORMED',
      },
    ],
    deactivation: { fields: deactivationFields, text: deactivation },
    badDeactivations: badTexts('SVCD1', deactivation, device, otherDevice, ['"aid":"42"', '"aid":"43"']),
    responses,
    badResponses,
  };
}

/** A response with some fields replaced by values its format refuses, correctly signed. */
function signActivationResponseRaw(fields: ActivationResponseFields, key: KeyObject, changes: Record<string, unknown>): string {
  return signedText('SVCX1', JSON.stringify({ ...fields, ...changes }), key);
}
