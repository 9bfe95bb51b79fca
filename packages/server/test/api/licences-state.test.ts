import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Caller, type Harness } from '../harness.js';
import { ISO_MS, addDays, createProduct, fingerprint, insertCheckBinding, issueOk, planOrg, todayUtc } from '../licence-helpers.js';

let h: Harness;
let product: any;

beforeAll(async () => {
  h = await startHarness();
  product = await createProduct(h.admin, { allowedLicenceTypes: ['OFFLINE', 'ONLINE'], maxMachines: 3 });
});
afterAll(() => h?.close());

const post = (lid: string, action: string, body?: unknown, caller: Caller = h.admin) => caller('POST', `/licenses/${lid}/${action}`, body);
const detail = async (lid: string) => (await h.admin('GET', `/licenses/${lid}`)).data;
const active = () => issueOk(h.admin, { productId: product.id, licensee: 'State Ltd' });
const expired = () => issueOk(h.admin, { productId: product.id, licensee: 'State Ltd', issueDate: addDays(todayUtc(), -400) });

function expectNear(iso: string, before: number) {
  expect(iso).toMatch(ISO_MS);
  expect(Date.parse(iso)).toBeGreaterThanOrEqual(before);
  expect(Date.parse(iso)).toBeLessThanOrEqual(Date.now());
}

describe('revoke and reinstate', () => {
  it('revokes with a reason, stamps revokedAt, and refuses a second revoke', async () => {
    const licence = await active();
    const before = Date.now();
    const response = await post(licence.lid, 'revoke', { reason: 'chargeback' });
    expect(response.statusCode).toBe(200);
    expect(response.data).toMatchObject({
      lid: licence.lid,
      status: 'REVOKED',
      revoked: true,
      revokedReason: 'chargeback',
      licenseString: licence.licenseString,
    });
    expectNear(response.data.revokedAt, before);
    expect(await detail(licence.lid)).toEqual(response.data);
    const again = await post(licence.lid, 'revoke', { reason: 'twice' });
    expect(again.statusCode).toBe(400);
    expect(again.data).toEqual({ error: expect.any(String) });
    expect((await detail(licence.lid)).revokedReason).toBe('chargeback');
  });

  it('revokes without a body, or with an empty JSON body, with no reason', async () => {
    const a = await active();
    expect((await post(a.lid, 'revoke')).data).toMatchObject({ status: 'REVOKED', revokedReason: null });
    const b = await active();
    const response = await h.admin('POST', `/licenses/${b.lid}/revoke`, '', { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(200);
    expect(response.data.status).toBe('REVOKED');
    expect((await post(b.lid, 'revoke', { reason: 'x', extra: 1 })).statusCode).toBe(400);
  });

  it('reinstates to the status the calendar gives, clearing the revocation', async () => {
    const current = await active();
    await post(current.lid, 'revoke', { reason: 'mistake' });
    const reinstated = await post(current.lid, 'reinstate');
    expect(reinstated.statusCode).toBe(200);
    expect(reinstated.data).toMatchObject({ status: 'ACTIVE', revoked: false, revokedReason: null, revokedAt: null });
    const old = await expired();
    await post(old.lid, 'revoke');
    expect((await post(old.lid, 'reinstate')).data.status).toBe('EXPIRED');
    const future = await issueOk(h.admin, { productId: product.id, licensee: 'State Ltd', issueDate: addDays(todayUtc(), 5) });
    await post(future.lid, 'revoke');
    expect((await post(future.lid, 'reinstate')).data.status).toBe('PENDING');
  });

  it('refuses to reinstate a licence that is not revoked (400)', async () => {
    const licence = await active();
    const response = await post(licence.lid, 'reinstate');
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(/not revoked/);
  });

  it('refuses to reinstate an archived licence (400) until it is restored', async () => {
    const licence = await active();
    await post(licence.lid, 'revoke');
    expect((await post(licence.lid, 'archive')).statusCode).toBe(200);
    const refused = await post(licence.lid, 'reinstate');
    expect(refused.statusCode).toBe(400);
    expect(refused.data.error).toMatch(/archived/);
    expect((await detail(licence.lid)).revoked).toBe(true);
    expect((await post(licence.lid, 'restore')).statusCode).toBe(200);
    expect((await post(licence.lid, 'reinstate')).data.status).toBe('ACTIVE');
  });
});

describe('archive and restore', () => {
  it('archives a REVOKED or an EXPIRED licence and restores it', async () => {
    for (const licence of [await expired(), await active()]) {
      if (licence.status === 'ACTIVE') await post(licence.lid, 'revoke');
      const before = Date.now();
      const archived = await post(licence.lid, 'archive');
      expect(archived.statusCode).toBe(200);
      expect(archived.data).toMatchObject({ archived: true, status: licence.status === 'ACTIVE' ? 'REVOKED' : 'EXPIRED' });
      expectNear(archived.data.archivedAt, before);
      expect((await detail(licence.lid)).archived).toBe(true);
      expect((await post(licence.lid, 'archive')).statusCode).toBe(400);
      const restored = await post(licence.lid, 'restore');
      expect(restored.statusCode).toBe(200);
      expect(restored.data).toMatchObject({ archived: false, archivedAt: null, licenseString: licence.licenseString });
    }
  });

  it.each([
    ['ACTIVE', () => ({})],
    ['PENDING', () => ({ issueDate: addDays(todayUtc(), 3) })],
    ['GRACE', () => ({ issueDate: addDays(todayUtc(), -40), validityMonths: 1, graceDays: 60 })],
  ])('refuses to archive a licence that is %s (400)', async (status, dates) => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'State Ltd', ...dates() });
    expect(licence.status).toBe(status);
    const response = await post(licence.lid, 'archive');
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(/REVOKED or EXPIRED/);
    expect((await detail(licence.lid)).archived).toBe(false);
  });

  it('refuses to restore a licence that is not archived (400)', async () => {
    const licence = await active();
    expect((await post(licence.lid, 'restore')).statusCode).toBe(400);
  });
});

describe('the audit trail of a licence', () => {
  it('records every action under the token that did it, newest first, paged', async () => {
    const created = await h.admin('POST', '/tokens', { name: 'billing-bot', scopes: ['licenses:read', 'licenses:write'] });
    const bot = h.as({ token: created.data.token });
    const issued = await bot('POST', '/licenses', { productId: product.id, licensee: 'Audit Ltd', issueDate: addDays(todayUtc(), -400) });
    expect(issued.statusCode).toBe(201);
    expect(issued.data.issuedBy).toBe('token/billing-bot');
    const { lid } = issued.data;
    // Another licence's actions stay out of this trail.
    const other = await active();
    await post(other.lid, 'revoke');

    expect((await post(lid, 'revoke', { reason: 'audit' }, bot)).statusCode).toBe(200);
    expect((await post(lid, 'reinstate', undefined, bot)).statusCode).toBe(200);
    expect((await post(lid, 'archive', undefined, bot)).statusCode).toBe(200);
    expect((await post(lid, 'restore', undefined, bot)).statusCode).toBe(200);
    expect((await post(lid, 'renew', undefined, bot)).statusCode).toBe(200);
    const machine = await insertCheckBinding(h, lid, 'audit');
    expect((await post(lid, 'release-binding', { machineId: machine }, bot)).statusCode).toBe(200);
    const released = (await bot('GET', `/licenses/${lid}/machines`)).data.find((m: { id: number }) => m.id === machine);
    expect(released).toMatchObject({ live: false, releasedBy: 'token/billing-bot' });

    const trail = await bot('GET', `/licenses/${lid}/activity`);
    expect(trail.statusCode).toBe(200);
    expect(trail.data).toMatchObject({ total: 7, limit: 50, offset: 0 });
    expect(trail.data.items.map((e: { action: string }) => e.action)).toEqual([
      'machine.released',
      'licence.renewed',
      'licence.restored',
      'licence.archived',
      'licence.reinstated',
      'licence.revoked',
      'licence.issued',
    ]);
    for (const entry of trail.data.items) {
      expect(entry).toEqual({
        id: expect.any(Number),
        at: expect.stringMatching(ISO_MS),
        actor: 'token/billing-bot',
        action: expect.any(String),
        subjectType: expect.any(String),
        subjectId: expect.any(String),
        lid,
        summary: expect.any(String),
        details: expect.toSatisfy((d: unknown) => d === null || typeof d === 'object'),
      });
    }
    expect(trail.data.items[0]).toMatchObject({ subjectType: 'machine', subjectId: String(machine) });
    expect(trail.data.items[5]).toMatchObject({ subjectType: 'licence', subjectId: lid });
    const ids = trail.data.items.map((e: { id: number }) => e.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);

    const page = await bot('GET', `/licenses/${lid}/activity?limit=2&offset=1`);
    expect(page.data).toMatchObject({ total: 7, limit: 2, offset: 1 });
    expect(page.data.items.map((e: { action: string }) => e.action)).toEqual(['licence.renewed', 'licence.restored']);
    expect((await bot('GET', `/licenses/${lid}/activity?limit=0`)).statusCode).toBe(400);
    expect((await bot('GET', `/licenses/${lid}/activity?limit=201`)).statusCode).toBe(400);

    // The organisation's trail holds them too.
    const org = await h.admin('GET', '/dashboard/activity?limit=200');
    expect(org.data.items.filter((e: { lid: string }) => e.lid === lid)).toHaveLength(7);
  });
});

describe('release-binding', () => {
  it('releases one named binding, counting the rebind', async () => {
    const licence = await active();
    const [firstAt, secondAt] = [Date.now() - 5000, Date.now() - 1000];
    const first = await insertCheckBinding(h, licence.lid, 'rel-1', firstAt);
    const second = await insertCheckBinding(h, licence.lid, 'rel-2', secondAt);
    // boundAt is the earliest live binding's.
    expect(await detail(licence.lid)).toMatchObject({ activated: true, seatsUsed: 2, boundAt: new Date(firstAt).toISOString() });
    const before = Date.now();
    const response = await post(licence.lid, 'release-binding', { machineId: first });
    expect(response.statusCode).toBe(200);
    expect(response.data).toMatchObject({ lid: licence.lid, rebindCount: 1, seatsUsed: 1, activated: true });
    expect(response.data.boundAt).toBe(new Date(secondAt).toISOString());
    // Oldest first, released ones included.
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines).toEqual([
      expect.objectContaining({ id: first, live: false, releasedBy: 'admin', atIssue: false }),
      expect.objectContaining({ id: second, live: true, releasedAt: null, releasedBy: null, atIssue: false }),
    ]);
    expectNear(machines[0].releasedAt, before);
    // Released already: nothing to release under that id.
    expect((await post(licence.lid, 'release-binding', { machineId: first })).statusCode).toBe(400);
  });

  it('releases every live binding not at issue when no machine is named', async () => {
    const atIssue = fingerprint('rel-at-issue');
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Release Ltd', fingerprint: atIssue, maxMachines: 3 });
    await insertCheckBinding(h, licence.lid, 'rel-a');
    await insertCheckBinding(h, licence.lid, 'rel-b');
    expect((await detail(licence.lid)).seatsUsed).toBe(3);
    const response = await post(licence.lid, 'release-binding');
    expect(response.statusCode).toBe(200);
    expect(response.data).toMatchObject({ rebindCount: 2, seatsUsed: 1, activated: true });
    const machines = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    expect(machines.map((m: { live: boolean; atIssue: boolean }) => [m.atIssue, m.live])).toEqual([
      [true, true],
      [false, false],
      [false, false],
    ]);
    // Only the at-issue binding is left: nothing to release.
    const nothing = await post(licence.lid, 'release-binding');
    expect(nothing.statusCode).toBe(400);
    expect((await detail(licence.lid)).rebindCount).toBe(2);
    const activity = (await h.admin('GET', `/licenses/${licence.lid}/activity`)).data.items;
    expect(activity.filter((e: { action: string }) => e.action === 'machine.released')).toHaveLength(2);
  });

  it('refuses to release a binding inside the signature (400)', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Release Ltd', fingerprint: fingerprint('rel-signed') });
    const [binding] = (await h.admin('GET', `/licenses/${licence.lid}/machines`)).data;
    const response = await post(licence.lid, 'release-binding', { machineId: binding.id });
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(/signature|at issue/);
    expect((await h.admin('GET', `/licenses/${licence.lid}/machines`)).data[0]).toMatchObject({ live: true, releasedAt: null });
    expect((await detail(licence.lid)).rebindCount).toBe(0);
  });

  it('refuses when there is nothing to release, or the machine is not this licence’s (400)', async () => {
    const licence = await active();
    expect((await post(licence.lid, 'release-binding')).statusCode).toBe(400);
    const other = await active();
    const theirs = await insertCheckBinding(h, other.lid, 'rel-theirs');
    expect((await post(licence.lid, 'release-binding', { machineId: theirs })).statusCode).toBe(400);
    expect((await h.admin('GET', `/licenses/${other.lid}/machines`)).data[0].live).toBe(true);
    expect((await post(licence.lid, 'release-binding', { machineId: 'one' })).statusCode).toBe(400);
  });

  it('leaves the licence unbound once its only binding is released', async () => {
    const licence = await active();
    await insertCheckBinding(h, licence.lid, 'rel-only');
    const released = (await post(licence.lid, 'release-binding')).data;
    expect(released).toMatchObject({ activated: false, boundAt: null, seatsUsed: 0, rebindCount: 1 });
  });
});

describe('notes', () => {
  it('replaces and clears the notes in place, audited, found by q at once, never signed', async () => {
    const licence = await active();
    const put = (body: unknown, caller: Caller = h.admin) => caller('PUT', `/licenses/${licence.lid}/notes`, body);
    const updated = await put({ notes: 'Renewal promised by Quokka procurement' });
    expect(updated.statusCode).toBe(200);
    expect(updated.data).toMatchObject({ lid: licence.lid, notes: 'Renewal promised by Quokka procurement', licenseString: licence.licenseString });
    expect((await h.admin('GET', '/licenses/page?q=quokka')).data.items.map((i: { lid: string }) => i.lid)).toEqual([licence.lid]);
    const trail = (await h.admin('GET', `/licenses/${licence.lid}/activity?action=licence.notes_updated`)).data;
    expect(trail.items[0]).toMatchObject({ action: 'licence.notes_updated', actor: 'admin', lid: licence.lid });
    expect((await put({ notes: null })).data.notes).toBeNull();
    expect((await h.admin('GET', '/licenses/page?q=quokka')).data.total).toBe(0);
    expect((await put({})).statusCode).toBe(400);
    expect((await put({ notes: 'x'.repeat(10_001) })).statusCode).toBe(400);
    expect((await h.admin('PUT', '/licenses/00000000-0000-4000-8000-000000000000/notes', { notes: 'x' })).statusCode).toBe(404);
    const viewer = await h.createMember('VIEWER');
    expect((await put({ notes: 'nope' }, h.as({ cookie: viewer.cookie }))).statusCode).toBe(403);
  });
});

describe('activity filters', () => {
  it('narrows both activity listings by exact action and actor', async () => {
    const created = await h.admin('POST', '/tokens', { name: 'filter-bot', scopes: ['licenses:write', 'activity:read'] });
    const bot = h.as({ token: created.data.token });
    const licence = await active();
    await post(licence.lid, 'revoke', { reason: 'filters' }, bot);
    await post(licence.lid, 'reinstate');
    const mine = (await h.admin('GET', `/licenses/${licence.lid}/activity?actor=token/filter-bot`)).data;
    expect(mine.items.map((e: { action: string }) => e.action)).toEqual(['licence.revoked']);
    expect(mine.total).toBe(1);
    const org = (await h.admin('GET', '/dashboard/activity?action=licence.reinstated&actor=admin')).data;
    expect(org.items.length).toBeGreaterThan(0);
    expect(org.items.every((e: { action: string; actor: string }) => e.action === 'licence.reinstated' && e.actor === 'admin')).toBe(true);
    expect((await h.admin('GET', '/dashboard/activity?action=licence.reinstated&actor=nobody')).data.total).toBe(0);
    expect((await h.admin('GET', '/dashboard/activity?colour=red')).statusCode).toBe(400);
  });
});

describe('plan capacity', () => {
  it('shows the limit and its use on both dashboard answers', async () => {
    const org = await planOrg(h, 3);
    const own = await createProduct(org.admin);
    await org.admin('POST', '/licenses', { productId: own.id, licensee: 'Plan Ltd' });
    await org.admin('POST', '/licenses', { productId: own.id, licensee: 'Plan Ltd', issueDate: addDays(todayUtc(), 7) });
    for (const path of ['/dashboard', '/dashboard/metrics']) {
      expect((await org.admin('GET', path)).data.plan).toEqual({ limit: 3, used: 1 });
    }
    expect((await h.admin('GET', '/dashboard/metrics')).data.plan).toMatchObject({ limit: null });
  });

  it('refuses issue at the limit with 403; PENDING, EXPIRED and REVOKED do not count', async () => {
    const org = await planOrg(h, 2);
    const own = await createProduct(org.admin);
    const issue = (extra: Record<string, unknown> = {}) => org.admin('POST', '/licenses', { productId: own.id, licensee: 'Plan Ltd', ...extra });
    const first = await issue();
    expect(first.statusCode).toBe(201);
    expect((await issue({ issueDate: addDays(todayUtc(), -40), validityMonths: 1, graceDays: 60 })).data.status).toBe('GRACE');
    const refused = await issue();
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toMatch(/plan|limit/i);
    // Licences that do not count may still be issued at the limit.
    const pending = await issue({ issueDate: addDays(todayUtc(), 7) });
    expect(pending.statusCode).toBe(201);
    const lapsed = await issue({ issueDate: addDays(todayUtc(), -400) });
    expect(lapsed.statusCode).toBe(201);
    expect(lapsed.data.status).toBe('EXPIRED');
    // Revoking frees a slot; reinstating into a full plan is refused.
    await org.admin('POST', `/licenses/${first.data.lid}/revoke`);
    const replacement = await issue();
    expect(replacement.statusCode).toBe(201);
    const reinstate = await org.admin('POST', `/licenses/${first.data.lid}/reinstate`);
    expect(reinstate.statusCode).toBe(403);
    expect((await org.admin('GET', `/licenses/${first.data.lid}`)).data.status).toBe('REVOKED');
    // Renewing an expired licence would make it count: refused; renewing a counting one is fine.
    const renewLapsed = await org.admin('POST', `/licenses/${lapsed.data.lid}/renew`);
    expect(renewLapsed.statusCode).toBe(403);
    expect((await org.admin('GET', `/licenses/${lapsed.data.lid}/versions`)).data).toEqual([]);
    expect((await org.admin('POST', `/licenses/${replacement.data.lid}/renew`)).statusCode).toBe(200);
    // Renewing a PENDING licence into a later PENDING term does not count either.
    expect((await org.admin('POST', `/licenses/${pending.data.lid}/renew`)).data.status).toBe('PENDING');
  });

  it('refuses everything with a limit of 0 except what does not count', async () => {
    const org = await planOrg(h, 0);
    const own = await createProduct(org.admin);
    expect((await org.admin('POST', '/licenses', { productId: own.id, licensee: 'Zero Ltd' })).statusCode).toBe(403);
    expect((await org.admin('POST', '/licenses', { productId: own.id, licensee: 'Zero Ltd', issueDate: addDays(todayUtc(), 1) })).statusCode).toBe(201);
  });

  it('is not limited in an organisation without a plan limit', async () => {
    for (let i = 0; i < 3; i++) expect((await h.admin('POST', '/licenses', { productId: product.id, licensee: 'Unlimited Ltd' })).statusCode).toBe(201);
  });
});

describe('checkHealth', () => {
  it('follows lastCheckedAt against checkEverySeconds and checkMaxSeconds; NOT_APPLICABLE offline', async () => {
    const online = await createProduct(h.admin, { licenceType: 'ONLINE', checkIntervalSeconds: 3600, maxOfflineSeconds: 86_400 });
    const licence = await issueOk(h.admin, { productId: online.id, licensee: 'Health Ltd' });
    expect(licence).toMatchObject({ checkHealth: 'NEVER', lastCheckedAt: null, checkEverySeconds: 3600, checkMaxSeconds: 86_400 });
    const checkedAgo = async (lid: string, seconds: number) => {
      const at = Date.now() - seconds * 1000;
      await h.database.db.updateTable('licence_stamps').set({ last_checked_at: at }).where('lid', '=', lid).execute();
      const read = (await h.admin('GET', `/licenses/${lid}`)).data;
      expect(read.lastCheckedAt).toBe(new Date(at).toISOString());
      return read.checkHealth;
    };
    expect(await checkedAgo(licence.lid, 60)).toBe('OK');
    expect(await checkedAgo(licence.lid, 3500)).toBe('OK');
    expect(await checkedAgo(licence.lid, 3700)).toBe('DUE');
    expect(await checkedAgo(licence.lid, 86_000)).toBe('DUE');
    expect(await checkedAgo(licence.lid, 86_500)).toBe('OVERDUE');
    const offline = await active();
    expect(await checkedAgo(offline.lid, 60)).toBe('NOT_APPLICABLE');
  });
});

describe('who may do what', () => {
  it('lets a licenses:read token read and verify but not change; a VIEWER may not issue; an ISSUER may', async () => {
    const licence = await active();
    const reader = h.as({ token: await h.createToken(['licenses:read']) });
    for (const path of ['', '/download', '/versions', '/machines', '/activity']) {
      expect((await reader('GET', `/licenses/${licence.lid}${path}`)).statusCode, path).toBe(200);
    }
    expect((await reader('GET', '/licenses')).statusCode).toBe(200);
    expect((await reader('POST', '/licenses/verify', { license: licence.licenseString })).statusCode).toBe(200);
    for (const action of ['renew', 'revoke', 'reinstate', 'archive', 'restore', 'release-binding']) {
      const refused = await reader('POST', `/licenses/${licence.lid}/${action}`);
      expect(refused.statusCode, action).toBe(403);
      expect(refused.data.error).toMatch(/licenses:write/);
    }
    expect((await reader('POST', '/licenses', { productId: product.id, licensee: 'Nope Ltd' })).statusCode).toBe(403);
    const viewer = h.as({ cookie: (await h.createMember('VIEWER')).cookie });
    expect((await viewer('POST', '/licenses', { productId: product.id, licensee: 'Nope Ltd' })).statusCode).toBe(403);
    expect((await viewer('GET', `/licenses/${licence.lid}`)).statusCode).toBe(200);
    const issuer = h.as({ cookie: (await h.createMember('ISSUER')).cookie });
    const issued = await issuer('POST', '/licenses', { productId: product.id, licensee: 'Issuer Ltd' });
    expect(issued.statusCode).toBe(201);
    expect((await issuer('POST', `/licenses/${issued.data.lid}/revoke`)).statusCode).toBe(200);
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data).toMatchObject({ revoked: false, archived: false, renewedAt: null });
  });
});
