import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedProduct, nonce, type CheckedProduct } from '../check-helpers.js';
import { startHarness, type Harness } from '../harness.js';
import { fingerprint } from '../licence-helpers.js';

let h: Harness;
let p: CheckedProduct;
let lid: string;

beforeAll(async () => {
  h = await startHarness();
  p = await checkedProduct(h);
  lid = (await p.issue()).lid;
});
afterAll(() => h?.close());

// Raw JSON, so the escapes reach the service exactly as a hostile client writes them.
const raw = (method: 'POST' | 'PUT', path: string, json: string) => h.admin(method, path, json);

describe('text the database cannot store', () => {
  it.each([
    ['POST', '/customers', '{"name":"a\\u0000b"}', 'Name \\(name\\)'],
    ['POST', '/products', '{"productKey":"k1","name":"x\\u0000y"}', 'Name \\(name\\)'],
    ['POST', '/products', '{"productKey":"k1","name":"x","description":"\\u0000"}', 'Description \\(description\\)'],
    ['POST', '/users', '{"username":"nul","role":"VIEWER","displayName":"a\\u0000"}', 'Display name \\(displayName\\)'],
    ['POST', '/products', '{"productKey":"k1","name":"x\\ud800y"}', 'Name \\(name\\)'],
    ['POST', '/customers', '{"name":"lone \\udc00 low"}', 'Name \\(name\\)'],
    ['POST', '/customers', '{"name":"ok","notes":"\\ud83d"}', 'Notes \\(notes\\)'],
  ] as const)('%s %s %s is a 400 naming %s, and changes nothing', async (method, path, json, field) => {
    const before = (await h.admin('GET', '/dashboard/activity')).data.total;
    const response = await raw(method, path, json);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(new RegExp(`^${field} must (not contain NUL characters|be well-formed Unicode \\(a lone surrogate was found\\))$`));
    expect((await h.admin('GET', '/dashboard/activity')).data.total).toBe(before);
  });

  it('keeps well-formed text outside the Basic Multilingual Plane', async () => {
    const response = await raw('POST', '/customers', '{"name":"Rocket \\ud83d\\ude80 Ltd"}');
    expect(response.statusCode).toBe(201);
    expect(response.data.name).toBe('Rocket 🚀 Ltd');
  });

  it('refuses NUL in an edit, in notes, and in a query', async () => {
    expect((await raw('PUT', `/licenses/${lid}/notes`, '{"notes":"a\\u0000"}')).data.error).toBe('Notes (notes) must not contain NUL characters');
    const q = await h.admin('GET', '/licenses/page?q=%00');
    expect(q.statusCode).toBe(400);
    expect(q.data.error).toBe('Query parameter "q" must not contain NUL characters');
    expect((await h.admin('GET', '/customers?q=a%00')).statusCode).toBe(400);
  });

  it('answers a sign-in with NUL as a 400, without a credential', async () => {
    const response = await h.anonymous('POST', '/auth/login', '{"username":"a\\u0000b","password":"x"}', { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toBe('Username (username) must not contain NUL characters');
  });

  it.each([
    ['POST', '//o/%00/api/auth/login'],
    ['GET', '//o/%00/api/licenses'],
    ['GET', '/licenses/%00'],
    ['GET', '/licenses/%00/machines'],
    ['POST', '/licenses/%00/revoke'],
    ['GET', '/licenses/a%00b/versions'],
  ] as const)('%s %s with NUL in a path segment is a 404', async (method, path) => {
    const response = await h.admin(method, path, method === 'POST' ? {} : undefined);
    expect(response.statusCode).toBe(404);
    expect(response.data.error).toBeTruthy();
  });

  it('answers a check with NUL in its path as a 404', async () => {
    const response = await h.as({ token: p.token })('POST', '/public/license/%00/check', { license: 'x', fingerprint: fingerprint('m'), nonce: nonce() });
    expect(response.statusCode).toBe(404);
  });
});

describe('numbers out of range', () => {
  it.each([
    '/licenses/page?offset=99999999999999999999',
    '/dashboard/activity?offset=99999999999999999999',
    `/licenses/page?productId=99999999999999999999`,
    `/licenses/page?customerId=1e308`,
    '/licenses?productId=9223372036854775808',
  ])('GET %s is a 400 naming the parameter', async (path) => {
    const response = await h.admin('GET', path);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(/^Query parameter "(offset|productId|customerId)": a whole number from [01] to 9,007,199,254,740,991$/);
  });

  it('answers licence activity with a huge offset as a 400', async () => {
    expect((await h.admin('GET', `/licenses/${lid}/activity?offset=99999999999999999999`)).statusCode).toBe(400);
  });

  it.each([
    '/products/0',
    '/products/-1',
    '/products/99999999999999999999',
    '/products/99999999999999999999/keys',
    '/customers/9223372036854775808',
    `/licenses/x/versions/99999999999`,
  ])('GET %s names a record that cannot exist: 404', async (path) => {
    expect((await h.admin('GET', path)).statusCode).toBe(404);
  });

  it('still answers a non-numeric id with 400', async () => {
    const response = await h.admin('GET', '/products/abc');
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toBe('Path parameter "id": a whole number from 1 to 9,007,199,254,740,991');
  });

  it.each([
    ['POST', '/licenses', '{"productId":1e308,"licensee":"x"}', 'Product ID (productId): a whole number from 1 to 9,007,199,254,740,991'],
    ['POST', `/licenses/LID/release-binding`, '{"machineId":99999999999999999999}', 'Machine ID (machineId): a whole number from 1 to 9,007,199,254,740,991'],
  ] as const)('%s %s %s is a 400 naming the field', async (method, path, json, field) => {
    const response = await raw(method, path.replace('LID', lid), json);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toBe(field);
  });
});

describe('errors that help', () => {
  it('names the allowed values of an enum', async () => {
    const response = await h.admin('POST', '/users', { username: 'enum-test', role: 'WIZARD' });
    expect(response.data).toEqual({ error: 'Role (role): one of VIEWER, ISSUER or ORG_ADMIN' });
    const sort = await h.admin('GET', '/licenses/page?sort=price');
    expect(sort.data.error).toBe('Query parameter "sort": one of issuedAt, expiresAt, licensee, status, product or lastCheckedAt');
  });

  it.each(['/customers?colour=red', '/products?q=x', '/users?page=2', '/settings?x=1', `/licenses/${'LID'}/machines?all=true`])(
    'refuses the unknown query parameter of GET %s, naming it',
    async (path) => {
      const response = await h.admin('GET', path.replace('LID', 'x'));
      expect(response.statusCode).toBe(400);
      expect(response.data.error).toMatch(/^Unknown query parameter "(colour|q|page|x|all)"$/);
    },
  );
});
