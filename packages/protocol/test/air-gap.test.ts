import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  compactText,
  devicePrivateKey,
  devicePublicKeyText,
  groupsOfFive,
  MalformedError,
  parseActivationRequest,
  parseActivationResponse,
  parseDeactivation,
  signActivationRequest,
  signActivationResponse,
  signActivationResponseWith,
  signDeactivation,
  signBytes,
  verifyActivationRequest,
  verifyActivationResponse,
  verifyDeactivation,
  type ActivationRequestFields,
  type ActivationResponseFields,
  type DeactivationFields,
} from '../src/index.js';
import { keysOf, loadVectors, type BadText } from '../test-vectors/index.js';

const vectors = loadVectors();
const airGap = vectors.airGap!;
const device = devicePrivateKey(airGap.deviceKey.seed);

/** MALFORMED when the parser throws, BAD_SIGNATURE when it parses but does not verify, else OK. */
function judge(text: string, parse: (t: string) => unknown, verify: (parsed: never) => boolean): string {
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (error) {
    if (error instanceof MalformedError) return 'MALFORMED';
    throw error;
  }
  return verify(parsed as never) ? 'OK' : 'BAD_SIGNATURE';
}

const refusals = (bad: BadText[]) => bad.map((b) => [b.name, b] as const);

describe('air-gap vectors (DESIGN.md 14)', () => {
  it('the device key seed gives the stored dpk', () => {
    expect(devicePublicKeyText(device)).toBe(airGap.deviceKey.dpk);
  });

  it('signs the request to the stored text (Ed25519 is deterministic), which parses and verifies', () => {
    expect(signActivationRequest(airGap.request.fields as unknown as ActivationRequestFields, device)).toBe(airGap.request.text);
    const parsed = parseActivationRequest(airGap.request.text);
    expect(parsed.fields).toEqual(airGap.request.fields);
    expect(verifyActivationRequest(parsed)).toBe(true);
  });

  it('groups of five read back to the text, whitespace and line breaks ignored', () => {
    expect(groupsOfFive(airGap.request.text)).toBe(airGap.request.groups);
    expect(airGap.request.groups.split(' ').every((g, i, all) => g.length === 5 || i === all.length - 1)).toBe(true);
    expect(compactText(airGap.request.groups.replace(/ /g, ' \n\t'))).toBe(airGap.request.text);
  });

  it.each(refusals(airGap.badRequests))('refuses a request: %s', (_, bad) => {
    expect(judge(bad.text, parseActivationRequest, verifyActivationRequest)).toBe(bad.expected);
  });

  it('signs the deactivation to the stored text, verified only with its own device key', () => {
    expect(signDeactivation(airGap.deactivation.fields as unknown as DeactivationFields, device)).toBe(airGap.deactivation.text);
    const parsed = parseDeactivation(airGap.deactivation.text);
    expect(verifyDeactivation(parsed, airGap.deviceKey.dpk)).toBe(true);
    expect(verifyDeactivation(parsed, airGap.otherDeviceKey.dpk)).toBe(false);
  });

  it.each(refusals(airGap.badDeactivations))('refuses a deactivation: %s', (_, bad) => {
    expect(judge(bad.text, parseDeactivation, (p) => verifyDeactivation(p, airGap.deviceKey.dpk))).toBe(bad.expected);
  });

  it('has a response for each of the six algorithms', () => {
    expect(airGap.responses.map((r) => r.algorithm)).toEqual(vectors.algorithms.map((a) => a.algorithm));
  });

  describe.each(airGap.responses.map((r, i) => [r.algorithm, r, vectors.algorithms[i]!] as const))('%s response', (_, response, vector) => {
    const { privateKey, publicKey } = keysOf(vector);
    const others = vectors.algorithms.filter((a) => a !== vector).map((a) => keysOf(a).publicKey);

    it('parses to its fields and verifies with its key alone', () => {
      const parsed = parseActivationResponse(response.text);
      expect(parsed.fields).toEqual(response.fields);
      expect(verifyActivationResponse(parsed, [...others, publicKey])).toBe(publicKey);
      expect(verifyActivationResponse(parsed, others)).toBeNull();
    });

    it(vector.deterministic ? 'signs to the stored text' : 'signs a fresh text that verifies', async () => {
      const fields = response.fields as unknown as ActivationResponseFields;
      const text = signActivationResponse(fields, privateKey);
      if (vector.deterministic) expect(text).toBe(response.text);
      expect(verifyActivationResponse(parseActivationResponse(text), [publicKey])).toBe(publicKey);
      const viaSigner = await signActivationResponseWith(fields, async (data) => signBytes(privateKey, data));
      expect(verifyActivationResponse(parseActivationResponse(viaSigner), [publicKey])).toBe(publicKey);
    });
  });

  it.each(refusals(airGap.badResponses))('refuses a response: %s', (_, bad) => {
    const key = keysOf(vectors.algorithms[0]!).publicKey;
    expect(judge(bad.text, parseActivationResponse, (p) => verifyActivationResponse(p, [key]) !== null)).toBe(bad.expected);
  });

  it('will not sign fields outside their rules', () => {
    const fields = { ...(airGap.request.fields as unknown as ActivationRequestFields), nonce: 'short' };
    expect(() => signActivationRequest(fields, device)).toThrow(TypeError);
    expect(() => devicePublicKeyText(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey)).toThrow(TypeError);
  });
});
