import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/secrets.js';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe('API tokens', () => {
  it('shows the secret once and stores only its SHA-256', async () => {
    const created = await h.admin('POST', '/tokens', { name: 'billing', scopes: ['users:read'] });
    expect(created.statusCode).toBe(201);
    const { token, id, ...record } = created.data;
    expect(token).toMatch(new RegExp(`^svc_${id}_[0-9a-f]{64}$`));
    expect(id).toMatch(/^[a-z0-9]{12,32}$/);
    expect(record).toEqual({
      name: 'billing',
      scopes: ['users:read'],
      createdAt: expect.any(String),
      createdBy: 'admin',
      expiresAt: null,
      lastUsedAt: null,
      revokedAt: null,
    });
    const list = await h.admin('GET', '/tokens');
    expect(list.body).not.toContain(token.split('_')[2]);
    const row = await h.database.db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.secret_hash).toBe(sha256Hex(token.split('_')[2]));
    expect(JSON.stringify(row)).not.toContain(token.split('_')[2]);
    const trail = await h.admin('GET', '/dashboard/activity');
    expect(trail.data.items[0]).toMatchObject({ action: 'token.created', subjectId: id });
    expect(trail.body).not.toContain(token.split('_')[2]);
  });

  it('refuses an undefined scope, a past expiry and a duplicate name', async () => {
    const bad = await h.admin('POST', '/tokens', { name: 'x', scopes: ['licenses:read', 'everything:write'] });
    expect(bad.statusCode).toBe(400);
    expect(bad.data.error).toMatch(/everything:write/);
    expect((await h.admin('POST', '/tokens', { name: 'x', scopes: ['analytics:write'] })).statusCode).toBe(400);
    expect((await h.admin('POST', '/tokens', { name: 'x', scopes: [] })).statusCode).toBe(400);
    const past = await h.admin('POST', '/tokens', { name: 'x', scopes: ['users:read'], expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.statusCode).toBe(400);
    expect(past.data.error).toMatch(/expiresAt/);
    expect((await h.admin('POST', '/tokens', { name: 'dup', scopes: ['users:read'] })).statusCode).toBe(201);
    expect((await h.admin('POST', '/tokens', { name: 'dup', scopes: ['users:read'] })).statusCode).toBe(409);
    expect((await h.admin('GET', '/tokens')).data.filter((t: { name: string }) => t.name === 'x')).toEqual([]);
  });

  it('judges a token by its scopes: write implies read, a missing scope is a 403 naming it', async () => {
    const writer = h.as({ token: await h.createToken(['users:write']) });
    expect((await writer('GET', '/users')).statusCode).toBe(200);
    const reader = h.as({ token: await h.createToken(['users:read']) });
    const refused = await reader('POST', '/users', { username: 'zed', role: 'VIEWER' });
    expect(refused.statusCode).toBe(403);
    expect(refused.data).toEqual({ error: 'missing scope users:write' });
    const unrelated = h.as({ token: await h.createToken(['activity:read']) });
    expect((await unrelated('GET', '/users')).data).toEqual({ error: 'missing scope users:read' });
  });

  it('does not inherit its creator role: an admin-made token is only its scopes', async () => {
    const token = h.as({ token: await h.createToken(['activity:read']) });
    expect((await token('GET', '/dashboard/activity')).statusCode).toBe(200);
    expect((await token('POST', '/users', { username: 'q', role: 'VIEWER' })).statusCode).toBe(403);
  });

  it('stops working on the next request once revoked or deleted, and after expiry', async () => {
    const created = await h.admin('POST', '/tokens', { name: 'short-lived', scopes: ['users:read'] });
    const caller = h.as({ token: created.data.token });
    expect((await caller('GET', '/users')).statusCode).toBe(200);
    const revoked = await h.admin('POST', `/tokens/${created.data.id}/revoke`);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.data.revokedAt).not.toBeNull();
    expect((await caller('GET', '/users')).statusCode).toBe(401);

    const other = await h.admin('POST', '/tokens', { name: 'to-delete', scopes: ['users:read'] });
    expect((await h.admin('DELETE', `/tokens/${other.data.id}`)).statusCode).toBe(204);
    expect((await h.as({ token: other.data.token })('GET', '/users')).statusCode).toBe(401);
    expect((await h.admin('DELETE', `/tokens/${other.data.id}`)).statusCode).toBe(404);

    const expiring = await h.admin('POST', '/tokens', {
      name: 'expiring',
      scopes: ['users:read'],
      expiresAt: new Date(Date.now() + 3600_000).toISOString(),
    });
    const soon = h.as({ token: expiring.data.token });
    expect((await soon('GET', '/users')).statusCode).toBe(200);
    await h.database.db
      .updateTable('api_tokens')
      .set({ expires_at: Date.now() - 1 })
      .where('id', '=', expiring.data.id)
      .execute();
    expect((await soon('GET', '/users')).statusCode).toBe(401);
  });

  it('stamps lastUsedAt at most once a minute', async () => {
    const created = await h.admin('POST', '/tokens', { name: 'stamped', scopes: ['users:read'] });
    const caller = h.as({ token: created.data.token });
    await caller('GET', '/users');
    const first = (await h.admin('GET', '/tokens')).data.find((t: { id: string }) => t.id === created.data.id).lastUsedAt;
    expect(first).not.toBeNull();
    await caller('GET', '/users');
    const second = (await h.admin('GET', '/tokens')).data.find((t: { id: string }) => t.id === created.data.id).lastUsedAt;
    expect(second).toBe(first);
    await h.database.db
      .updateTable('api_tokens')
      .set({ last_used_at: Date.now() - 61_000 })
      .where('id', '=', created.data.id)
      .execute();
    await caller('GET', '/users');
    const third = (await h.admin('GET', '/tokens')).data.find((t: { id: string }) => t.id === created.data.id).lastUsedAt;
    expect(Date.parse(third)).toBeGreaterThan(Date.now() - 5000);
  });

  it('is managed by signed-in ORG_ADMINs only', async () => {
    const token = h.as({ token: await h.createToken(['users:write']) });
    expect((await token('GET', '/tokens')).statusCode).toBe(403);
    expect((await token('POST', '/tokens', { name: 'self', scopes: ['users:read'] })).statusCode).toBe(403);
    const issuer = h.as({ cookie: (await h.createMember('ISSUER')).cookie });
    expect((await issuer('GET', '/tokens')).statusCode).toBe(403);
  });

  it('is refused under another organisation with 403, and a forged secret with 401', async () => {
    const other = await h.otherOrg();
    const token = await h.createToken(['users:read']);
    const response = await h.as({ token }, other.slug)('GET', '/users');
    expect(response.statusCode).toBe(403);
    const forged = token.replace(/_[0-9a-f]{64}$/, `_${'0'.repeat(64)}`);
    expect((await h.as({ token: forged }, other.slug)('GET', '/users')).statusCode).toBe(401);
    expect((await h.as({ token: 'svc_short_abc' })('GET', '/users')).statusCode).toBe(401);
  });
});
