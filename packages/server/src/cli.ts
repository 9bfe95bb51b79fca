import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { backup } from './backup/backup.js';
import { checkBackup } from './backup/check.js';
import { terminalProgress } from './backup/progress.js';
import { restore } from './backup/restore.js';
import { backupBeforeMigrating } from './backup/upgrade.js';
import { loadConfig, type Config } from './config.js';
import { openDatabase, sqliteFileIn, type Database } from './db/database.js';
import { migrateToLatest } from './db/migrations/index.js';
import { ArtifactStores } from './releases/stores.js';
import { verifyArtifacts } from './releases/verify.js';
import { guardSchema } from './db/schema-watch.js';
import { openApiDocument as servedDocument } from './http/openapi.js';
import { firstProblem } from './http/validation.js';
import { existingMasterKey, loadMasterKey } from './keys/master-key.js';
import { bootstrap, createOrganisation, operatorCtx, setPasswordByUsername } from './orgs/service.js';
import { countUncounted } from './listings/repos/tallies.js';
import { CreateMemberBody, Password } from './users/schemas.js';
import { createMember } from './users/service.js';
import { promotion, superviseWorkers } from './workers.js';
import { processLogger } from './log.js';
import { PLATFORM_ROLES, type PlatformRole } from './auth/credentials.js';
import { createPlatformAccount, updatePlatformAccount } from './platform/accounts.js';
import { disableSso } from './sso/config.js';

const USAGE = `usage: licensor <command>
  serve                                   start the service (applies migrations first)
  migrate                                 apply database migrations
  org create --slug S --name N [--plan-limit N]
  user create --org S --username U (--password P | --password-stdin) --role ORG_ADMIN|ISSUER|VIEWER
              [--email E] [--display-name D]
  user set-password --org S --username U (--password P | --password-stdin)
  platform-account create --username U (--password P | --password-stdin) --role PLATFORM_ADMIN|PLATFORM_SUPPORT
  platform-account set-password --username U (--password P | --password-stdin)
  platform-account set-active --username U --active true|false   (false ends its sessions)
  sso disable --org S                     turn single sign-on and its enforcement off (password sign-in works again)
  openapi                                 print the OpenAPI document (the console's client is generated from it)
  backup --out FILE                       write a consistent backup of the whole database (secret: mode 0600)
  restore FILE [--check]                  load a backup into an empty database; --check only says which sealed keys open
  artifacts verify [--org S]              re-hash every release file in its store; exit 1 when one is missing or changed`;

// The app (Fastify and every route) is loaded only by the commands that build it, so the others, backup and restore among them, stay small in memory.
const loadApp = () => import('./app.js');

class UsageError extends Error {}

/** Returned by `run` for `--help`: the usage goes to standard output and the exit code is 0. */
const HELP = Symbol('help');

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function need(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

async function password(values: Record<string, unknown>): Promise<string> {
  if (values['password-stdin']) return readStdin();
  if (typeof values.password === 'string') return values.password;
  throw new UsageError('--password or --password-stdin is required');
}

/** A password given on the command line, held to the members' rule (at least 12 characters). */
async function checkedPassword(values: Record<string, unknown>): Promise<string> {
  const secret = await password(values);
  const problem = firstProblem(Password, secret, 'password');
  if (problem) throw new UsageError(problem);
  return secret;
}

// The upgrade's backup is logged as the service logs, on standard error: a command's standard output is its one JSON answer.
const upgradeLog = (config: Config) => processLogger(config, 2);

/** Opens the database; before migrating a SQLite database that holds data, backs it up (DESIGN.md 17). */
async function open(config: Config, migrate = true, serving = false, warn?: (message: string) => void): Promise<Database> {
  if (migrate) await backupBeforeMigrating(config, upgradeLog(config));
  return openDatabase({ databaseUrl: config.databaseUrl, sqliteFile: sqliteFileIn(config.dataDir) }, { migrate, serving, ...(warn ? { warn } : {}) });
}

async function withDatabase<T>(config: Config, work: (database: Database) => Promise<T>, migrate = true): Promise<T> {
  const database = await open(config, migrate);
  try {
    return await work(database);
  } finally {
    await database.close();
  }
}

/** The document the service serves at /openapi.json, built without a data directory or a listener. */
async function openApiDocument(config: Config): Promise<unknown> {
  const database = await openDatabase({ databaseUrl: null, sqliteFile: ':memory:' });
  const { buildApp } = await loadApp();
  const app = await buildApp({ config: { ...config, databaseUrl: null }, database, masterKey: randomBytes(32), logger: false, deliverWebhooks: false });
  try {
    await app.ready();
    return servedDocument(app, config.publicUrl);
  } finally {
    await app.close();
    await database.close();
  }
}

/**
 * The first-run bootstrap, with what to open and the password shown once on the console
 * (deliberately outside the structured log), and the first count of licences after an upgrade.
 */
async function prepareDatabase(config: Config, database: Database): Promise<void> {
  await countUncounted(database);
  const first = await bootstrap(database, config);
  if (!first) return;
  const password = first.generatedPassword
    ? `Its password is: ${first.generatedPassword}\n` +
      `(also saved to ${first.passwordFile}, readable only by this user; that file is removed once the password is changed)\n`
    : 'Its password is the one LICENSOR_BOOTSTRAP_PASSWORD gave.\n';
  process.stdout.write(
    `\nFirst start: organisation "default" created with ORG_ADMIN "admin".\n${password}` +
      `Open the console at ${config.consoleUrl} and sign in to organisation "default" as "admin".\n\n`,
  );
}

// DESIGN.md 17: on SIGTERM, in-flight requests get this long to finish before their connections are closed.
const DRAIN_MS = 10_000;

/**
 * `serve`: the primary prepares the database and supervises the workers (workers.ts), a single
 * one included, so that a worker that dies is replaced; each worker serves the port.
 */
async function serve(config: Config): Promise<void> {
  if (cluster.isPrimary) {
    return superviseWorkers(config, async (log) => {
      await withDatabase(config, (database) => prepareDatabase(config, database));
      // DESIGN.md 20: uploads a crash interrupted left temp files; they go before anyone serves.
      await new ArtifactStores(config).current.sweep();
      // Made here, once, so that the workers all read the same generated key.
      loadMasterKey(config, (message) => log.warn(message));
      log.info(`the console is at ${config.consoleUrl}`);
    });
  }
  // A standby worker asks its primary at once, and listens only when promoted (workers.ts).
  const promoted = promotion();
  // Warnings before the app (and its logger) exists are logged once it does.
  const warnings: string[] = [];
  let warn: (message: string) => void = (message) => warnings.push(message);
  // A worker finds the database prepared by its primary.
  const database = await open(config, false, true, (message) => warn(message));
  const masterKey = loadMasterKey(config, warn);
  const { buildApp } = await loadApp();
  const app = await buildApp({ config, database, masterKey, deliverWebhooks: 'thread' });
  warn = (message) => app.log.warn(message);
  for (const message of warnings) warn(message);
  guardSchema(app, database);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const deadline = setTimeout(() => {
      app.log.warn('requests still in flight after 10 s: closing their connections');
      app.server.closeAllConnections();
    }, DRAIN_MS).unref();
    // Closing the app stops accepting, waits for the requests in flight, then writes the gathered
    // check stamps and counts (app.ts, CheckWrites).
    await app.close();
    clearTimeout(deadline);
    await database.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  // A worker whose primary is gone stops too, rather than serve on unsupervised.
  process.on('disconnect', () => void shutdown('disconnect'));
  await promoted();
  if (!closing) await app.listen({ port: config.port, host: config.host });
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      slug: { type: 'string' },
      name: { type: 'string' },
      'plan-limit': { type: 'string' },
      org: { type: 'string' },
      username: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      role: { type: 'string' },
      email: { type: 'string' },
      'display-name': { type: 'string' },
      active: { type: 'string' },
      out: { type: 'string' },
      check: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  // `restore` takes the file as its argument; every other command is its words.
  const command = positionals[0] === 'restore' ? 'restore' : positionals.join(' ');
  if (values.help || command === 'help') return HELP;
  if (command === '') throw new UsageError('no command given');
  const config = loadConfig();
  switch (command) {
    case 'backup': {
      const result = await backup(config, need(values, 'out'), terminalProgress());
      return {
        ...result,
        notice:
          'this file is secret (password and token hashes, licences, customers): keep it like the database. ' +
          "It does not hold the master key: restoring it needs the same LICENSOR_MASTER_KEY (or the data dir's master.key).",
      };
    }
    case 'restore': {
      const file = positionals[1];
      if (file === undefined || positionals.length > 2) throw new UsageError('restore takes one file');
      if (values.check) {
        const masterKey = existingMasterKey(config);
        if (!masterKey) throw new UsageError('no master key to check with: set LICENSOR_MASTER_KEY (or put the old master.key in the data dir)');
        const result = await checkBackup(file, masterKey, config.pkcs11);
        if (!result.open) process.exitCode = 1;
        return result;
      }
      return withDatabase(config, (database) => restore(database, file, terminalProgress()), false);
    }
    case 'serve':
      return serve(config);
    case 'openapi':
      return openApiDocument(config);
    case 'migrate': {
      const backedUp = await backupBeforeMigrating(config, upgradeLog(config));
      return withDatabase(config, async (database) => ({ migrated: await migrateToLatest(database), ...(backedUp ? { backup: backedUp } : {}) }), false);
    }
    case 'org create': {
      const limit = values['plan-limit'];
      if (limit !== undefined && !/^\d+$/.test(limit)) throw new UsageError('--plan-limit must be a whole number');
      const input = { slug: need(values, 'slug'), name: need(values, 'name'), planLimit: limit === undefined ? null : Number(limit) };
      return withDatabase(config, async (database) => {
        const org = await createOrganisation(database, input);
        return { id: org.id, slug: org.slug, name: org.name, planLimit: org.planLimit, timezone: org.timezone };
      });
    }
    case 'user create': {
      const input = {
        username: need(values, 'username'),
        role: need(values, 'role'),
        password: await password(values),
        ...(values.email === undefined ? {} : { email: values.email }),
        ...(values['display-name'] === undefined ? {} : { displayName: values['display-name'] }),
      };
      const problem = firstProblem(CreateMemberBody, input, 'user');
      if (problem) throw new UsageError(problem);
      const slug = need(values, 'org');
      return withDatabase(config, async (database) => createMember(await operatorCtx(database, slug), input as Parameters<typeof createMember>[1]));
    }
    case 'user set-password': {
      const slug = need(values, 'org');
      const username = need(values, 'username');
      const secret = await checkedPassword(values);
      return withDatabase(config, async (database) => setPasswordByUsername(await operatorCtx(database, slug), username, secret, config.dataDir));
    }
    case 'platform-account create': {
      const username = need(values, 'username');
      const role = need(values, 'role');
      if (!(PLATFORM_ROLES as readonly string[]).includes(role)) throw new UsageError(`--role must be one of ${PLATFORM_ROLES.join(', ')}`);
      const secret = await checkedPassword(values);
      return withDatabase(config, (database) => createPlatformAccount(database, { username, password: secret, role: role as PlatformRole }));
    }
    case 'platform-account set-password': {
      const username = need(values, 'username');
      const secret = await checkedPassword(values);
      return withDatabase(config, (database) => updatePlatformAccount(database, username, { password: secret }));
    }
    case 'platform-account set-active': {
      const username = need(values, 'username');
      const active = need(values, 'active');
      if (active !== 'true' && active !== 'false') throw new UsageError('--active must be true or false');
      return withDatabase(config, (database) => updatePlatformAccount(database, username, { active: active === 'true' }));
    }
    case 'artifacts verify': {
      const slug = values.org === undefined ? undefined : need(values, 'org');
      const result = await withDatabase(config, (database) => verifyArtifacts(database, new ArtifactStores(config), slug));
      if (result.missing.length > 0 || result.mismatched.length > 0) process.exitCode = 1;
      return result;
    }
    case 'sso disable': {
      const slug = need(values, 'org');
      return withDatabase(config, async (database) => {
        await disableSso(await operatorCtx(database, slug));
        return { organisation: slug, enabled: false, enforce: false };
      });
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** Entry point of `bin/licensor.js`: one JSON object on success, one clear line and exit 1 on failure. */
export async function main(argv: string[]): Promise<void> {
  try {
    const result = await run(argv);
    if (result === HELP) process.stdout.write(`${USAGE}\n`);
    else if (result !== undefined) process.stdout.write(`${JSON.stringify(result)}\n`);
  } catch (err) {
    // One line, whatever went wrong; the usage only when asked for.
    const message = (err as Error).message ?? String(err);
    const hint = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? ' (see licensor --help)' : '';
    process.stderr.write(`licensor: ${message.split('\n')[0]}${hint}\n`);
    process.exit(1);
  }
}
