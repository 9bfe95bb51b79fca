import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openDatabase, sqliteFileIn, type Database } from '../../src/db/database.js';
import { loadMasterKey } from '../../src/keys/master-key.js';
import { backend, startHarness, type Harness } from '../harness.js';
import { createProduct, issueOk } from '../licence-helpers.js';
import { parseMime, startSmtp } from '../mail-helpers.js';

const PASSWORD = 'hunter2-smtp-secret';
let h: Harness;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let second: { app: FastifyInstance; database: Database; lines: string[] };
let product: { id: number };

beforeAll(async () => {
  smtp = await startSmtp({ password: PASSWORD });
  h = await startHarness({ LICENSOR_SMTP_URL: `smtp://mailer:${PASSWORD}@127.0.0.1:${smtp.port}`, LICENSOR_MAIL_FROM: 'licences@vendor.example' });
  // A second instance, logging everything: on PostgreSQL with its own pool on the same database (on SQLite,
  // whose instances are processes, one connection: two in one process would wait on each other synchronously).
  const database = backend === 'postgres' ? await openDatabase({ databaseUrl: h.config.databaseUrl, sqliteFile: sqliteFileIn(h.config.dataDir) }) : h.database;
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = await buildApp({ config: h.config, database, masterKey: loadMasterKey(h.config, () => {}), logger: { level: 'trace', stream } });
  await app.ready();
  second = { app, database, lines };
  product = await createProduct(h.admin);
});
afterAll(async () => {
  await second?.app.close();
  if (second && second.database !== h.database) await second.database.close();
  await h?.close();
  await smtp?.close();
});

describe('the mail outbox on two instances (DESIGN 22)', () => {
  it('sends each of 24 emails exactly once while both instances drain at the same time', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 24; i++) {
      const licence = await issueOk(h.admin, { productId: product.id, licensee: `Customer ${i}`, licenseeEmail: `c${i}@customer.example` });
      ids.push((await h.admin('POST', `/licenses/${licence.lid}/send`)).data.id);
    }
    await Promise.all([h.app.mail.drain(), second.app.mail.drain(), h.app.mail.drain(), second.app.mail.drain()]);
    const sent = smtp.received.map((m) => Number(parseMime(m.raw).headers['x-licensor-email-id']));
    expect([...sent].sort((a, b) => a - b)).toEqual(ids);
    const statuses = await h.database.db.selectFrom('emails').select(['status', 'attempts']).execute();
    expect(statuses.every((s) => s.status === 'sent' && Number(s.attempts) === 1)).toBe(true);
  });

  it('authenticates with the URL credentials and never shows them: not in lastError, an answer or a log line', async () => {
    // Only this test's instance sends: the others' own turns stop.
    await h.app.mail.stop();
    await second.app.mail.stop();
    const licence = await issueOk(h.admin, { productId: product.id, licensee: 'Wrong Password', licenseeEmail: 'wp@customer.example' });
    // The relay now wants another password: the attempt fails with its reply.
    const bad = await startSmtp({ password: 'another-password' });
    const config = { ...h.config, mail: { ...h.config.mail, smtp: { ...h.config.mail.smtp!, port: bad.port } } };
    const app = await buildApp({
      config,
      database: second.database,
      masterKey: loadMasterKey(h.config, () => {}),
      logger: {
        level: 'trace',
        stream: new Writable({
          write(chunk, _encoding, done) {
            second.lines.push(String(chunk));
            done();
          },
        }),
      },
    });
    try {
      await h.admin('POST', `/licenses/${licence.lid}/send`);
      await app.mail.drain();
    } finally {
      await app.close();
      await bad.close();
    }
    const [record] = (await h.admin('GET', `/licenses/${licence.lid}/emails`)).data;
    expect(record.lastError).toMatch(/535|auth/i);
    expect(JSON.stringify(record)).not.toContain(PASSWORD);
    expect((await h.admin('GET', '/settings')).body).not.toContain(PASSWORD);
    expect(second.lines.join('\n')).not.toContain(PASSWORD);
    expect(second.lines.join('\n')).not.toContain('mailer:');
  });

  it('stops start-up on a bad mail variable, naming it without the credentials', () => {
    const base = { LICENSOR_DATA_DIR: h.config.dataDir, LICENSOR_MASTER_KEY: h.env.LICENSOR_MASTER_KEY! };
    const bad = [
      { LICENSOR_SMTP_URL: `smtp://mailer:${PASSWORD}@relay.example:587` },
      { LICENSOR_MAIL_FROM: 'licences@vendor.example' },
      { LICENSOR_SMTP_URL: `http://mailer:${PASSWORD}@relay.example`, LICENSOR_MAIL_FROM: 'licences@vendor.example' },
      { LICENSOR_SMTP_URL: 'smtp://relay.example', LICENSOR_MAIL_FROM: 'Licences <licences@vendor.example>' },
      { LICENSOR_MAIL_DAILY_LIMIT: '0' },
      { LICENSOR_MAIL_DAILY_LIMIT: '100001' },
      { LICENSOR_MAIL_FROM_NAME: 'Evil "Corp"' },
      { LICENSOR_MAIL_TRUST_SENDER_NAMES: 'yes' },
    ];
    for (const env of bad) {
      let thrown: unknown;
      try {
        loadConfig({ ...base, ...env });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(env)).toBeInstanceOf(ConfigError);
      expect((thrown as Error).message).toMatch(/LICENSOR_(SMTP_URL|MAIL_)/);
      expect((thrown as Error).message).not.toContain(PASSWORD);
    }
    const remote = loadConfig({ ...base, LICENSOR_SMTP_URL: `smtp://mailer:${PASSWORD}@relay.example`, LICENSOR_MAIL_FROM: 'licences@vendor.example' }).mail;
    expect(remote.smtp).toMatchObject({ secure: false, port: 587, requireTLS: true });
    expect(loadConfig({ ...base, LICENSOR_SMTP_URL: 'smtps://relay.example', LICENSOR_MAIL_FROM: 'l@vendor.example' }).mail.smtp).toMatchObject({
      secure: true,
      port: 465,
      requireTLS: false,
    });
    expect(h.config.mail.smtp!.requireTLS).toBe(false);
  });
});
