import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startHarness, type Harness } from '../harness.js';
import { createProduct, insertCheckBinding, issueOk } from '../licence-helpers.js';
import { createPlatformAccount } from '../../src/platform/accounts.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe('error shape', () => {
  it('answers an unknown route with 404 {error}', async () => {
    for (const path of ['//nowhere', '/nowhere']) {
      const response = await h.admin('GET', path);
      expect(response.statusCode).toBe(404);
      expect(Object.keys(response.data)).toEqual(['error']);
    }
  });

  it('answers an unknown organisation with 404 before judging the credential', async () => {
    const response = await h.as({}, 'no-such-org')('GET', '/users');
    expect(response.statusCode).toBe(404);
    expect(response.data.error).toMatch(/no-such-org/);
  });

  it('answers malformed JSON with 400, non-JSON with 415, an oversized body with 413', async () => {
    const malformed = await h.admin('POST', '/users', '{"username": ', { 'content-type': 'application/json' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.data).toEqual({ error: 'malformed JSON body' });
    const text = await h.admin('POST', '/users', 'username=x', { 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    expect(text.data.error).toMatch(/application\/json/);
    const form = await h.admin('POST', '/users', 'username=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.statusCode).toBe(415);
    const huge = await h.admin('POST', '/users', JSON.stringify({ username: 'x'.repeat(2 * 1024 * 1024), role: 'VIEWER' }));
    expect(huge.statusCode).toBe(413);
    expect(huge.data).toEqual({ error: 'request body is too large' });
  });

  it('treats an empty body with a JSON content type as no body', async () => {
    const session = h.as({ cookie: await h.signIn('admin', ADMIN_PASSWORD) });
    const response = await session('POST', '/auth/logout', '', { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(204);
  });

  it('names the field of a schema violation, and a wrong JSON type is not coerced', async () => {
    const response = await h.admin('POST', '/users', { username: 'typed', role: 'VIEWER', active: 'yes' });
    expect(response.statusCode).toBe(400);
    expect(response.data).toEqual({ error: 'Active (active): true or false' });
  });

  it.each([
    [
      'a pattern',
      'POST',
      '/products',
      { productKey: 'not a key!', name: 'x' },
      'Product key (productKey): letters, digits, dot, dash and underscore, at most 64 characters',
    ],
    ['a missing field', 'POST', '/products', { name: 'x' }, 'Product key (productKey) is required'],
    ['a route that needs fields, sent no body', 'POST', '/products', undefined, 'Product key (productKey) is required'],
    ['a body that is not an object', 'POST', '/products', [1], 'The body must be a JSON object'],
    ['an unknown field', 'POST', '/products', { productKey: 'k', name: 'x', colour: 'red' }, 'Unknown field "colour"'],
    ['a range', 'POST', '/products', { productKey: 'k', name: 'x', maxMachines: 0 }, 'Max machines (maxMachines): a whole number from 1 to 1,000,000'],
    ['an empty text', 'POST', '/products', { productKey: 'k', name: '' }, 'Name (name) must not be empty (text of at most 200 characters)'],
    [
      'a list item, counted from 1',
      'POST',
      '/products',
      { productKey: 'k', name: 'x', params: [{ key: '1st', label: 'First', type: 'STRING' }] },
      'Parameters item 1 key (params[0].key): a letter, then letters, digits, dot, dash and underscore, at most 64 characters',
    ],
    ['a list', 'POST', '/tokens', { name: 'ci', scopes: [] }, 'Scopes (scopes): a list of 1 to 16 entries without repeats'],
    ['a choice', 'POST', '/users', { username: 'erin', role: 'BOSS' }, 'Role (role): one of VIEWER, ISSUER or ORG_ADMIN'],
    ['a format', 'POST', '/users', { username: 'erin', role: 'VIEWER', email: 'nope' }, 'Email (email): an email address'],
    ['a type that fits no branch of a union', 'POST', '/users', { username: 'erin', role: 'VIEWER', email: 5 }, 'Email (email): an email address, or null'],
    ['a nested field', 'POST', '/licenses', { productId: 1, customer: { name: 'Erin' }, colour: 1 }, 'Unknown field "colour"'],
    ['an edit with nothing in it', 'PUT', '/users/1', {}, 'The body must carry at least one field to change'],
    ['settings changed by nothing', 'PUT', '/settings', {}, 'The body must carry at least one field to change'],
    [
      'a query parameter',
      'GET',
      '/licenses/page?sort=nope',
      undefined,
      'Query parameter "sort": one of issuedAt, expiresAt, licensee, status, product or lastCheckedAt',
    ],
    ['an unknown query parameter', 'GET', '/licenses/page?colour=red', undefined, 'Unknown query parameter "colour"'],
  ])('says what is wrong with %s in words, never in schema terms, with a body field as the API spells it', async (_what, method, path, body, message) => {
    const response = await h.admin(method as 'POST', path, body);
    expect([response.statusCode, response.data]).toEqual([400, { error: message }]);
  });

  it.each([
    [
      'a rule spanning two fields',
      { productKey: 'span', name: 'Span', checkIntervalSeconds: 3600, maxOfflineSeconds: 600 },
      'Max offline seconds (maxOfflineSeconds): must be at least the check interval (3,600 seconds)',
    ],
    [
      'a name taken twice in a list',
      {
        productKey: 'twice',
        name: 'Twice',
        params: [
          { key: 'seats', type: 'INTEGER' },
          { key: 'seats', type: 'STRING' },
        ],
      },
      'Parameter "seats" (params[1].key): declared twice',
    ],
    ['a parameter value of the wrong type, named by its label', 'seats', 'Seats (params.seats): must be a whole number'],
    ['a parameter the product lacks', 'colour', 'Parameter "colour" (params.colour): not a parameter of this product'],
  ])("says what is wrong with %s in the service's own words, with the field as the API spells it", async (_what, body, message) => {
    let path = '/products';
    let sent: unknown = body;
    if (typeof body === 'string') {
      const product = await createProduct(h.admin, { productKey: `words-${body}`, params: [{ key: 'seats', label: 'Seats', type: 'INTEGER' }] });
      [path, sent] = ['/licenses', { productId: product.id, licensee: 'Erin', params: { [body]: 'five' } }];
    }
    const response = await h.admin('POST', path, sent);
    expect([response.statusCode, response.data]).toEqual([400, { error: message }]);
  });

  it('names a header as a header', async () => {
    const response = await h.admin('POST', '/licenses', { productId: 1, licensee: 'x' }, { 'idempotency-key': 'k'.repeat(256) });
    expect([response.statusCode, response.data]).toEqual([400, { error: 'Idempotency-Key header: text of at most 255 characters' }]);
  });

  it('answers an unexpected fault with 500, a request id and no internals', async () => {
    const h2 = await startHarness();
    await h2.database.close();
    const response = await h2.admin('GET', '/users');
    expect(response.statusCode).toBe(500);
    expect(response.data).toEqual({ error: expect.stringMatching(/^internal error \(request .+\)$/) });
    await h2.app.close();
  });
});

describe('bodies that may be left out', () => {
  // DESIGN.md 4: no body, and `Content-Type: application/json` with an empty body, both count as none.
  const none = async (method: 'POST' | 'PUT', path: string, kind: 'absent' | 'empty' | '{}', caller = h.admin) =>
    kind === 'absent' ? caller(method, path) : kind === 'empty' ? caller(method, path, '', { 'content-type': 'application/json' }) : caller(method, path, {});
  const KINDS = ['absent', 'empty', '{}'] as const;

  it('are exactly the bodies that need no field, so the document marks them optional', async () => {
    const doc = (await h.anonymous('GET', '//openapi.json')).data;
    const optional = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
      Object.entries<any>(item)
        .filter(([, operation]) => operation.requestBody?.required === false)
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(optional.sort()).toEqual([
      'POST /auth/passkeys/options',
      'POST /auth/sso/link',
      'POST /licenses/{lid}/archive',
      'POST /licenses/{lid}/convert',
      'POST /licenses/{lid}/extend-trial',
      'POST /licenses/{lid}/reinstate',
      'POST /licenses/{lid}/release-binding',
      'POST /licenses/{lid}/renew',
      'POST /licenses/{lid}/reset-trial-ledger',
      'POST /licenses/{lid}/restore',
      'POST /licenses/{lid}/revoke',
      'POST /platform/api/auth/passkeys/options',
      'POST /webhooks/{id}/rotate-secret',
      'PUT /integrations/{id}',
      'PUT /products/{id}',
      'PUT /releases/{id}',
      'PUT /sso',
      'PUT /webhooks/{id}',
    ]);
  });

  it('take a licence through renew, revoke, reinstate, archive, restore and release-binding', async () => {
    const product = await createProduct(h.admin);
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Bodiless Ltd' });
    const action = (name: string, kind: (typeof KINDS)[number]) => none('POST', `/licenses/${licence.lid}/${name}`, kind);
    for (const kind of KINDS) {
      expect((await action('renew', kind)).statusCode, `renew, body ${kind}`).toBe(200);
      for (const name of ['revoke', 'archive', 'restore', 'reinstate']) {
        const response = await action(name, kind);
        expect([response.statusCode, name, kind], response.body).toEqual([200, name, kind]);
      }
      await insertCheckBinding(h, licence.lid, `bodiless-${kind}`);
      const released = await action('release-binding', kind);
      expect([released.statusCode, released.data.seatsUsed], `release-binding, body ${kind}`).toEqual([200, 0]);
    }
    expect((await h.admin('GET', `/licenses/${licence.lid}/versions`)).data).toHaveLength(3);
  });

  it('rotate a webhook secret with the default overlap of 24 hours, and edit an endpoint or a product by nothing', async () => {
    const created = await h.admin('POST', '/webhooks', { url: 'https://203.0.113.10/hooks', events: ['product.deleted'] });
    expect(created.statusCode).toBe(201);
    const product = await createProduct(h.admin);
    for (const kind of KINDS) {
      const before = Date.now();
      const rotated = await none('POST', `/webhooks/${created.data.id}/rotate-secret`, kind);
      expect([rotated.statusCode, kind]).toEqual([200, kind]);
      expect(Date.parse(rotated.data.previousValidUntil) - before).toBeGreaterThanOrEqual(24 * 3_600_000 - 1_000);
      expect(Date.parse(rotated.data.previousValidUntil) - before).toBeLessThan(24 * 3_600_000 + 60_000);
      const edited = await none('PUT', `/webhooks/${created.data.id}`, kind);
      expect([edited.statusCode, edited.data.url, edited.data.events]).toEqual([200, 'https://203.0.113.10/hooks', ['product.deleted']]);
      const unchanged = await none('PUT', `/products/${product.id}`, kind);
      expect([unchanged.statusCode, unchanged.data.name]).toEqual([200, product.name]);
    }
  });

  it('edit a release by nothing, and start linking single sign-on with no return address', async () => {
    const product = await createProduct(h.admin);
    const release = (await h.admin('POST', `/products/${product.id}/releases`, { version: '1.0.0', notes: 'First' })).data;
    for (const kind of KINDS) {
      const edited = await none('PUT', `/releases/${release.id}`, kind);
      expect([edited.statusCode, edited.data.version, edited.data.notes, kind]).toEqual([200, '1.0.0', 'First', kind]);
      // Reaching the service is the proof the body was taken as none: here it has no sign-on to link to.
      const link = await none('POST', '/auth/sso/link', kind);
      expect([link.statusCode, link.data, kind]).toEqual([404, { error: 'single sign-on is not turned on here' }, kind]);
    }
  });

  it('start a passkey registration, where only the password it needs is judged', async () => {
    for (const kind of KINDS) {
      const response = await none('POST', '/auth/passkeys/options', kind);
      expect([response.statusCode, response.data, kind]).toEqual([400, { error: 'Current password (currentPassword): this is not your password' }, kind]);
    }
    await createPlatformAccount(h.database, { username: 'bodiless', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
    const login = await h.request('POST', '/platform/api/auth/login', { body: { username: 'bodiless', password: 'platform password 1' } });
    const cookies = { svc_platform: login.cookies.find((c) => c.name === 'svc_platform')!.value };
    for (const kind of KINDS) {
      const response = await h.request('POST', '/platform/api/auth/passkeys/options', {
        cookies,
        ...(kind === 'absent' ? {} : { body: kind === 'empty' ? '' : {} }),
      });
      expect([response.statusCode, response.data, kind]).toEqual([400, { error: 'Current password (currentPassword): this is not your password' }, kind]);
    }
  });
});

describe('probes', () => {
  it('serves /healthz, /readyz and Prometheus /metrics with per-route figures', async () => {
    expect((await h.anonymous('GET', '//healthz')).data).toEqual({ status: 'ok' });
    expect((await h.anonymous('GET', '//readyz')).data).toEqual({ status: 'ready' });
    await h.admin('GET', '/users');
    const metrics = await h.anonymous('GET', '//metrics');
    expect(metrics.headers['content-type']).toMatch(/text\/plain/);
    expect(metrics.body).toContain('http_requests_total{method="GET",route="/o/:slug/api/users",status_code="200"}');
    expect(metrics.body).toContain('http_request_duration_seconds_bucket');
  });

  it('serves a console page at / and the rendered reference at /docs', async () => {
    expect((await h.anonymous('GET', '//')).headers['content-type']).toMatch(/text\/html/);
    const docs = await h.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.body).toMatch(/swagger/i);
    // The reference's own files come through @fastify/static.
    const style = await h.app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' });
    expect([style.statusCode, style.headers['content-type']]).toEqual([200, expect.stringMatching(/^text\/css/)]);
    expect(style.body.length).toBeGreaterThan(1000);
  });

  it('answers /favicon.ico with the service icon, so no page logs a missing one', async () => {
    const icon = await h.app.inject({ method: 'GET', url: '/favicon.ico' });
    expect([icon.statusCode, icon.headers['content-type']]).toEqual([200, 'image/x-icon']);
    // An ICO holding one 32×32 PNG.
    expect([...icon.rawPayload.subarray(0, 6)]).toEqual([0, 0, 1, 0, 1, 0]);
    expect(icon.rawPayload.subarray(22, 26).toString('latin1')).toBe('\x89PNG');
  });

  it('titles /docs with the service name, its icon, and servers that reach the service from where the page was read', async () => {
    const page = await h.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.body).toContain('<title>Licensor API reference</title>');
    expect(page.body).toMatch(/<link rel="icon" type="image\/png" href="\.\/static\/theme\/icon\.png"/);
    const icon = await h.app.inject({ method: 'GET', url: '/docs/static/theme/icon.png' });
    expect([icon.statusCode, icon.rawPayload.subarray(0, 4).toString('latin1')]).toEqual([200, '\x89PNG']);
    const spec = async (host: string, app = h.app) => JSON.parse((await app.inject({ method: 'GET', url: '/docs/json', headers: { host } })).body);
    // Unset, the public URL is the loopback address, which also answers as localhost: each reader is sent back where they are.
    expect(h.config.publicUrl).toBe('http://127.0.0.1:8080');
    const local = await spec('localhost:8080');
    expect(local.servers[0].url).toBe('http://localhost:8080/o/{slug}/api');
    expect(local.paths['/platform/api/organisations'].servers[0].url).toBe('http://localhost:8080');
    expect((await spec('127.0.0.1:8080')).servers[0].url).toBe('http://127.0.0.1:8080/o/{slug}/api');
    expect((await spec('elsewhere.example')).servers[0].url).toBe('http://127.0.0.1:8080/o/{slug}/api');
    // The document /openapi.json serves keeps the public URL, whoever asks.
    expect(
      (await h.app.inject({ method: 'GET', url: '/openapi.json', headers: { host: 'localhost:8080' } }).then((r) => JSON.parse(r.body))).servers[0].url,
    ).toBe('http://127.0.0.1:8080/o/{slug}/api');
    const behindProxy = await startHarness({ LICENSOR_PUBLIC_URL: 'https://licences.example.com' });
    try {
      expect((await spec('localhost:8080', behindProxy.app)).servers[0].url).toBe('https://licences.example.com/o/{slug}/api');
      expect((await spec('licences.example.com', behindProxy.app)).paths['/platform/api/organisations'].servers[0].url).toBe('https://licences.example.com');
    } finally {
      await behindProxy.close();
    }
  });
});
