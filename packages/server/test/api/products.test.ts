import { createHash, createPublicKey } from 'node:crypto';
import { CLAIM_NAMES, FEATURE_CLAIM_NAMES } from '@licensor/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

let seq = 0;
const nextKey = () => `prod-${++seq}`;
const create = (body: Record<string, unknown> = {}) => h.admin('POST', '/products', { productKey: nextKey(), name: 'Widget', ...body });
const latestAudit = async () => (await h.admin('GET', '/dashboard/activity')).data.items[0];
const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('creating a product', () => {
  it('applies every default and answers the derived fields', async () => {
    const response = await h.admin('POST', '/products', { productKey: 'widget.pro_2', name: 'Widget Pro' });
    expect(response.statusCode).toBe(201);
    const p = response.data;
    expect(p).toMatchObject({
      id: expect.any(Number),
      productKey: 'widget.pro_2',
      name: 'Widget Pro',
      description: null,
      active: true,
      algorithm: 'ED25519',
      algorithmLabel: 'Ed25519',
      signatureAlgorithm: 'Ed25519',
      keyOrigin: 'managed',
      certificateType: 'SELF_SIGNED',
      certificateExpired: false,
      licenceType: 'OFFLINE',
      allowedLicenceTypes: ['OFFLINE'],
      licenceFetchEnabled: false,
      checkIntervalSeconds: 86_400,
      maxOfflineSeconds: 604_800,
      fingerprintNeed: 3,
      maxMachines: 1,
      defaultValidityMonths: 12,
      defaultGraceDays: 0,
      params: [],
      paramCount: 0,
      licenseCount: 0,
      checkTokenSet: false,
      checkRotatedAt: null,
      keyState: 'OK',
      keyError: null,
      createdBy: 'admin',
    });
    expect(p.checkId).toMatch(/^[a-z0-9]{16}$/);
    expect(p.createdAt).toMatch(iso);
    const spki = createPublicKey(p.publicKeyPem).export({ type: 'spki', format: 'der' });
    expect(p.keyFingerprint).toBe(createHash('sha256').update(spki).digest('hex'));
    expect(p.certificateSubject).toBe('CN=Widget Pro, O=Org acme');
    const years = (Date.parse(p.certificateExpiresAt) - Date.parse(p.createdAt)) / (365.25 * 86_400_000);
    expect(years).toBeGreaterThan(9.99);
    expect(years).toBeLessThan(10.01);
    // No private key, and no field for a sealed key or a token's hash (matched on names: base64 may spell "hash").
    expect(response.body).not.toMatch(/PRIVATE KEY|"[^"]*(sealed|hash)[^"]*":/i);
    expect(await latestAudit()).toMatchObject({ action: 'product.created', actor: 'admin', subjectType: 'product', subjectId: String(p.id) });
  });

  it('lets allowedLicenceTypes default to the licence type given', async () => {
    const response = await create({ licenceType: 'HYBRID' });
    expect(response.data).toMatchObject({ licenceType: 'HYBRID', allowedLicenceTypes: ['HYBRID'] });
  });

  it('keeps declared parameters, completing their optional fields', async () => {
    const params = [
      { key: 'seats', type: 'INTEGER', defaultValue: '-42', required: true, label: 'Seats' },
      { key: 'beta', type: 'BOOLEAN', defaultValue: 'false' },
      { key: 'renews_on', type: 'DATE', defaultValue: '2024-02-29', help: 'Leap day' },
      { key: 'modules', type: 'STRING_LIST', defaultValue: '["a","b"]' },
      { key: 'edition', type: 'ENUM', options: ['basic', 'pro'], defaultValue: 'pro' },
      { key: 'note_', type: 'STRING' },
    ];
    const response = await create({ params, defaultValidityMonths: null });
    expect(response.statusCode).toBe(201);
    expect(response.data.paramCount).toBe(6);
    expect(response.data.defaultValidityMonths).toBeNull();
    expect(response.data.params[0]).toEqual({ key: 'seats', label: 'Seats', type: 'INTEGER', required: true, defaultValue: '-42', options: [], help: null });
    expect(response.data.params[5]).toEqual({ key: 'note_', label: 'note_', type: 'STRING', required: false, defaultValue: null, options: [], help: null });
  });

  it.each([
    [{ name: 'No key' }, /^Product key \(productKey\) is required$/],
    [{ productKey: 'has space', name: 'x' }, /^Product key \(productKey\): letters, digits, dot, dash and underscore, at most 64 characters$/],
    [{ productKey: 'k'.repeat(65), name: 'x' }, /^Product key \(productKey\): letters, digits, dot, dash and underscore, at most 64 characters$/],
    [{ productKey: 'ok-key' }, /^Name \(name\) is required$/],
    [{ productKey: 'ok-key', name: '   ' }, /^Name \(name\): must not be blank/],
    [{ productKey: 'ok-key', name: 'x', algorithm: 'DSA' }, /^Algorithm \(algorithm\): one of ED25519, /],
    [{ productKey: 'ok-key', name: 'x', fingerprintNeed: 0 }, /^Fingerprint need \(fingerprintNeed\): a whole number from 1 to 5$/],
    [{ productKey: 'ok-key', name: 'x', fingerprintNeed: 6 }, /^Fingerprint need \(fingerprintNeed\): a whole number from 1 to 5$/],
    [{ productKey: 'ok-key', name: 'x', maxMachines: 0 }, /^Max machines \(maxMachines\): a whole number from 1 to /],
    [{ productKey: 'ok-key', name: 'x', checkIntervalSeconds: 119 }, /^Check interval seconds \(checkIntervalSeconds\): a whole number from 120 to /],
    [
      { productKey: 'ok-key', name: 'x', checkIntervalSeconds: 7200, maxOfflineSeconds: 3600 },
      /^Max offline seconds \(maxOfflineSeconds\): must be at least the check interval \(7,200 seconds\)/,
    ],
    [{ productKey: 'ok-key', name: 'x', defaultValidityMonths: -1 }, /^Default validity months \(defaultValidityMonths\): a whole number from 0 to /],
    [{ productKey: 'ok-key', name: 'x', defaultGraceDays: -1 }, /^Default grace days \(defaultGraceDays\): a whole number from 0 to /],
    [
      { productKey: 'ok-key', name: 'x', licenceType: 'ONLINE', allowedLicenceTypes: ['OFFLINE'] },
      /^Licence type \(licenceType\): ONLINE is not among the allowed licence types/,
    ],
    [
      { productKey: 'ok-key', name: 'x', allowedLicenceTypes: [] },
      /^Allowed licence types \(allowedLicenceTypes\): a list of at least 1 entry without repeats$/,
    ],
    [{ productKey: 'ok-key', name: 'x', extra: 1 }, /extra/],
    [{ productKey: 'ok-key', name: 'x', privateKeyPassphrase: 'pw' }, /^Private key passphrase \(privateKeyPassphrase\): only with a PEM private key/],
    [{ productKey: 'ok-key', name: 'x', keyOrigin: 'pkcs11' }, /^Key origin \(keyOrigin\): pkcs11 is not available/],
    [{ productKey: 'ok-key', name: 'x', keyOrigin: 'imported' }, /^PEM private key \(privateKeyPem\): required/],
    [{ productKey: 'ok-key', name: 'x', certificateType: 'IMPORTED' }, /^PEM certificate \(certificatePem\): /],
    [
      { productKey: 'ok-key', name: 'x', certificateType: 'NONE', certificatePem: 'x' },
      /^PEM certificate \(certificatePem\): only with an imported certificate/,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: '1abc', type: 'STRING' }] },
      /^Parameters item 1 key \(params\[0\]\.key\): a letter, then letters, digits, dot, dash and underscore, at most 64 characters$/,
    ],
    [{ productKey: 'ok-key', name: 'x', params: [{ key: '1ab', type: 'STRING' }] }, /^Parameters item 1 key \(params\[0\]\.key\): /],
    [{ productKey: 'ok-key', name: 'x', params: [{ key: 'a', type: 'FLOAT' }] }, /^Parameters item 1 type \(params\[0\]\.type\): one of STRING, /],
    [
      {
        productKey: 'ok-key',
        name: 'x',
        params: [
          { key: 'a', type: 'STRING' },
          { key: 'a', type: 'INTEGER' },
        ],
      },
      /^Parameter "a" \(params\[1\]\.key\): declared twice/,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'e', type: 'ENUM' }] },
      /^Options of parameter "e" \(params\[0\]\.options\): an ENUM needs at least one option/,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 's', type: 'STRING', options: ['a'] }] },
      /^Options of parameter "s" \(params\[0\]\.options\): only an ENUM/,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'n', type: 'INTEGER', defaultValue: 'abc' }] },
      /^Default of parameter "n" \(params\[0\]\.defaultValue\): "abc" is not a decimal integer/,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'n', type: 'INTEGER', defaultValue: '1.5' }] },
      /^Default of parameter "[a-z]" \(params\[0\]\.defaultValue\): /,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'b', type: 'BOOLEAN', defaultValue: 'yes' }] },
      /^Default of parameter "[a-z]" \(params\[0\]\.defaultValue\): /,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'd', type: 'DATE', defaultValue: '2023-02-29' }] },
      /^Default of parameter "d" \(params\[0\]\.defaultValue\): "2023-02-29" is not a date/,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'd', type: 'DATE', defaultValue: '2024-1-01' }] },
      /^Default of parameter "[a-z]" \(params\[0\]\.defaultValue\): /,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'l', type: 'STRING_LIST', defaultValue: '["a",1]' }] },
      /^Default of parameter "l" \(params\[0\]\.defaultValue\): is not a JSON array of strings/,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'l', type: 'STRING_LIST', defaultValue: 'a,b' }] },
      /^Default of parameter "[a-z]" \(params\[0\]\.defaultValue\): /,
    ],
    [
      { productKey: 'ok-key', name: 'x', params: [{ key: 'e', type: 'ENUM', options: ['a'], defaultValue: 'b' }] },
      /^Default of parameter "[a-z]" \(params\[0\]\.defaultValue\): "b" is not one of the options/,
    ],
  ])('refuses %j with 400 naming the field, creating nothing', async (body, message) => {
    const response = await h.admin('POST', '/products', body);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(message);
    const list = await h.admin('GET', '/products');
    expect(list.data.some((p: { productKey: string }) => p.productKey === 'ok-key')).toBe(false);
  });

  it('takes claim names with dots and hyphens as parameter keys, and signs them', async () => {
    const params = [
      { key: 'max-users', type: 'INTEGER', required: true },
      { key: 'feature.export', type: 'BOOLEAN', defaultValue: 'true' },
    ];
    const product = (await create({ params })).data;
    expect(product.params.map((p: { key: string }) => p.key)).toEqual(['max-users', 'feature.export']);
    const issued = await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Dotted', params: { 'max-users': 7 } });
    expect(issued.statusCode).toBe(201);
    expect(issued.data.claims).toMatchObject({ 'max-users': 7, 'feature.export': true });
    for (const key of ['1abc', '-x', '.x', 'a b', 'a'.repeat(65), 'ä']) {
      const refused = await create({ params: [{ key, type: 'STRING' }] });
      expect(refused.statusCode).toBe(400);
      expect(refused.data.error).toMatch(/^Parameters item 1 key \(params\[0\]\.key\): |^Parameter "[^"]*" \(params\[0\]\.key\): /);
    }
  });

  it('refuses every issuer claim name as a parameter key', async () => {
    for (const claim of CLAIM_NAMES) {
      const response = await create({
        params: [
          { key: 'fine', type: 'STRING' },
          { key: claim, type: 'STRING' },
        ],
      });
      expect(response.statusCode).toBe(400);
      expect(response.data.error).toBe(`Parameter "${claim}" (params[1].key): the name is reserved (an issuer claim)`);
    }
  });

  it('refuses upd, mtr and trl as new parameter keys, but a product that had one before keeps it through edits', async () => {
    for (const claim of FEATURE_CLAIM_NAMES) {
      const refused = await create({ params: [{ key: claim, type: 'STRING' }] });
      expect(refused.statusCode).toBe(400);
      expect(refused.data.error).toBe(`Parameter "${claim}" (params[0].key): the name is reserved (a claim of update windows, meters and trials)`);
    }
    // A product saved before those claims existed, as an older release wrote it.
    const older = (await create({ params: [{ key: 'edition', type: 'STRING' }] })).data;
    const params = JSON.stringify([{ key: 'upd', label: 'Updates', type: 'STRING', required: false, defaultValue: null, options: [], help: null }]);
    await h.database.db.updateTable('products').set({ params }).where('id', '=', older.id).execute();
    const kept = await h.admin('PUT', `/products/${older.id}`, { name: 'Renamed', params: [{ key: 'upd', label: 'Update channel', type: 'STRING' }] });
    expect(kept.statusCode, kept.body).toBe(200);
    expect(kept.data.params.map((p: { key: string }) => p.key)).toEqual(['upd']);
    // Renaming it to another of the three is taking a new one.
    const renamed = await h.admin('PUT', `/products/${older.id}`, { params: [{ key: 'mtr', type: 'STRING' }] });
    expect(renamed.statusCode).toBe(400);
    expect(renamed.data.error).toMatch(/"mtr" \(params\[0\]\.key\): the name is reserved/);
  });

  it('refuses a productKey taken in the organisation with 409, not one taken elsewhere', async () => {
    expect((await h.admin('POST', '/products', { productKey: 'dup', name: 'One' })).statusCode).toBe(201);
    const again = await h.admin('POST', '/products', { productKey: 'dup', name: 'Two' });
    expect(again.statusCode).toBe(409);
    expect(again.data.error).toMatch(/productKey "dup"/);
    const other = await h.otherOrg();
    expect((await other.admin('POST', '/products', { productKey: 'dup', name: 'Elsewhere' })).statusCode).toBe(201);
  });
});

describe('reading products', () => {
  it('lists products and reads one; another organisation sees neither', async () => {
    const created = (await create({ description: 'A thing' })).data;
    const list = await h.admin('GET', '/products');
    expect(list.statusCode).toBe(200);
    expect(list.data.find((p: { id: number }) => p.id === created.id)).toEqual(created);
    expect((await h.admin('GET', `/products/${created.id}`)).data).toEqual(created);
    expect((await h.admin('GET', '/products/999999')).statusCode).toBe(404);
    const other = await h.otherOrg();
    expect((await other.admin('GET', `/products/${created.id}`)).statusCode).toBe(404);
    expect((await other.admin('GET', '/products')).data).toEqual([]);
  });

  it('answers the options this deployment offers', async () => {
    const { data } = await h.admin('GET', '/products/options');
    expect(data.algorithms.map((a: { value: string }) => a.value)).toEqual(['ED25519', 'RSA_2048', 'RSA_3072', 'RSA_4096', 'EC_P256', 'EC_P384']);
    expect(data.algorithms[0]).toEqual({ value: 'ED25519', label: 'Ed25519', signatureAlgorithm: 'Ed25519', available: true });
    expect(data.algorithms[5]).toMatchObject({ value: 'EC_P384', signatureAlgorithm: 'SHA384withECDSA', available: true });
    expect(data.certificateTypes.map((c: { value: string }) => c.value)).toEqual(['SELF_SIGNED', 'NONE', 'IMPORTED']);
    expect(data.keyOrigins.map((c: { value: string }) => c.value)).toEqual(['managed', 'imported', 'pkcs11']);
    expect(data.keyOrigins[2]).toMatchObject({ available: false, reason: expect.stringMatching(/PKCS#11/) });
    expect(data.keyFormats).toEqual([
      { value: 'PEM', label: expect.stringMatching(/PEM/), available: true },
      { value: 'PKCS12', label: expect.stringMatching(/PKCS#12/), available: true },
    ]);
    expect(data.pkcs11Tokens).toEqual([]);
    expect(data.licenceTypes.map((c: { value: string }) => c.value)).toEqual(['OFFLINE', 'ONLINE', 'HYBRID']);
    expect(data.paramTypes.map((c: { value: string }) => c.value)).toEqual(['STRING', 'INTEGER', 'BOOLEAN', 'DATE', 'STRING_LIST', 'ENUM']);
    expect(data.seatModels.map((c: { value: string }) => c.value)).toEqual(['NODE_LOCKED', 'FLOATING']);
    expect(data.reservedFloatingParamKeys).toEqual(['lse', 'brw']);
    expect(data.checkRateAddress).toBe(h.config.checkRateAddress);
    const { reservedParamKeys, reservedFloatingParamKeys, pkcs11Tokens, checkRateAddress, ...choices } = data;
    for (const group of Object.values<Array<Record<string, unknown>>>(choices)) {
      for (const entry of group) expect(entry).toMatchObject({ value: expect.any(String), label: expect.any(String), available: expect.any(Boolean) });
    }
    // What a form refuses before sending is exactly what the API refuses.
    expect(reservedParamKeys).toContain('lid');
    for (const reserved of reservedParamKeys) {
      const refused = await h.admin('POST', '/products', { productKey: `r-${reserved}`, name: 'R', params: [{ key: reserved, type: 'STRING' }] });
      expect(refused.statusCode).toBe(400);
      expect(refused.data.error).toMatch(/reserved/);
    }
  });

  it("answers the product's form options", async () => {
    const params = [{ key: 'tier', type: 'ENUM', options: ['a', 'b'], defaultValue: 'a', required: true }];
    const created = (
      await create({
        licenceType: 'HYBRID',
        allowedLicenceTypes: ['OFFLINE', 'HYBRID'],
        defaultValidityMonths: 0,
        defaultGraceDays: 7,
        maxMachines: 3,
        updatesMonths: 24,
        params,
      })
    ).data;
    const form = await h.admin('GET', `/products/${created.id}/form`);
    expect(form.statusCode).toBe(200);
    expect(form.data).toEqual({
      productId: created.id,
      licenceTypes: ['OFFLINE', 'HYBRID'],
      defaults: { licenceType: 'HYBRID', activation: 'ONLINE', validityMonths: 0, graceDays: 7, maxMachines: 3, updatesMonths: 24 },
      params: created.params,
      meters: [],
    });
    const offline = (await create()).data;
    expect((await h.admin('GET', `/products/${offline.id}/form`)).data.defaults).toMatchObject({ activation: null, updatesMonths: null });
  });
});

describe('editing a product', () => {
  it('changes only the fields sent, raising the version, and records them', async () => {
    const created = (await create({ description: 'before', maxMachines: 2 })).data;
    const response = await h.admin('PUT', `/products/${created.id}`, { name: 'Renamed', description: null });
    expect(response.statusCode).toBe(200);
    expect(response.data).toEqual({ ...created, name: 'Renamed', description: null, updatedAt: expect.stringMatching(iso) });
    expect(await latestAudit()).toMatchObject({ action: 'product.updated', details: { changed: ['name', 'description'] } });
    const row = await h.database.db.selectFrom('products').select('version').where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.version).toBe(2);
  });

  it('checks the edited product as a whole', async () => {
    const created = (await create({ licenceType: 'ONLINE', allowedLicenceTypes: ['ONLINE', 'HYBRID'] })).data;
    const put = (body: unknown) => h.admin('PUT', `/products/${created.id}`, body);
    expect((await put({ licenceType: 'OFFLINE' })).data.error).toMatch(/^Licence type \(licenceType\): OFFLINE is not among/);
    expect((await put({ allowedLicenceTypes: ['HYBRID'] })).data.error).toMatch(/^Licence type \(licenceType\): ONLINE is not among/);
    expect((await put({ maxOfflineSeconds: 600 })).data.error).toMatch(/^Max offline seconds \(maxOfflineSeconds\): /);
    expect((await put({ algorithm: 'EC_P256' })).data.error).toMatch(/^Algorithm \(algorithm\): changes only with a new key/);
    expect((await put({ keyOrigin: 'imported' })).data.error).toMatch(/^PEM private key \(privateKeyPem\): required/);
    const ok = await put({ licenceType: 'HYBRID', checkIntervalSeconds: 120, maxOfflineSeconds: 120, licenceFetchEnabled: true, active: false });
    expect(ok.statusCode).toBe(200);
    expect(ok.data).toMatchObject({ licenceType: 'HYBRID', checkIntervalSeconds: 120, maxOfflineSeconds: 120, licenceFetchEnabled: true, active: false });
  });

  it('takes back a record read with GET, changing only the field that differs', async () => {
    const created = (await create({ params: [{ key: 'max-users', type: 'INTEGER', defaultValue: '5' }] })).data;
    const imported = (await create({ certificateType: 'NONE' })).data;
    for (const product of [created, imported]) {
      const read = (await h.admin('GET', `/products/${product.id}`)).data;
      const back = await h.admin('PUT', `/products/${product.id}`, { ...read, name: 'Round trip' });
      expect(back.statusCode).toBe(200);
      expect(back.data).toEqual({ ...read, name: 'Round trip', updatedAt: expect.stringMatching(iso) });
      expect(await latestAudit()).toMatchObject({ action: 'product.updated', details: { changed: ['name'] } });
    }
    expect((await h.admin('PUT', `/products/${created.id}`, { name: 'x', colour: 'red' })).data).toEqual({ error: 'Unknown field "colour"' });
  });

  it('answers an empty or unchanged edit with the product as it is, writing nothing', async () => {
    const created = (await create()).data;
    const before = (await h.admin('GET', '/dashboard/activity')).data.total;
    for (const body of [{}, { name: created.name, algorithm: created.algorithm, certificatePem: created.certificatePem, keyOrigin: 'managed' }]) {
      const response = await h.admin('PUT', `/products/${created.id}`, body);
      expect(response.statusCode).toBe(200);
      expect(response.data).toEqual(created);
    }
    expect((await h.admin('GET', '/dashboard/activity')).data.total).toBe(before);
  });

  it('takes null as the default for the nullable integers, and as "required at issue" for validity', async () => {
    const created = (await create({ defaultGraceDays: 5, checkIntervalSeconds: 600, maxOfflineSeconds: 1200, fingerprintNeed: 2 })).data;
    const response = await h.admin('PUT', `/products/${created.id}`, {
      defaultGraceDays: null,
      checkIntervalSeconds: null,
      maxOfflineSeconds: null,
      fingerprintNeed: null,
      defaultValidityMonths: null,
    });
    expect(response.statusCode).toBe(200);
    expect(response.data).toMatchObject({
      defaultGraceDays: 0,
      checkIntervalSeconds: 86_400,
      maxOfflineSeconds: 604_800,
      fingerprintNeed: 3,
      defaultValidityMonths: null,
    });
    const issued = await h.admin('POST', '/licenses', { productId: created.id, licensee: 'Needs validity' });
    expect(issued.statusCode).toBe(400);
    expect(issued.data.error).toMatch(/validityMonths/);
  });

  it('refuses a productKey another product holds with 409 and an unknown product with 404', async () => {
    const a = (await create()).data;
    const b = (await create()).data;
    const clash = await h.admin('PUT', `/products/${b.id}`, { productKey: a.productKey });
    expect(clash.statusCode).toBe(409);
    expect((await h.admin('PUT', '/products/999999', { name: 'x' })).statusCode).toBe(404);
    expect((await h.admin('PUT', `/products/${b.id}`, { productKey: 'fresh-key' })).data.productKey).toBe('fresh-key');
  });
});

describe('check token', () => {
  it('is shown once, stored only as its SHA-256, and replaced at once by a rotation', async () => {
    const created = (await create()).data;
    const first = await h.admin('POST', `/products/${created.id}/check-token`);
    expect(first.statusCode).toBe(200);
    expect(Object.keys(first.data).sort()).toEqual(['checkId', 'checkToken', 'rotatedAt']);
    expect(first.data.checkId).toBe(created.checkId);
    const match = new RegExp(`^svcc_${created.checkId}_([0-9a-f]{64})$`).exec(first.data.checkToken);
    expect(match).not.toBeNull();
    const secret = match![1]!;

    const read = await h.admin('GET', `/products/${created.id}`);
    expect(read.data).toMatchObject({ checkTokenSet: true, checkRotatedAt: first.data.rotatedAt, checkId: created.checkId });
    expect(read.body).not.toContain(secret);
    expect((await h.admin('GET', '/products')).body).not.toContain(secret);

    const stored = () => h.database.db.selectFrom('products').select('check_token_hash').where('id', '=', created.id).executeTakeFirstOrThrow();
    expect((await stored()).check_token_hash).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(await latestAudit()).toMatchObject({ action: 'product.check_token_rotated', subjectId: String(created.id) });
    expect(JSON.stringify(await latestAudit())).not.toContain(secret);

    const second = await h.admin('POST', `/products/${created.id}/check-token`, undefined, { 'content-type': 'application/json' });
    expect(second.statusCode).toBe(200);
    expect(second.data.checkToken).not.toBe(first.data.checkToken);
    expect((await stored()).check_token_hash).not.toBe(createHash('sha256').update(secret).digest('hex'));
    expect((await h.admin('POST', '/products/999999/check-token')).statusCode).toBe(404);
  });
});

describe('deleting a product', () => {
  it('removes the product and its keys, and records it', async () => {
    const created = (await create()).data;
    await h.admin('PUT', `/products/${created.id}`, { regenerateKey: true });
    const response = await h.admin('DELETE', `/products/${created.id}`);
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    expect((await h.admin('GET', `/products/${created.id}`)).statusCode).toBe(404);
    const keys = await h.database.db.selectFrom('product_keys').select('id').where('product_id', '=', created.id).execute();
    expect(keys).toEqual([]);
    expect(await latestAudit()).toMatchObject({ action: 'product.deleted', subjectId: String(created.id) });
    expect((await h.admin('DELETE', `/products/${created.id}`)).statusCode).toBe(404);
  });
});

describe('access', () => {
  it('lets products:read read but not write', async () => {
    const created = (await create()).data;
    const reader = h.as({ token: await h.createToken(['products:read']) });
    expect((await reader('GET', '/products')).statusCode).toBe(200);
    expect((await reader('GET', `/products/${created.id}/public-key`)).statusCode).toBe(200);
    expect((await reader('GET', `/products/${created.id}/form`)).statusCode).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/products', { productKey: 'by-reader', name: 'x' }],
      ['PUT', `/products/${created.id}`, { name: 'x' }],
      ['DELETE', `/products/${created.id}`, undefined],
      ['POST', `/products/${created.id}/check-token`, undefined],
    ] as const) {
      const response = await reader(method, path, body);
      expect(response.statusCode).toBe(403);
      expect(response.data.error).toBe('missing scope products:write');
    }
    const writer = h.as({ token: await h.createToken(['products:write']) });
    expect((await writer('POST', '/products', { productKey: nextKey(), name: 'By token' })).data.createdBy).toMatch(/^token\/t\d+$/);
  });

  it('lets a VIEWER read but not write, and an ISSUER write', async () => {
    const viewer = h.as({ cookie: (await h.createMember('VIEWER')).cookie });
    expect((await viewer('GET', '/products')).statusCode).toBe(200);
    expect((await viewer('POST', '/products', { productKey: nextKey(), name: 'x' })).statusCode).toBe(403);
    const issuer = h.as({ cookie: (await h.createMember('ISSUER')).cookie });
    expect((await issuer('POST', '/products', { productKey: nextKey(), name: 'x' })).statusCode).toBe(201);
  });
});
