import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe('settings', () => {
  it('starts in UTC and is readable by any credential of the organisation', async () => {
    const token = h.as({ token: await h.createToken(['activity:read']) });
    expect((await token('GET', '/settings')).data).toEqual({
      timezone: 'UTC',
      updatedAt: null,
      updatedBy: null,
      mail: {
        senderName: 'Org acme',
        replyTo: null,
        subject: 'Your licence for {{product}}',
        text: expect.stringContaining('{{portalLink}}'),
        html: expect.stringContaining('{{portalLink}}'),
        configured: false,
        enabled: true,
        from: null,
        dailyLimit: 500,
        dailyUsed: 0,
      },
    });
    const viewer = h.as({ cookie: (await h.createMember('VIEWER')).cookie });
    expect((await viewer('GET', '/settings')).statusCode).toBe(200);
  });

  it.each(['Europe/Berlin', 'America/New_York', 'UTC', 'Etc/GMT+2'])('accepts the zone name %s and stores it as sent', async (zone) => {
    const response = await h.admin('PUT', '/settings', { timezone: zone });
    expect(response.statusCode).toBe(200);
    expect(response.data).toMatchObject({ timezone: zone, updatedBy: 'admin' });
    expect(Date.parse(response.data.updatedAt)).toBeGreaterThan(Date.now() - 10_000);
    expect((await h.admin('GET', '/settings')).data.timezone).toBe(zone);
  });

  it.each(['+02:00', '-5', 'UTC+2', 'Mars/Olympus', ''])('refuses %j with 400 and changes nothing', async (zone) => {
    await h.admin('PUT', '/settings', { timezone: 'Asia/Tokyo' });
    const response = await h.admin('PUT', '/settings', { timezone: zone });
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(/timezone/i);
    expect((await h.admin('GET', '/settings')).data.timezone).toBe('Asia/Tokyo');
  });

  it('is changed by a signed-in ORG_ADMIN only, never a token, and audited', async () => {
    const token = h.as({ token: await h.createToken(['users:write', 'analytics:read']) });
    expect((await token('PUT', '/settings', { timezone: 'Europe/Paris' })).statusCode).toBe(403);
    const issuer = h.as({ cookie: (await h.createMember('ISSUER')).cookie });
    expect((await issuer('PUT', '/settings', { timezone: 'Europe/Paris' })).statusCode).toBe(403);
    await h.admin('PUT', '/settings', { timezone: 'Europe/Paris' });
    const trail = await h.admin('GET', '/dashboard/activity?limit=1');
    expect(trail.data.items[0]).toMatchObject({ action: 'settings.updated', actor: 'admin', subjectType: 'organisation' });
  });
});

describe('audit trail', () => {
  it('pages newest first with the total, and names token actors token/<name>', async () => {
    const token = await h.admin('POST', '/tokens', { name: 'auditor', scopes: ['users:write', 'activity:read'] });
    const bot = h.as({ token: token.data.token });
    for (const username of ['a1', 'a2', 'a3']) await bot('POST', '/users', { username, role: 'VIEWER' });
    const page = await bot('GET', '/dashboard/activity?limit=2');
    expect(page.statusCode).toBe(200);
    expect(page.data.limit).toBe(2);
    expect(page.data.offset).toBe(0);
    expect(page.data.items.map((e: { summary: string }) => e.summary)).toEqual(['Created VIEWER a3', 'Created VIEWER a2']);
    expect(page.data.items[0]).toMatchObject({ actor: 'token/auditor', action: 'user.created', lid: null });
    const next = await bot('GET', '/dashboard/activity?limit=2&offset=2');
    expect(next.data.items[0].summary).toBe('Created VIEWER a1');
    expect(next.data.total).toBe(page.data.total);
    const ids = [...page.data.items, ...next.data.items].map((e: { id: number }) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });

  it.each(['limit=0', 'limit=201', 'offset=-1', 'limit=abc'])('refuses %s with 400 naming the parameter', async (query) => {
    const response = await h.admin('GET', `/dashboard/activity?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(query.split('=')[0]!);
  });

  it('needs activity:read', async () => {
    const bot = h.as({ token: await h.createToken(['users:read']) });
    expect((await bot('GET', '/dashboard/activity')).data).toEqual({ error: 'missing scope activity:read' });
  });
});
