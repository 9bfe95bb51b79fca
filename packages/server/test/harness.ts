import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { inject } from 'light-my-request';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, sqliteFileIn, type Database } from '../src/db/database.js';
import { loadMasterKey } from '../src/keys/master-key.js';
import { createOrganisation, operatorCtx } from '../src/orgs/service.js';
import { createMember } from '../src/users/service.js';

export const backend = (process.env.LICENSOR_TEST_BACKEND ?? 'sqlite') as 'sqlite' | 'postgres';
export const ADMIN_PASSWORD = 'correct horse battery staple';

/**
 * Rate limits count per minute of the clock: a burst that must fall in one window waits for the
 * next minute when fewer than `needSeconds` are left of this one (a loaded machine is slow).
 */
export async function inOneRateWindow(needSeconds: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needSeconds * 1000) await new Promise((resolve) => setTimeout(resolve, left + 500));
}

/**
 * A database of the test's own: a temporary SQLite file, or a fresh schema in the PostgreSQL
 * database named by TEST_DATABASE_URL (selected through the connection's search_path).
 */
export async function freshDatabaseEnv(): Promise<{ env: Record<string, string>; dispose: () => Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'licensor-test-'));
  const env: Record<string, string> = {
    LICENSOR_DATA_DIR: dataDir,
    LICENSOR_MASTER_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'silent',
  };
  let dropSchema = async () => {};
  if (backend === 'postgres') {
    const base = process.env.TEST_DATABASE_URL;
    if (!base) throw new Error('LICENSOR_TEST_BACKEND=postgres needs TEST_DATABASE_URL');
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    // Extensions belong to the database: install pg_trgm once in public, which every test schema's search_path includes.
    await admin.query('create extension if not exists pg_trgm schema public').catch(() => {});
    await admin.query(`create schema ${schema}`);
    await admin.end();
    const url = new URL(base);
    url.searchParams.set('options', `-c search_path=${schema},public`);
    env.DATABASE_URL = url.toString();
    dropSchema = async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop schema ${schema} cascade`);
      await client.end();
    };
  }
  return {
    env,
    dispose: async () => {
      await dropSchema();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * app.inject, but through the server's `request` listener as a connection is served: the check
 * API's lean handler takes its requests there before Fastify (app.ts), so tests exercise it.
 */
export async function injectServed(app: FastifyInstance, options: InjectOptions): Promise<LightMyRequestResponse> {
  // As app.inject does: an app not yet started is started first.
  await app.ready();
  return inject((req, res) => void app.server.emit('request', req, res), options);
}

export interface Response extends LightMyRequestResponse {
  data: any;
}

/** Sends a request; `path` is relative to `/o/<slug>/api` unless it starts with `//`. */
export type Caller = (method: InjectOptions['method'], path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>;

export interface Harness {
  app: FastifyInstance;
  database: Database;
  config: Config;
  env: Record<string, string>;
  slug: string;
  /** The signed-in ORG_ADMIN of the seeded organisation. */
  admin: Caller;
  anonymous: Caller;
  as(credential: { cookie?: string; token?: string }, slug?: string): Caller;
  /** Any path of the service (not only an organisation's), with the cookies and headers given. */
  request(
    method: string,
    url: string,
    options?: { cookies?: Record<string, string>; body?: unknown; headers?: Record<string, string>; app?: FastifyInstance },
  ): Promise<Response>;
  signIn(username: string, password: string, slug?: string): Promise<string>;
  /** Creates a token through the API and returns the whole `svc_...` string. */
  createToken(scopes: string[], slug?: string): Promise<string>;
  createMember(role: string, password?: string): Promise<{ id: number; username: string; cookie: string }>;
  /** Another organisation with its own administrator; `slug` for a test whose configuration names it. */
  otherOrg(slug?: string): Promise<{ slug: string; admin: Caller; cookie: string }>;
  /** A second app over the same database that logs everything (trace) into `lines`, for tests that no secret is logged. */
  loggedApp(): Promise<{ app: FastifyInstance; lines: string[] }>;
  close(): Promise<void>;
}

let counter = 0;

export async function startHarness(envOverrides: Record<string, string> = {}): Promise<Harness> {
  const { env: baseEnv, dispose } = await freshDatabaseEnv();
  const env = { ...baseEnv, ...envOverrides };
  const config = loadConfig(env);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) });
  const masterKey = loadMasterKey(config, () => {});
  const app = await buildApp({ config, database, masterKey });
  await app.ready();

  async function seedOrg(slug: string) {
    await createOrganisation(database, { slug, name: `Org ${slug}`, planLimit: null });
    await createMember(await operatorCtx(database, slug), { username: 'admin', role: 'ORG_ADMIN', password: ADMIN_PASSWORD });
  }

  async function request(
    method: string,
    url: string,
    options: { cookies?: Record<string, string>; body?: unknown; headers?: Record<string, string>; app?: FastifyInstance } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers };
    const cookies = Object.entries(options.cookies ?? {}).map(([k, v]) => `${k}=${v}`);
    if (cookies.length) headers.cookie = cookies.join('; ');
    const { body } = options;
    if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const response = await injectServed(options.app ?? app, {
      method: method as InjectOptions['method'],
      url,
      headers,
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    let data: unknown;
    try {
      data = response.body === '' ? undefined : JSON.parse(response.body);
    } catch {
      data = response.body;
    }
    return Object.assign(response, { data });
  }

  const as =
    (credential: { cookie?: string; token?: string }, slug = 'acme'): Caller =>
    (method, url, body, headers = {}) =>
      request(method as string, url.startsWith('//') ? url.slice(1) : `/o/${slug}/api${url}`, {
        body,
        headers: { ...headers, ...(credential.token ? { authorization: `Bearer ${credential.token}` } : {}) },
        cookies: credential.cookie ? { svc_session: credential.cookie } : {},
      });

  async function signIn(username: string, password: string, slug = 'acme'): Promise<string> {
    const response = await as({}, slug)('POST', '/auth/login', { username, password });
    if (response.statusCode !== 200) throw new Error(`sign-in failed: ${response.statusCode} ${response.body}`);
    const cookie = response.cookies.find((c) => c.name === 'svc_session');
    return cookie!.value;
  }

  await seedOrg('acme');
  const adminCookie = await signIn('admin', ADMIN_PASSWORD);
  const admin = as({ cookie: adminCookie });

  return {
    app,
    database,
    config,
    env,
    slug: 'acme',
    admin,
    anonymous: as({}),
    as,
    request,
    signIn,
    async createToken(scopes, slug = 'acme') {
      const caller = slug === 'acme' ? admin : as({ cookie: await signIn('admin', ADMIN_PASSWORD, slug) }, slug);
      const response = await caller('POST', '/tokens', { name: `t${++counter}`, scopes });
      if (response.statusCode !== 201) throw new Error(`token creation failed: ${response.body}`);
      return response.data.token as string;
    },
    async createMember(role, password = 'a member password') {
      const username = `member${++counter}`;
      const response = await admin('POST', '/users', { username, role, password });
      if (response.statusCode !== 201) throw new Error(`member creation failed: ${response.body}`);
      return { id: response.data.id, username, cookie: await signIn(username, password) };
    },
    async otherOrg(slug = `other${++counter}`) {
      await seedOrg(slug);
      const cookie = await signIn('admin', ADMIN_PASSWORD, slug);
      return { slug, admin: as({ cookie }, slug), cookie };
    },
    async loggedApp() {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      return { app: await buildApp({ config, database, masterKey, logger: { level: 'trace', stream } }), lines };
    },
    async close() {
      await app.close();
      await database.close();
      await dispose();
    },
  };
}
