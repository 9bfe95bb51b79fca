import { createPublicKey } from 'node:crypto';
import { parseFingerprint } from '@licensor/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import {
  ISO_MS,
  UUID,
  addDays,
  addMonths,
  countRows,
  createProduct,
  fingerprint,
  issueOk,
  nodeVerifies,
  payloadText,
  startUtc,
  todayUtc,
} from '../licence-helpers.js';

let h: Harness;
let offline: any; // default product: OFFLINE only, 12 months, grace 0, maxMachines 1, fingerprintNeed 3
let multi: any; // allows every type
let typed: any; // one parameter of each type

beforeAll(async () => {
  h = await startHarness();
  [offline, multi, typed] = await Promise.all([
    createProduct(h.admin),
    createProduct(h.admin, {
      licenceType: 'OFFLINE',
      allowedLicenceTypes: ['OFFLINE', 'ONLINE', 'HYBRID'],
      checkIntervalSeconds: 3600,
      maxOfflineSeconds: 86_400,
      fingerprintNeed: 4,
      maxMachines: 2,
    }),
    createProduct(h.admin, {
      params: [
        { key: 'tier', type: 'ENUM', options: ['basic', 'pro', 'enterprise'], defaultValue: 'basic' },
        { key: 'seats', type: 'INTEGER', required: true },
        { key: 'features', type: 'STRING_LIST', defaultValue: '["sync","export"]' },
        { key: 'support', type: 'BOOLEAN', defaultValue: 'false' },
        { key: 'renewBy', type: 'DATE' },
        { key: 'comment', type: 'STRING' },
      ],
    }),
  ]);
});
afterAll(() => h?.close());

const seconds = (iso: string) => Date.parse(iso) / 1000;

describe('issue: the full licence', () => {
  it('issues with every field of the issue body and answers 201 with every licence field', async () => {
    const start = addDays(todayUtc(), 20);
    const [a, b] = [fingerprint('full-a'), fingerprint('full-b')];
    const before = Math.floor(Date.now() / 1000) * 1000;
    const response = await h.admin('POST', '/licenses', {
      productId: multi.id,
      customer: { name: 'Umbrella Corp', email: 'licensing@umbrella.example' },
      issueDate: start,
      validityMonths: 6,
      graceDays: 7,
      licenceType: 'HYBRID',
      activation: 'OFFLINE',
      fingerprint: a,
      fingerprints: [b, a],
      maxMachines: 3,
      params: {},
      updatesMonths: 18,
      notes: 'PO 4711',
    });
    const after = Date.now();
    expect(response.statusCode).toBe(201);
    const licence = response.data;
    expect(licence).toEqual({
      lid: expect.stringMatching(UUID),
      customerId: expect.any(Number),
      licensee: 'Umbrella Corp',
      licenseeEmail: 'licensing@umbrella.example',
      productId: multi.id,
      productName: multi.name,
      productKey: multi.productKey,
      issuedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/),
      startsAt: startUtc(start),
      expiresAt: startUtc(addMonths(start, 6)),
      graceDays: 7,
      licenceType: 'HYBRID',
      activation: 'OFFLINE',
      seatModel: 'NODE_LOCKED',
      activated: true,
      boundAt: expect.stringMatching(ISO_MS),
      rebindCount: 0,
      maxMachines: 3,
      seatsUsed: 2,
      status: 'PENDING',
      checkHealth: 'NEVER',
      checkMaxSeconds: 86_400,
      checkEverySeconds: 3600,
      revoked: false,
      revokedAt: null,
      revokedReason: null,
      archived: false,
      archivedAt: null,
      issuedBy: 'admin',
      lastCheckedAt: null,
      renewedAt: null,
      claims: expect.any(Object),
      licenseString: expect.stringMatching(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/),
      notes: 'PO 4711',
      meters: [],
      trial: false,
      trialStartedAt: null,
      trialConvertedTo: null,
      trialConvertedAt: null,
      trialLedgerResetAt: null,
      trialInstallations: null,
      convertedFromTrial: null,
      updatesMonths: 18,
      // The update window runs from the issue date, as the term does, and outlasts it here.
      updatesUntil: startUtc(addMonths(start, 18)),
      feedGeneration: 1,
    });
    const issuedAt = Date.parse(licence.issuedAt);
    expect(issuedAt).toBeGreaterThanOrEqual(before);
    expect(issuedAt).toBeLessThanOrEqual(after);
    expect(licence.claims).toEqual({
      v: 4,
      lid: licence.lid,
      prd: multi.productKey,
      org: 'acme',
      typ: 'HYBRID',
      act: 'OFFLINE',
      lic: 'Umbrella Corp',
      iat: issuedAt / 1000,
      nbf: seconds(licence.startsAt),
      exp: seconds(licence.expiresAt),
      grace: 7,
      fp: [a, b],
      fpn: 4,
      mm: 3,
      chk: 3600,
      max: 86_400,
      upd: seconds(licence.updatesUntil),
    });
    expect(Object.keys(licence.claims)).toEqual([
      'v',
      'lid',
      'prd',
      'org',
      'typ',
      'act',
      'lic',
      'iat',
      'nbf',
      'exp',
      'grace',
      'fp',
      'fpn',
      'mm',
      'chk',
      'max',
      'upd',
    ]);
    // The signed bytes are exactly the claims in that order, and they verify outside the service.
    expect(payloadText(licence.licenseString)).toBe(JSON.stringify(licence.claims));
    expect(nodeVerifies(licence.licenseString, multi.publicKeyPem, 'ED25519')).toBe(true);
    // The detail read is the same licence; notes are never signed.
    const detail = await h.admin('GET', `/licenses/${licence.lid}`);
    expect(detail.statusCode).toBe(200);
    expect(detail.data).toEqual(licence);
    expect(payloadText(licence.licenseString)).not.toContain('PO 4711');
  });

  it('signs an OFFLINE licence with claims in wire order, omitting the ones that do not apply', async () => {
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Offline Ltd' });
    expect(Object.keys(licence.claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'lic', 'iat', 'exp', 'grace', 'mm']);
    expect(licence.claims).toMatchObject({ v: 3, typ: 'OFFLINE', grace: 0, mm: 1 });
    expect(licence).toMatchObject({
      licenceType: 'OFFLINE',
      activation: null,
      checkHealth: 'NOT_APPLICABLE',
      checkEverySeconds: null,
      checkMaxSeconds: null,
      startsAt: null,
      status: 'ACTIVE',
      activated: false,
      boundAt: null,
      seatsUsed: 0,
      maxMachines: 1,
      graceDays: 0,
      expiresAt: startUtc(addMonths(todayUtc(), 12)),
    });
    expect(payloadText(licence.licenseString)).not.toMatch(/null/);
  });

  it('signs chk and max into an ONLINE licence', async () => {
    const licence = await issueOk(h.admin, { productId: multi.id, licensee: 'Online Ltd', licenceType: 'ONLINE' });
    expect(Object.keys(licence.claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'lic', 'iat', 'exp', 'grace', 'mm', 'chk', 'max']);
    expect(licence.claims).toMatchObject({ typ: 'ONLINE', chk: 3600, max: 86_400, mm: 2 });
    expect(licence).toMatchObject({ activation: null, checkHealth: 'NEVER', checkEverySeconds: 3600, checkMaxSeconds: 86_400, activated: false });
  });

  it('gives a HYBRID licence activation ONLINE by default, signed as act', async () => {
    const licence = await issueOk(h.admin, { productId: multi.id, licensee: 'Hybrid Ltd', licenceType: 'HYBRID' });
    expect(Object.keys(licence.claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'act', 'lic', 'iat', 'exp', 'grace', 'mm', 'chk', 'max']);
    expect(licence.claims.act).toBe('ONLINE');
    expect(licence.activation).toBe('ONLINE');
    expect((await h.admin('GET', `/licenses/${licence.lid}/machines`)).data).toEqual([]);
  });

  it('signs several fingerprints as an fp array with v 4 and fpn, then the parameters in declared order', async () => {
    const start = addDays(todayUtc(), 3);
    const [a, b] = [fingerprint('two-a'), fingerprint('two-b')];
    const licence = await issueOk(h.admin, {
      productId: typed.id,
      licensee: 'Two Machines Ltd',
      startsOn: start,
      fingerprints: [a, b],
      params: { comment: 'hello', seats: 5 },
    });
    expect(Object.keys(licence.claims)).toEqual([
      'v',
      'lid',
      'prd',
      'org',
      'typ',
      'lic',
      'iat',
      'nbf',
      'exp',
      'grace',
      'fp',
      'fpn',
      'mm',
      'tier',
      'seats',
      'features',
      'support',
      'comment',
    ]);
    expect(licence.claims).toMatchObject({
      v: 4,
      fp: [a, b],
      fpn: 3,
      mm: 2,
      nbf: seconds(startUtc(start)),
      tier: 'basic',
      seats: 5,
      features: ['sync', 'export'],
      support: false,
      comment: 'hello',
    });
    expect(licence).toMatchObject({ startsAt: startUtc(start), status: 'PENDING', maxMachines: 2, seatsUsed: 2, activated: true });
  });

  it('signs a single fingerprint as a string with v 3', async () => {
    const a = fingerprint('single');
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'One Machine Ltd', fingerprint: a, fingerprints: [a] });
    expect(Object.keys(licence.claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'lic', 'iat', 'exp', 'grace', 'fp', 'fpn', 'mm']);
    expect(licence.claims).toMatchObject({ v: 3, fp: a, fpn: 3, mm: 1 });
  });

  it('issues a perpetual licence with no expiry and no exp claim, never expiring', async () => {
    const licence = await issueOk(h.admin, {
      productId: offline.id,
      licensee: 'Forever Ltd',
      issueDate: addDays(todayUtc(), -800),
      validityMonths: 0,
      graceDays: 3,
    });
    expect(licence).toMatchObject({ expiresAt: null, startsAt: null, status: 'ACTIVE', graceDays: 3 });
    expect(licence.claims).not.toHaveProperty('exp');
    expect(licence.claims.grace).toBe(3);
    const verdict = await h.admin('POST', '/licenses/verify', { license: licence.licenseString });
    expect(verdict.data).toMatchObject({ valid: true, expiry: { expiresAt: null, graceEndsAt: null, status: 'ACTIVE' } });
  });

  it('keeps the issue answer and the stored licence consistent with the public key', async () => {
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Key Check Ltd' });
    const pem = await h.admin('GET', `/products/${offline.id}/public-key`);
    expect(pem.statusCode).toBe(200);
    expect(nodeVerifies(licence.licenseString, pem.body, 'ED25519')).toBe(true);
    expect(createPublicKey(pem.body).asymmetricKeyType).toBe('ed25519');
  });
});

describe('issue: status from the calendar', () => {
  const today = () => todayUtc();

  it.each([
    ['ACTIVE today', () => ({ issueDate: today() }), 'ACTIVE'],
    ['ACTIVE from a past date', () => ({ issueDate: addDays(today(), -1) }), 'ACTIVE'],
    ['PENDING from a future date', () => ({ issueDate: addDays(today(), 1) }), 'PENDING'],
    ['GRACE after expiry within grace', () => ({ issueDate: addDays(today(), -40), validityMonths: 1, graceDays: 30 }), 'GRACE'],
    ['EXPIRED after grace', () => ({ issueDate: addDays(today(), -40), validityMonths: 1, graceDays: 5 }), 'EXPIRED'],
    ['EXPIRED without grace', () => ({ issueDate: addDays(today(), -400) }), 'EXPIRED'],
  ])('%s', async (_name, dates, status) => {
    const body = dates() as { issueDate: string; validityMonths?: number; graceDays?: number };
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Calendar Ltd', ...body });
    expect(licence.status).toBe(status);
    const future = body.issueDate > today();
    expect(licence.startsAt).toBe(future ? startUtc(body.issueDate) : null);
    expect(licence.claims.nbf).toBe(future ? seconds(startUtc(body.issueDate)) : undefined);
    expect(licence.expiresAt).toBe(startUtc(addMonths(body.issueDate, body.validityMonths ?? 12)));
    expect(licence.claims.exp).toBe(seconds(licence.expiresAt));
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.status).toBe(status);
  });

  it('REVOKED once revoked', async () => {
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Calendar Ltd' });
    expect((await h.admin('POST', `/licenses/${licence.lid}/revoke`)).data.status).toBe('REVOKED');
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.status).toBe('REVOKED');
  });

  it('computes status when read: moving the calendar under a stored licence moves its status', async () => {
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Moving Ltd', issueDate: addDays(todayUtc(), 2), graceDays: 1 });
    expect(licence.status).toBe('PENDING');
    const now = Date.now();
    const move = (set: Record<string, number | null>) => h.database.db.updateTable('licences').set(set).where('lid', '=', licence.lid).execute();
    const status = async () => (await h.admin('GET', `/licenses/${licence.lid}`)).data.status;
    await move({ starts_at: now - 60_000 });
    expect(await status()).toBe('ACTIVE');
    await move({ expires_at: now - 60_000, grace_ends_at: now - 60_000 + 86_400_000 });
    expect(await status()).toBe('GRACE');
    await move({ expires_at: now - 86_400_000 - 60_000, grace_ends_at: now - 60_000 });
    expect(await status()).toBe('EXPIRED');
  });

  it('clamps to the month end and counts from the issue date', async () => {
    const jan = await issueOk(h.admin, { productId: offline.id, licensee: 'Clamp Ltd', issueDate: '2026-01-31', validityMonths: 1, graceDays: 1000 });
    expect(jan.expiresAt).toBe('2026-02-28T00:00:00.000Z');
    expect(jan.claims.exp).toBe(seconds('2026-02-28T00:00:00.000Z'));
    const leap = await issueOk(h.admin, { productId: offline.id, licensee: 'Clamp Ltd', issueDate: '2028-01-31', validityMonths: 1 });
    expect(leap).toMatchObject({ startsAt: '2028-01-31T00:00:00.000Z', expiresAt: '2028-02-29T00:00:00.000Z', status: 'PENDING' });
    const march = await issueOk(h.admin, { productId: offline.id, licensee: 'Clamp Ltd', issueDate: '2026-03-31', validityMonths: 11, graceDays: 1000 });
    expect(march.expiresAt).toBe('2027-02-28T00:00:00.000Z');
  });
});

describe('issue: dates in a non-UTC organisation', () => {
  let berlin: Awaited<ReturnType<Harness['otherOrg']>>;
  let product: any;
  beforeAll(async () => {
    berlin = await h.otherOrg();
    expect((await berlin.admin('PUT', '/settings', { timezone: 'Europe/Berlin' })).statusCode).toBe(200);
    product = await createProduct(berlin.admin);
  });

  it('dates a licence from the start of the local date, DST-safe', async () => {
    // 2026-03-29 is the spring-forward day; 2027-03-29 falls after 2027's (28 March), so in CEST.
    const dstDay = await issueOk(berlin.admin, { productId: product.id, licensee: 'Berlin GmbH', issueDate: '2026-03-29', validityMonths: 12 });
    expect(dstDay.expiresAt).toBe('2027-03-28T22:00:00.000Z');
    expect(dstDay.claims.exp).toBe(seconds('2027-03-28T22:00:00.000Z'));
    expect(dstDay.startsAt).toBeNull();
    const toDstDay = await issueOk(berlin.admin, { productId: product.id, licensee: 'Berlin GmbH', issueDate: '2025-03-29', validityMonths: 12 });
    expect(toDstDay.expiresAt).toBe('2026-03-28T23:00:00.000Z');
  });

  it('starts a future licence at local midnight and expires it at local midnight across DST', async () => {
    const licence = await issueOk(berlin.admin, { productId: product.id, licensee: 'Berlin GmbH', issueDate: '2027-03-28', validityMonths: 12 });
    expect(licence).toMatchObject({ status: 'PENDING', startsAt: '2027-03-27T23:00:00.000Z', expiresAt: '2028-03-27T22:00:00.000Z' });
    expect(licence.claims.nbf).toBe(seconds('2027-03-27T23:00:00.000Z'));
  });

  it('clamps month ends in local time', async () => {
    const licence = await issueOk(berlin.admin, {
      productId: product.id,
      licensee: 'Berlin GmbH',
      issueDate: '2026-01-31',
      validityMonths: 1,
      graceDays: 1000,
    });
    expect(licence.expiresAt).toBe('2026-02-27T23:00:00.000Z');
  });

  it('finds the first instant of a day whose midnight does not exist', async () => {
    expect((await berlin.admin('PUT', '/settings', { timezone: 'America/Santiago' })).statusCode).toBe(200);
    try {
      // Chile springs forward at 24:00 on 4 September 2027: 5 September starts at 01:00 (-03).
      const licence = await issueOk(berlin.admin, { productId: product.id, licensee: 'Santiago SpA', issueDate: '2027-09-05', validityMonths: 1 });
      expect(licence.startsAt).toBe('2027-09-05T04:00:00.000Z');
    } finally {
      await berlin.admin('PUT', '/settings', { timezone: 'Europe/Berlin' });
    }
  });

  it('counts grace in exact days of 86,400 seconds, even across a DST change', async () => {
    const licence = await issueOk(berlin.admin, { productId: product.id, licensee: 'Berlin GmbH', issueDate: '2025-10-20', validityMonths: 5, graceDays: 14 });
    expect(licence.expiresAt).toBe('2026-03-19T23:00:00.000Z');
    const verdict = await berlin.admin('POST', '/licenses/verify', { license: licence.licenseString });
    expect(verdict.data.expiry).toEqual({ expiresAt: '2026-03-19T23:00:00.000Z', graceEndsAt: '2026-04-02T23:00:00.000Z', status: 'EXPIRED' });
  });
});

describe('issue: refusals', () => {
  const fp = fingerprint('refusal');
  const cases: Array<[string, () => Record<string, unknown>, RegExp]> = [
    ['issueDate and startsOn together', () => ({ issueDate: todayUtc(), startsOn: todayUtc() }), /issueDate|startsOn/],
    ['a non-existent date', () => ({ issueDate: '2026-02-30' }), /issueDate/],
    ['a month 13', () => ({ issueDate: '2026-13-01' }), /issueDate/],
    ['a date in another format', () => ({ issueDate: '30/01/2026' }), /issueDate/],
    ['a date with a time', () => ({ issueDate: '2026-01-30T00:00:00Z' }), /^Issue date \(issueDate\): /],
    ['a bad startsOn', () => ({ startsOn: '2026-1-5' }), /startsOn/],
    ['a licence type the product does not allow', () => ({ licenceType: 'ONLINE' }), /licenceType/],
    ['an unknown licence type', () => ({ licenceType: 'FLOATING' }), /^Licence type \(licenceType\): one of OFFLINE, ONLINE or HYBRID$/],
    ['activation on an OFFLINE licence', () => ({ activation: 'ONLINE' }), /activation/],
    ['activation on an ONLINE licence', () => ({ productId: multi.id, licenceType: 'ONLINE', activation: 'ONLINE' }), /activation/],
    ['HYBRID activated offline without a fingerprint', () => ({ productId: multi.id, licenceType: 'HYBRID', activation: 'OFFLINE' }), /fingerprint/],
    ['a fingerprint with the wrong prefix', () => ({ fingerprint: fp.replace(/^SVC1/, 'XYZ1') }), /fingerprint/],
    ['a fingerprint with a bad checksum', () => ({ fingerprint: fp.slice(0, -1) + (fp.endsWith('0') ? '1' : '0') }), /fingerprint/],
    ['a fingerprint that is not one', () => ({ fingerprint: 'hello' }), /fingerprint/],
    ['a bad fingerprint inside fingerprints', () => ({ fingerprints: [fp, `${fp}x`] }), /fingerprint/],
    ['maxMachines below the fingerprints signed in', () => ({ fingerprints: [fp, fingerprint('refusal-2')], maxMachines: 1 }), /maxMachines/],
    ['maxMachines 0', () => ({ maxMachines: 0 }), /^Max machines \(maxMachines\): a whole number from 1 to /],
    ['a negative validity', () => ({ validityMonths: -1 }), /^Validity months \(validityMonths\): a whole number from 0 to /],
    ['an undeclared parameter', () => ({ params: { colour: 'red' } }), /colour/],
    ['a parameter named like an issuer claim', () => ({ params: { exp: 4_102_444_800 } }), /exp/],
    ['customerId and customer together', () => ({ licensee: undefined, customerId: 1, customer: { name: 'X', email: 'x@example.com' } }), /customer/],
    ['no customer at all', () => ({ licensee: undefined }), /customer|licensee/],
    ['a customer with a bad email', () => ({ licensee: undefined, customer: { name: 'X', email: 'not-an-email' } }), /email/],
    ['a customer without a name', () => ({ licensee: undefined, customer: { email: 'x@example.com' } }), /name/],
    ['a field the issue body does not have', () => ({ seats: 3 }), /seats|additional/],
    ['no productId', () => ({ productId: undefined }), /^Product ID \(productId\) is required$/],
  ];

  it.each(cases)('refuses %s with 400, creating nothing', async (_name, extra, message) => {
    const [licences, customers] = [await countRows(h, 'licences'), await countRows(h, 'customers')];
    const body = JSON.parse(JSON.stringify({ productId: offline.id, licensee: 'Refused Ltd', ...extra() }));
    const response = await h.admin('POST', '/licenses', body);
    expect(response.statusCode).toBe(400);
    expect(response.data).toEqual({ error: expect.any(String) });
    expect(response.data.error).toMatch(message);
    expect(await countRows(h, 'licences')).toBe(licences);
    expect(await countRows(h, 'customers')).toBe(customers);
  });

  it('needs validityMonths when the product has no default validity', async () => {
    const product = await createProduct(h.admin, { defaultValidityMonths: null });
    const refused = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'No Default Ltd' });
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(/validityMonths/);
    const issued = await issueOk(h.admin, { productId: product.id, licensee: 'No Default Ltd', validityMonths: 2 });
    expect(issued.expiresAt).toBe(startUtc(addMonths(todayUtc(), 2)));
  });

  it('refuses an inactive product with 400 and an unknown one with 404', async () => {
    const product = await createProduct(h.admin, { active: false });
    const inactive = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Inactive Ltd' });
    expect(inactive.statusCode).toBe(400);
    expect(inactive.data.error).toMatch(/inactive/);
    const unknown = await h.admin('POST', '/licenses', { productId: 987_654, licensee: 'Unknown Ltd' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.data).toEqual({ error: expect.any(String) });
  });

  it("refuses another organisation's product as unknown (404)", async () => {
    const other = await h.otherOrg();
    const theirs = await createProduct(other.admin);
    const response = await h.admin('POST', '/licenses', { productId: theirs.id, licensee: 'Cross Ltd' });
    expect(response.statusCode).toBe(404);
  });

  it('refuses an unknown customerId with 404', async () => {
    const response = await h.admin('POST', '/licenses', { productId: offline.id, customerId: 987_654 });
    expect(response.statusCode).toBe(404);
    expect(response.data.error).toMatch(/customer/);
  });
});

describe('issue: fingerprints and machines', () => {
  it('merges fingerprint and fingerprints, duplicates removed, and shows the at-issue bindings', async () => {
    const [a, b, c] = [fingerprint('merge-a'), fingerprint('merge-b'), fingerprint('merge-c')];
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Merge Ltd', fingerprint: b, fingerprints: [a, b, c, a] });
    expect(licence.claims.fp).toEqual([b, a, c]);
    expect(licence.claims.v).toBe(4);
    // Never fewer machines than fingerprints, even though the product says 1.
    expect(licence.maxMachines).toBe(3);
    expect(licence.claims.mm).toBe(3);
    expect(licence).toMatchObject({ seatsUsed: 3, activated: true });
    const machines = await h.admin('GET', `/licenses/${licence.lid}/machines`);
    expect(machines.statusCode).toBe(200);
    expect(machines.data).toEqual(
      [b, a, c].map((fp) => ({
        id: expect.any(Number),
        parts: parseFingerprint(fp),
        boundAt: licence.boundAt,
        releasedAt: null,
        releasedBy: null,
        live: true,
        atIssue: true,
        label: null,
        lastSeenAt: null,
        leaseEndsAt: null,
        borrowedUntil: null,
        airGapped: false,
        activationId: null,
        until: null,
      })),
    );
    expect(machines.data[0].parts).toEqual({
      machine: expect.stringMatching(/^[0-9a-f]{16}$/),
      host: expect.stringMatching(/^[0-9a-f]{16}$/),
      mac: expect.stringMatching(/^[0-9a-f]{16}$/),
      cpu: expect.stringMatching(/^[0-9a-f]{16}$/),
      disk: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(JSON.stringify(machines.data)).not.toContain('machine-merge-a');
  });

  it('keeps a fingerprint part that could not be read as "-"', async () => {
    const { buildFingerprint } = await import('@licensor/protocol');
    const partial = buildFingerprint({ machine: 'm', host: 'h', mac: null, cpu: 'c', disk: undefined });
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Partial Ltd', fingerprint: partial });
    const [binding] = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(binding.parts).toMatchObject({ mac: '-', disk: '-' });
  });

  it("defaults maxMachines to the product's figure and takes a larger one when asked", async () => {
    expect((await issueOk(h.admin, { productId: multi.id, licensee: 'Seats Ltd' })).maxMachines).toBe(2);
    expect((await issueOk(h.admin, { productId: multi.id, licensee: 'Seats Ltd', maxMachines: 7 })).claims.mm).toBe(7);
    const oneFp = await issueOk(h.admin, { productId: multi.id, licensee: 'Seats Ltd', fingerprint: fingerprint('seats') });
    expect(oneFp.maxMachines).toBe(2);
    const exact = await issueOk(h.admin, {
      productId: offline.id,
      licensee: 'Seats Ltd',
      fingerprints: [fingerprint('x1'), fingerprint('x2')],
      maxMachines: 2,
    });
    expect(exact.maxMachines).toBe(2);
  });

  it('issues a HYBRID licence activated offline with its fingerprint bound at issue', async () => {
    const a = fingerprint('hybrid-offline');
    const licence = await issueOk(h.admin, {
      productId: multi.id,
      licensee: 'Hybrid Offline Ltd',
      licenceType: 'HYBRID',
      activation: 'OFFLINE',
      fingerprint: a,
    });
    expect(licence.claims).toMatchObject({ typ: 'HYBRID', act: 'OFFLINE', fp: a, fpn: 4, v: 3 });
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines).toHaveLength(1);
    expect(machines[0]).toMatchObject({ atIssue: true, live: true });
  });
});

describe('issue: parameters', () => {
  const issueTyped = (params: Record<string, unknown>) => h.admin('POST', '/licenses', { productId: typed.id, licensee: 'Params Ltd', params });

  it('signs defaults for absent parameters and omits optional ones with no default', async () => {
    const licence = await issueOk(h.admin, { productId: typed.id, licensee: 'Params Ltd', params: { seats: 0 } });
    expect(licence.claims).toMatchObject({ tier: 'basic', seats: 0, features: ['sync', 'export'], support: false });
    expect(licence.claims).not.toHaveProperty('renewBy');
    expect(licence.claims).not.toHaveProperty('comment');
    expect(Object.keys(licence.claims).slice(-4)).toEqual(['tier', 'seats', 'features', 'support']);
  });

  it('signs each type as its JSON type, in declared order whatever order they were sent in', async () => {
    const response = await issueTyped({ comment: 'Ünïcode "quoted"', renewBy: '2027-01-31', support: true, features: [], seats: 25, tier: 'enterprise' });
    expect(response.statusCode).toBe(201);
    const { claims } = response.data;
    expect(Object.keys(claims).slice(-6)).toEqual(['tier', 'seats', 'features', 'support', 'renewBy', 'comment']);
    expect(claims).toMatchObject({ tier: 'enterprise', seats: 25, features: [], support: true, renewBy: '2027-01-31', comment: 'Ünïcode "quoted"' });
    expect(payloadText(response.data.licenseString)).toBe(JSON.stringify(claims));
    expect(nodeVerifies(response.data.licenseString, typed.publicKeyPem, 'ED25519')).toBe(true);
  });

  it.each([
    [{}, /seats/],
    [{ seats: '5' }, /seats/],
    [{ seats: 1.5 }, /seats/],
    [{ seats: true }, /seats/],
    [{ seats: 1, tier: 'gold' }, /tier/],
    [{ seats: 1, tier: 1 }, /tier/],
    [{ seats: 1, features: 'sync' }, /features/],
    [{ seats: 1, features: [1, 2] }, /features/],
    [{ seats: 1, support: 'true' }, /support/],
    [{ seats: 1, support: 1 }, /support/],
    [{ seats: 1, renewBy: '2027-02-30' }, /renewBy/],
    [{ seats: 1, renewBy: 20270101 }, /renewBy/],
    [{ seats: 1, comment: 42 }, /comment/],
    [{ seats: 1, comment: ['a'] }, /comment/],
    [{ seats: 1, colour: 'red' }, /colour/],
  ])('refuses params %j with 400 naming the parameter', async (params, field) => {
    const before = await countRows(h, 'licences');
    const response = await issueTyped(params);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(field);
    expect(await countRows(h, 'licences')).toBe(before);
  });
});

describe('issue: customer resolution', () => {
  const customer = async (id: number) => (await h.admin('GET', `/customers/${id}`)).data;

  it('issues to an existing customer by customerId', async () => {
    const created = await h.admin('POST', '/customers', { name: 'Initech', email: 'it@initech.example' });
    expect(created.statusCode).toBe(201);
    const licence = await issueOk(h.admin, { productId: offline.id, customerId: created.data.id });
    expect(licence).toMatchObject({ customerId: created.data.id, licensee: 'Initech', licenseeEmail: 'it@initech.example' });
    expect(licence.claims.lic).toBe('Initech');
  });

  it('finds a customer by email case-insensitively, keeping its name, or creates one', async () => {
    const before = await countRows(h, 'customers');
    const first = await issueOk(h.admin, { productId: offline.id, customer: { name: 'Globex', email: 'Ops@Globex.example' } });
    expect(await countRows(h, 'customers')).toBe(before + 1);
    expect(await customer(first.customerId)).toMatchObject({ name: 'Globex', email: 'Ops@Globex.example', createdBy: 'admin' });
    const second = await issueOk(h.admin, { productId: offline.id, customer: { name: 'Globex Corporation', email: 'ops@globex.EXAMPLE' } });
    expect(second).toMatchObject({ customerId: first.customerId, licensee: 'Globex', licenseeEmail: 'Ops@Globex.example' });
    expect(second.claims.lic).toBe('Globex');
    const legacy = await issueOk(h.admin, { productId: offline.id, licensee: 'Globex Again', licenseeEmail: 'OPS@GLOBEX.EXAMPLE' });
    expect(legacy).toMatchObject({ customerId: first.customerId, licensee: 'Globex' });
    expect(await countRows(h, 'customers')).toBe(before + 1);
    expect((await customer(first.customerId)).name).toBe('Globex');
  });

  it('creates a customer from licensee and licenseeEmail', async () => {
    const licence = await issueOk(h.admin, { productId: offline.id, licensee: 'Soylent', licenseeEmail: 'green@soylent.example' });
    expect(await customer(licence.customerId)).toMatchObject({ name: 'Soylent', email: 'green@soylent.example' });
    expect(licence).toMatchObject({ licensee: 'Soylent', licenseeEmail: 'green@soylent.example' });
  });

  it('finds the no-email customer of exactly that name for a bare licensee', async () => {
    const withEmail = await h.admin('POST', '/customers', { name: 'Hooli', email: 'hello@hooli.example' });
    const first = await issueOk(h.admin, { productId: offline.id, licensee: 'Hooli' });
    expect(first.customerId).not.toBe(withEmail.data.id);
    expect(first).toMatchObject({ licensee: 'Hooli', licenseeEmail: null });
    expect(await customer(first.customerId)).toMatchObject({ name: 'Hooli', email: null });
    const again = await issueOk(h.admin, { productId: offline.id, licensee: 'Hooli' });
    expect(again.customerId).toBe(first.customerId);
    const otherCase = await issueOk(h.admin, { productId: offline.id, licensee: 'hooli' });
    expect(otherCase.customerId).not.toBe(first.customerId);
  });

  it('refuses a term or grace that would end past the year 9999 with 400 naming the field', async () => {
    const product = await createProduct(h.admin);
    const late = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Far Future', issueDate: '9999-06-01', validityMonths: 12 });
    expect(late.statusCode).toBe(400);
    expect(late.data.error).toMatch(/^Validity months \(validityMonths\): /);
    const grace = await h.admin('POST', '/licenses', {
      productId: product.id,
      licensee: 'Far Future',
      issueDate: '9999-06-01',
      validityMonths: 6,
      graceDays: 3650,
    });
    expect(grace.statusCode).toBe(400);
    expect(grace.data.error).toMatch(/^Grace days \(graceDays\): /);
    const ok = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Far Future', issueDate: '9999-06-01', validityMonths: 6 });
    expect(ok.statusCode).toBe(201);
    expect(ok.data.expiresAt).toBe('9999-12-01T00:00:00.000Z');
    const renewed = await h.admin('POST', `/licenses/${ok.data.lid}/renew`, { validityMonths: 1200 });
    expect(renewed.statusCode).toBe(400);
    expect(renewed.data.error).toMatch(/^Validity months \(validityMonths\): /);
  });
});
