import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformAccount } from '../../src/platform/accounts.js';
import { startHarness, type Harness } from '../harness.js';
import { createProduct, insertCheckBinding, issueOk } from '../licence-helpers.js';
import { startSmtp } from '../mail-helpers.js';
import { addEndpoint } from '../webhook-helpers.js';

let h: Harness;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let product: { id: number };
let platformCookie: string;

const auditOf = (lid: string) => h.database.db.selectFrom('audit_entries').select(['action', 'summary', 'details']).where('lid', '=', lid).execute();
const emailRows = (lid: string) =>
  h.database.db
    .selectFrom('emails')
    .innerJoin('licences', 'licences.id', 'emails.licence_id')
    .select(['emails.status', 'emails.last_error', 'emails.to_address'])
    .where('licences.lid', '=', lid)
    .execute();

beforeAll(async () => {
  smtp = await startSmtp();
  h = await startHarness({ ...smtp.env, LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' });
  product = await createProduct(h.admin);
  await createPlatformAccount(h.database, { username: 'ops', password: 'platform password 1', role: 'PLATFORM_ADMIN' });
  const login = await h.request('POST', '/platform/api/auth/login', { body: { username: 'ops', password: 'platform password 1' } });
  platformCookie = login.cookies.find((c) => c.name === 'svc_platform')!.value;
});
afterAll(async () => {
  await h?.close();
  await smtp?.close();
});

describe('personal data (DESIGN 22)', () => {
  it("erases a licence's notes, machine labels and email addresses, fails its pending email first, and redacts its audit entries", async () => {
    const licence = await issueOk(h.admin, {
      productId: product.id,
      licensee: 'Grace Hopper',
      licenseeEmail: 'grace@navy.example',
      notes: 'call Grace on 555-0100',
    });
    const bindingId = await insertCheckBinding(h, licence.lid, 'grace-laptop');
    await h.database.db.updateTable('machine_bindings').set({ label: "Grace's ThinkPad" }).where('id', '=', bindingId).execute();
    expect((await h.admin('PUT', `/licenses/${licence.lid}/notes`, { notes: 'call Grace on 555-0199' })).statusCode).toBe(200);
    expect((await h.admin('POST', `/licenses/${licence.lid}/send`)).statusCode).toBe(202);

    const erased = await h.admin('POST', `/licenses/${licence.lid}/erase-personal-data`);
    expect(erased.statusCode, erased.body).toBe(200);
    expect(erased.data).toMatchObject({ lid: licence.lid, notes: null });
    expect(await emailRows(licence.lid)).toEqual([{ status: 'failed', last_error: 'erased', to_address: null }]);
    await h.app.mail.drain();
    expect(smtp.received).toEqual([]);
    const label = await h.database.db.selectFrom('machine_bindings').select('label').where('id', '=', bindingId).executeTakeFirstOrThrow();
    expect(label.label).toBeNull();
    const trail = JSON.stringify(await auditOf(licence.lid));
    expect(trail).not.toContain('555-01');
    expect(trail).not.toContain('grace@navy.example');
    expect(trail).toContain('[erased]');
    const entry = (await auditOf(licence.lid)).find((e) => e.action === 'licence.personal_data_erased')!;
    expect(JSON.parse(entry.details!)).toEqual({ lid: licence.lid, fields: expect.arrayContaining(['notes', 'machines.label', 'emails.to']) });
    // The signed term stays (a signature cannot be edited), and so does the customer's own record.
    expect((await h.admin('GET', `/licenses/${licence.lid}`)).data.licenseString).toBe(licence.licenseString);
    expect((await h.admin('GET', `/customers/${licence.customerId}`)).data.email).toBe('grace@navy.example');

    const again = await h.admin('POST', `/licenses/${licence.lid}/erase-personal-data`);
    expect(again.statusCode).toBe(200);
  });

  it('is for ORG_ADMIN sessions (a PLATFORM_ADMIN included): tokens and other roles 403, unknown ids 404', async () => {
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Alan Turing', licenseeEmail: 'alan@bletchley.example' });
    const token = h.as({ token: await h.createToken(['licenses:write', 'customers:write']) });
    const issuer = h.as({ cookie: (await h.createMember('ISSUER')).cookie });
    for (const caller of [token, issuer]) {
      expect((await caller('POST', `/licenses/${licence.lid}/erase-personal-data`)).statusCode).toBe(403);
      expect((await caller('POST', `/customers/${licence.customerId}/erase`)).statusCode).toBe(403);
    }
    expect((await h.admin('POST', '/customers/999999/erase')).statusCode).toBe(404);
    expect((await h.admin('POST', '/licenses/LIC-NONE/erase-personal-data')).statusCode).toBe(404);
    const byPlatform = await h.request('POST', `/o/acme/api/customers/${licence.customerId}/erase`, { cookies: { svc_platform: platformCookie } });
    expect(byPlatform.statusCode, byPlatform.body).toBe(200);
    const trail = await h.admin('GET', `/customers/${licence.customerId}`);
    expect(trail.data.name).toBe(`Erased customer ${licence.customerId}`);
  });

  it("erases a customer: name, email, notes, its licences' licensee and email, its audit entries; raises customer.updated", async () => {
    const created = await h.admin('POST', '/customers', { name: 'Katherine Johnson', email: 'kj@nasa.example', notes: 'prefers phone' });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.data.id;
    const one = await issueOk(h.admin, { productId: product.id, customerId: id });
    const two = await issueOk(h.admin, { productId: product.id, customerId: id, notes: 'second seat for Katherine' });
    await h.admin('POST', `/licenses/${two.lid}/send`);
    await addEndpoint(h.admin, 'http://127.0.0.1:9/hook', ['customer.updated']);

    const erased = await h.admin('POST', `/customers/${id}/erase`);
    expect(erased.statusCode, erased.body).toBe(200);
    expect(erased.data).toMatchObject({ id, name: `Erased customer ${id}`, email: null, notes: null, licenseCount: 2 });
    for (const lid of [one.lid, two.lid]) {
      const licence = (await h.admin('GET', `/licenses/${lid}`)).data;
      expect(licence).toMatchObject({ licensee: `Erased customer ${id}`, licenseeEmail: null, notes: null });
      expect(JSON.stringify(await auditOf(lid))).not.toMatch(/Katherine|kj@nasa/);
    }
    expect(await emailRows(two.lid)).toEqual([{ status: 'failed', last_error: 'erased', to_address: null }]);
    const customerTrail = await h.database.db
      .selectFrom('audit_entries')
      .select(['action', 'summary', 'details'])
      .where('subject_type', '=', 'customer')
      .where('subject_id', '=', String(id))
      .execute();
    expect(JSON.stringify(customerTrail)).not.toMatch(/Katherine|kj@nasa|prefers phone/);
    expect(customerTrail.map((e) => e.action)).toEqual(expect.arrayContaining(['customer.created', 'customer.erased', 'customer.updated']));
    const events = await h.database.db.selectFrom('webhook_events').select(['type', 'data']).where('type', '=', 'customer.updated').execute();
    expect(events.map((e) => JSON.parse(e.data).customer)).toContainEqual(expect.objectContaining({ id, name: `Erased customer ${id}`, email: null }));
    // The search finds the licences by the new name only.
    expect((await h.admin('GET', '/licenses/page?q=Katherine')).data.items).toEqual([]);
    expect((await h.admin('POST', `/customers/${id}/erase`)).statusCode).toBe(200);
  });
});
