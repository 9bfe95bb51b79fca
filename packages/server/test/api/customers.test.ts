import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/core/transaction.js';
import { operatorCtx } from '../../src/orgs/service.js';
import { findOrCreateCustomer } from '../../src/customers/service.js';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const latestAudit = async () => (await h.admin('GET', '/dashboard/activity')).data.items[0];

describe('customers', () => {
  it('creates, reads, lists, replaces and deletes a customer, recording each change', async () => {
    const created = await h.admin('POST', '/customers', { name: 'Ada Ltd', email: 'Ops@Ada.example', notes: 'Key account' });
    expect(created.statusCode).toBe(201);
    expect(created.data).toEqual({
      id: expect.any(Number),
      name: 'Ada Ltd',
      email: 'Ops@Ada.example',
      notes: 'Key account',
      licenseCount: 0,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      createdBy: 'admin',
    });
    const id = created.data.id;
    expect(await latestAudit()).toMatchObject({ action: 'customer.created', actor: 'admin', subjectType: 'customer', subjectId: String(id) });
    expect((await h.admin('GET', `/customers/${id}`)).data).toEqual(created.data);
    expect((await h.admin('GET', '/customers')).data).toContainEqual(created.data);

    const replaced = await h.admin('PUT', `/customers/${id}`, { name: 'Ada Limited' });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.data).toEqual({ ...created.data, name: 'Ada Limited', email: null, notes: null });
    expect(await latestAudit()).toMatchObject({ action: 'customer.updated', subjectId: String(id) });

    const deleted = await h.admin('DELETE', `/customers/${id}`);
    expect(deleted.statusCode).toBe(204);
    expect(await latestAudit()).toMatchObject({ action: 'customer.deleted', subjectId: String(id) });
    expect((await h.admin('GET', `/customers/${id}`)).statusCode).toBe(404);
    expect((await h.admin('PUT', `/customers/${id}`, { name: 'x' })).statusCode).toBe(404);
    expect((await h.admin('DELETE', `/customers/${id}`)).statusCode).toBe(404);
  });

  it.each([
    [{ email: 'a@b.example' }, /^Name \(name\) is required$/],
    [{ name: '' }, /^Name \(name\) must not be empty \(text of at most 200 characters\)$/],
    [{ name: '  ' }, /^Name \(name\): must not be blank/],
    [{ name: 'x', email: 'not-an-email' }, /email/],
    [{ name: 'x', extra: true }, /extra/],
  ])('refuses %j with 400 naming the field', async (body, message) => {
    const response = await h.admin('POST', '/customers', body);
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(message);
  });

  it('takes back a record read with GET, and filters the list by name or email', async () => {
    const created = (await h.admin('POST', '/customers', { name: 'Zebra Works', email: 'hello@zebra.example' })).data;
    await h.admin('POST', '/customers', { name: 'Other Zeal', email: 'x@elsewhere.example' });
    const read = (await h.admin('GET', `/customers/${created.id}`)).data;
    const back = await h.admin('PUT', `/customers/${created.id}`, { ...read, notes: 'Changed' });
    expect(back.statusCode).toBe(200);
    expect(back.data).toEqual({ ...read, notes: 'Changed' });
    expect((await h.admin('PUT', `/customers/${created.id}`, { ...read, colour: 'red' })).data).toEqual({ error: 'Unknown field "colour"' });
    const names = async (q: string) => (await h.admin('GET', `/customers?q=${encodeURIComponent(q)}`)).data.map((c: { name: string }) => c.name);
    expect(await names('ZEBRA')).toEqual(['Zebra Works']);
    expect(await names('@ZEBRA.example')).toEqual(['Zebra Works']);
    expect(await names('ze')).toEqual(['Other Zeal', 'Zebra Works']);
    expect(await names('100%')).toEqual([]);
    expect((await h.admin('GET', '/customers?colour=red')).statusCode).toBe(400);
  });

  it('keeps emails unique per organisation, ignoring case', async () => {
    const first = (await h.admin('POST', '/customers', { name: 'Bee', email: 'hello@bee.example' })).data;
    const again = await h.admin('POST', '/customers', { name: 'Other Bee', email: 'HELLO@bee.example' });
    expect(again.statusCode).toBe(409);
    expect(again.data.error).toMatch(/^email/);
    const second = (await h.admin('POST', '/customers', { name: 'Cee', email: 'cee@cee.example' })).data;
    expect((await h.admin('PUT', `/customers/${second.id}`, { name: 'Cee', email: 'Hello@Bee.example' })).statusCode).toBe(409);
    // Its own email, in another case, is no conflict; nor are several customers without one.
    expect((await h.admin('PUT', `/customers/${first.id}`, { name: 'Bee', email: 'HELLO@BEE.example' })).statusCode).toBe(200);
    expect((await h.admin('POST', '/customers', { name: 'No mail 1' })).statusCode).toBe(201);
    expect((await h.admin('POST', '/customers', { name: 'No mail 2', email: null })).statusCode).toBe(201);
    const other = await h.otherOrg();
    expect((await other.admin('POST', '/customers', { name: 'Bee elsewhere', email: 'hello@bee.example' })).statusCode).toBe(201);
    expect((await other.admin('GET', `/customers/${first.id}`)).statusCode).toBe(404);
  });

  it('finds or creates the customer a licence is issued to', async () => {
    const ctx = await operatorCtx(h.database, 'acme');
    const resolve = (who: { name: string; email: string | null }) =>
      inTransaction(ctx, (t) => findOrCreateCustomer(t, h.database.dialect, 'tester', Date.now(), who));
    const created = () => h.database.db.selectFrom('audit_entries').select('id').where('action', '=', 'customer.created').execute();
    const before = (await created()).length;
    const byEmail = await resolve({ name: 'Dee', email: 'dee@dee.example' });
    expect(byEmail).toMatchObject({ name: 'Dee', email: 'dee@dee.example', created_by: 'tester' });
    expect((await resolve({ name: 'Renamed Dee', email: 'DEE@dee.example' })).id).toBe(byEmail.id);
    // Found, not created: no second entry.
    expect((await created()).length).toBe(before + 1);
    const byName = await resolve({ name: 'Eve', email: null });
    expect((await resolve({ name: 'Eve', email: null })).id).toBe(byName.id);
    expect((await resolve({ name: 'eve', email: null })).id).not.toBe(byName.id);
    expect((await resolve({ name: 'Eve', email: 'eve@eve.example' })).id).not.toBe(byName.id);
    expect(await latestAudit()).toMatchObject({ action: 'customer.created', actor: 'tester' });
  });

  it('lets customers:read read but not write, and a VIEWER read only', async () => {
    const reader = h.as({ token: await h.createToken(['customers:read']) });
    expect((await reader('GET', '/customers')).statusCode).toBe(200);
    const refused = await reader('POST', '/customers', { name: 'x' });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toBe('missing scope customers:write');
    const viewer = h.as({ cookie: (await h.createMember('VIEWER')).cookie });
    expect((await viewer('GET', '/customers')).statusCode).toBe(200);
    expect((await viewer('POST', '/customers', { name: 'x' })).statusCode).toBe(403);
    const writer = h.as({ token: await h.createToken(['customers:write']) });
    expect((await writer('POST', '/customers', { name: 'By token' })).data.createdBy).toMatch(/^token\/t\d+$/);
  });
});
