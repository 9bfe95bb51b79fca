import { describe, expect, it } from 'vitest';
import { verifyLicence } from '@licensor/sdk';
import { genuineAnswer, licensed, onlineLicence, publicKeyPem, T0, testClient, type SentRequest } from './fake-service.js';

const DAY = 86_400;
const iat = T0 / 1000 - 30 * DAY;
const exp = iat + 365 * DAY;
/** Unix seconds of the end of a window two years after issue. */
const UPD = iat + 730 * DAY;
const ok = (request: SentRequest) => ({ status: 200, body: genuineAnswer(request, licensed()) });

describe('updatesUntil (DESIGN.md 20)', () => {
  it('is the signed upd, and upd is not one of the product parameters', () => {
    const licence = onlineLicence({
      params: [
        ['upd', UPD],
        ['seats', 5],
      ],
    });
    const { client } = testClient(ok, { licence });
    expect(client.updatesUntil()).toEqual(new Date(UPD * 1000));
    const verified = verifyLicence(licence, publicKeyPem, { now: new Date(T0) });
    expect(verified.signed && verified.params).toEqual({ seats: 5 });
  });

  it('is the grace end without upd, and null for a perpetual licence (every release)', () => {
    expect(testClient(ok, { licence: onlineLicence({ exp, grace: 7 }) }).client.updatesUntil()).toEqual(new Date((exp + 7 * DAY) * 1000));
    expect(testClient(ok, { licence: onlineLicence({ exp: null }) }).client.updatesUntil()).toBeNull();
  });

  it("keeps a product's own parameter named upd that is not a time", () => {
    const licence = onlineLicence({ exp: null, params: [['upd', 'nightly']] });
    const verified = verifyLicence(licence, publicKeyPem, { now: new Date(T0) });
    expect(verified.signed && verified.params).toEqual({ upd: 'nightly' });
    expect(testClient(ok, { licence }).client.updatesUntil()).toBeNull();
  });

  it('follows the newest verified term, and is null for a licence that does not verify', async () => {
    const old = onlineLicence({ params: [['upd', UPD]] });
    const lid = JSON.parse(Buffer.from(old.split('.')[0]!, 'base64url').toString()).lid as string;
    const renewed = onlineLicence({ lid, iat: iat + DAY, params: [['upd', UPD + 365 * DAY]] });
    const { client } = testClient((request) => (request.url.endsWith('/fetch') ? { status: 200, body: { license: renewed } } : ok(request)), { licence: old });
    expect(client.updatesUntil()).toEqual(new Date(UPD * 1000));
    await client.fetch();
    expect(client.updatesUntil()).toEqual(new Date((UPD + 365 * DAY) * 1000));
    const [payload, signature] = old.split('.');
    const forged = `${Buffer.from(
      Buffer.from(payload!, 'base64url')
        .toString()
        .replace(String(UPD), String(UPD + 1)),
    ).toString('base64url')}.${signature}`;
    expect(testClient(ok, { licence: forged }).client.updatesUntil()).toBeNull();
  });
});
