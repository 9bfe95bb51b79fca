import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { allowList } from './core/networks.js';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Where SQLite is backed up before a migration (DESIGN.md 17). */
  backupDir: string;
  /** `postgres://...` selects PostgreSQL; null means SQLite in the data dir. */
  databaseUrl: string | null;
  /** 32 bytes, or null when it is to be generated into the data dir (SQLite only). */
  masterKey: Buffer | null;
  redisUrl: string | null;
  /** Prefix of every Redis key this service writes, so deployments can share one Redis. */
  redisPrefix: string;
  publicUrl: string;
  /** What the start-up banner tells the operator to open: the public URL, else `http://localhost:PORT/` on this machine. */
  consoleUrl: string;
  /** Origins the Origin rule accepts as the service's own (DESIGN.md 9: loopback answers as both names). */
  ownOrigins: string[];
  /** DESIGN.md 9: the origin passkeys are bound to (its host name is the RP ID); `localhost` on loopback. */
  passkeyOrigin: string;
  trustProxy: boolean;
  loginFailures: number;
  checkRateProduct: number;
  checkRateAddress: number;
  /** DESIGN.md 19: usage requests a minute per licence (0: no limit), and the ids a licence remembers per period key. */
  usageRateLicence: number;
  usageIdsPerPeriod: number;
  logLevel: string;
  /** DESIGN.md 1: JSON lines, or one short line per entry for a person at a terminal (log.ts). */
  logFormat: 'json' | 'pretty';
  /** DESIGN.md 11: processes serving the port (`auto`: one per core); 1 serves from this process. */
  workers: number;
  bootstrapPassword: string | null;
  /** DESIGN.md 10: the PKCS#11 module's path, and the token labels each organisation (by slug) may use. */
  pkcs11: { module: string; tokens: Map<string, string[]> } | null;
  /** DESIGN.md 15: the CIDR ranges webhooks may reach although they are not public (and over http:// only there). */
  webhookAllowNetworks: net.BlockList;
  /** DESIGN.md 21: the CIDR ranges an identity provider may be reached in although they are not public (and over http:// only there). */
  ssoAllowNetworks: net.BlockList;
  /** DESIGN.md 21's `{base}`: the public URL, or `http://localhost:PORT` on loopback (passkeys' origin). */
  ssoBase: string;
  /** DESIGN.md 20: where artifact bytes live (`disk`, or an S3 bucket and key prefix), the disk directory, the bounds. */
  artifactStore: { kind: 'disk' } | ({ kind: 's3'; bucket: string; prefix: string } & S3Settings);
  artifactDir: string;
  artifactMaxBytes: number;
  /** Bytes of stored artifacts an organisation may hold; 0 = no limit. */
  artifactQuotaBytes: number;
  downloadGrantSeconds: number;
  /** DESIGN.md 21: a linked member's passkey signs in only this many days after its last SSO sign-in, while SSO is enabled. */
  ssoPasskeyDays: number;
  /** DESIGN.md 22: the SMTP relay licence emails go through (loadMailConfig below). */
  mail: MailConfig;
}

/** DESIGN.md 20: how the S3 store is reached; credentials null means the SDK's own chain (environment, profile, instance role). */
export interface S3Settings {
  endpoint: string | null;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string } | null;
  forcePathStyle: boolean;
}

/** A configuration mistake: reported as one line, never a stack trace. */
export class ConfigError extends Error {}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const LOG_FORMATS = ['json', 'pretty'] as const;
/** Addresses that listen on every interface: this machine reaches them as localhost. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::']);

const S3_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** DESIGN.md 20's artifact settings. */
function artifactConfig(env: NodeJS.ProcessEnv, dataDir: string) {
  const raw = env.LICENSOR_ARTIFACT_STORE || 'disk';
  let artifactStore: Config['artifactStore'];
  if (raw === 'disk') artifactStore = { kind: 'disk' };
  else {
    const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(raw);
    if (!match || !S3_BUCKET.test(match[1]!) || (match[2] ?? '').split('/').some((part, i, all) => part === '' && i < all.length - 1))
      throw new ConfigError('LICENSOR_ARTIFACT_STORE must be disk or s3://bucket[/prefix]');
    artifactStore = { kind: 's3', bucket: match[1]!, prefix: (match[2] ?? '').replace(/\/$/, ''), ...s3Settings(env) };
  }
  return {
    artifactStore,
    artifactDir: path.resolve(env.LICENSOR_ARTIFACT_DIR || path.join(dataDir, 'artifacts')),
    artifactMaxBytes: integer(env, 'LICENSOR_ARTIFACT_MAX_BYTES', 2_147_483_648, 1, 5_497_558_138_880),
    artifactQuotaBytes: integer(env, 'LICENSOR_ARTIFACT_QUOTA_BYTES', 53_687_091_200, 0, Number.MAX_SAFE_INTEGER),
    downloadGrantSeconds: integer(env, 'LICENSOR_DOWNLOAD_GRANT_SECONDS', 300, 60, 3_600),
  };
}

function s3Settings(env: NodeJS.ProcessEnv): S3Settings {
  const endpoint = env.LICENSOR_S3_ENDPOINT ? url('LICENSOR_S3_ENDPOINT', env.LICENSOR_S3_ENDPOINT, ['http:', 'https:']) : null;
  const accessKeyId = env.LICENSOR_S3_ACCESS_KEY_ID || '';
  const secretAccessKey = env.LICENSOR_S3_SECRET_ACCESS_KEY || '';
  if ((accessKeyId === '') !== (secretAccessKey === ''))
    throw new ConfigError('LICENSOR_S3_ACCESS_KEY_ID and LICENSOR_S3_SECRET_ACCESS_KEY go together: set both or neither');
  return {
    endpoint,
    region: env.LICENSOR_S3_REGION || 'us-east-1',
    credentials: accessKeyId === '' ? null : { accessKeyId, secretAccessKey },
    // An endpoint is usually MinIO, Ceph or another S3-compatible store, which want path-style URLs.
    forcePathStyle: env.LICENSOR_S3_FORCE_PATH_STYLE ? boolean(env, 'LICENSOR_S3_FORCE_PATH_STYLE') : endpoint !== null,
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function workers(env: NodeJS.ProcessEnv): number {
  if (env.LICENSOR_WORKERS === 'auto') return os.availableParallelism();
  try {
    return integer(env, 'LICENSOR_WORKERS', 1, 1, 256);
  } catch {
    throw new ConfigError(`LICENSOR_WORKERS must be auto or an integer from 1 to 256, got "${env.LICENSOR_WORKERS}"`);
  }
}

function boolean(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').toLowerCase();
  if (raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function url(name: string, raw: string, protocols: string[]): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw;
}

/** `slug=tokenLabel,...`; an organisation may be named more than once, for several tokens. */
function pkcs11Tokens(raw: string): Map<string, string[]> {
  const tokens = new Map<string, string[]>();
  for (const entry of raw.split(',')) {
    const match = /^\s*([a-z0-9][a-z0-9-]{0,62})=(.{1,32}?)\s*$/.exec(entry);
    if (!match) throw new ConfigError(`LICENSOR_PKCS11_TOKENS must be slug=tokenLabel pairs separated by commas, got "${entry}"`);
    tokens.set(match[1]!, [...(tokens.get(match[1]!) ?? []), match[2]!]);
  }
  return tokens;
}

/**
 * Reads and validates the environment once, at start-up. `terminal`: whether standard output is
 * a terminal, which makes `pretty` the default LOG_FORMAT.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, terminal = process.stdout.isTTY === true): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const databaseUrl = env.DATABASE_URL ? url('DATABASE_URL', env.DATABASE_URL, ['postgres:', 'postgresql:']) : null;

  let masterKey: Buffer | null = null;
  if (env.LICENSOR_MASTER_KEY) {
    const raw = env.LICENSOR_MASTER_KEY;
    const decoded = Buffer.from(raw, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw) || decoded.length !== 32) {
      throw new ConfigError('LICENSOR_MASTER_KEY must be the base64 encoding of exactly 32 bytes');
    }
    masterKey = decoded;
  } else if (databaseUrl) {
    throw new ConfigError('LICENSOR_MASTER_KEY is required with PostgreSQL, so every instance seals with the same key');
  }

  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const logFormat = (env.LOG_FORMAT || (terminal ? 'pretty' : 'json')) as Config['logFormat'];
  if (!LOG_FORMATS.includes(logFormat)) throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${env.LOG_FORMAT}"`);

  let publicUrl: string;
  let ownOrigins: string[];
  let passkeyOrigin: string;
  if (env.LICENSOR_PUBLIC_URL) {
    publicUrl = url('LICENSOR_PUBLIC_URL', env.LICENSOR_PUBLIC_URL, ['http:', 'https:']).replace(/\/+$/, '');
    ownOrigins = [new URL(publicUrl).origin];
    passkeyOrigin = ownOrigins[0]!;
  } else {
    publicUrl = url('HOST', `http://${host.includes(':') ? `[${host}]` : host}:${port}`, ['http:']);
    ownOrigins = LOOPBACK_HOSTS.has(host)
      ? [new URL(publicUrl).origin, `http://127.0.0.1:${port}`, `http://localhost:${port}`].filter((o, i, all) => all.indexOf(o) === i)
      : [new URL(publicUrl).origin];
    // Browsers refuse an IP address as RP ID: on loopback, passkeys live on localhost.
    passkeyOrigin = LOOPBACK_HOSTS.has(host) ? `http://localhost:${port}` : new URL(publicUrl).origin;
  }

  const bootstrapPassword = env.LICENSOR_BOOTSTRAP_PASSWORD || null;
  if (bootstrapPassword !== null && [...bootstrapPassword].length < 12) {
    throw new ConfigError('LICENSOR_BOOTSTRAP_PASSWORD must be at least 12 characters');
  }

  const pkcs11Module = env.LICENSOR_PKCS11_MODULE || null;
  if (pkcs11Module !== null && !path.isAbsolute(pkcs11Module)) throw new ConfigError('LICENSOR_PKCS11_MODULE must be an absolute path');
  if ((pkcs11Module === null) !== !env.LICENSOR_PKCS11_TOKENS) throw new ConfigError('LICENSOR_PKCS11_MODULE and LICENSOR_PKCS11_TOKENS go together');

  const webhookNetworks = allowList(env.LICENSOR_WEBHOOK_ALLOW_NETWORKS ?? '');
  if (webhookNetworks.bad !== null)
    throw new ConfigError(`LICENSOR_WEBHOOK_ALLOW_NETWORKS must be CIDR ranges separated by commas, got "${webhookNetworks.bad}"`);

  const ssoNetworks = allowList(env.LICENSOR_SSO_ALLOW_NETWORKS ?? '');
  if (ssoNetworks.bad !== null) throw new ConfigError(`LICENSOR_SSO_ALLOW_NETWORKS must be CIDR ranges separated by commas, got "${ssoNetworks.bad}"`);

  const dataDir = path.resolve(env.LICENSOR_DATA_DIR || './data');
  return {
    ...artifactConfig(env, dataDir),
    port,
    host,
    dataDir,
    backupDir: path.resolve(env.LICENSOR_BACKUP_DIR || path.join(dataDir, 'backups')),
    databaseUrl,
    masterKey,
    redisUrl: env.REDIS_URL ? url('REDIS_URL', env.REDIS_URL, ['redis:', 'rediss:']) : null,
    redisPrefix: env.LICENSOR_REDIS_PREFIX || 'licensor:',
    publicUrl,
    consoleUrl: env.LICENSOR_PUBLIC_URL
      ? `${publicUrl}/`
      : LOOPBACK_HOSTS.has(host) || WILDCARD_HOSTS.has(host)
        ? `http://localhost:${port}/`
        : `${publicUrl}/`,
    ownOrigins,
    passkeyOrigin,
    trustProxy: boolean(env, 'LICENSOR_TRUST_PROXY'),
    loginFailures: integer(env, 'LICENSOR_LOGIN_FAILURES', 10, 0, 1_000_000),
    checkRateProduct: integer(env, 'LICENSOR_CHECK_RATE_PRODUCT', 6000, 0, 100_000_000),
    checkRateAddress: integer(env, 'LICENSOR_CHECK_RATE_ADDRESS', 600, 0, 100_000_000),
    usageRateLicence: integer(env, 'LICENSOR_USAGE_RATE_LICENCE', 60, 0, 1_000_000),
    usageIdsPerPeriod: integer(env, 'LICENSOR_USAGE_IDS_PER_PERIOD', 100_000, 1, 100_000_000),
    logLevel,
    logFormat,
    workers: workers(env),
    bootstrapPassword,
    pkcs11: pkcs11Module === null ? null : { module: pkcs11Module, tokens: pkcs11Tokens(env.LICENSOR_PKCS11_TOKENS!) },
    webhookAllowNetworks: webhookNetworks.list,
    ssoAllowNetworks: ssoNetworks.list,
    ssoBase: env.LICENSOR_PUBLIC_URL ? publicUrl : passkeyOrigin,
    ssoPasskeyDays: integer(env, 'LICENSOR_SSO_PASSKEY_DAYS', 30, 1, 3650),
    mail: loadMailConfig(env),
  };
}

/** DESIGN.md 22: the deployment's SMTP relay and sender, read once at start-up. */
export interface MailConfig {
  /** Null when LICENSOR_SMTP_URL and LICENSOR_MAIL_FROM are unset: sending is 503 and nothing queues. */
  smtp: {
    secure: boolean;
    host: string;
    port: number;
    user: string | null;
    pass: string | null;
    /** STARTTLS required: with credentials, except to a loopback host. */
    requireTLS: boolean;
  } | null;
  from: string | null;
  fromName: string;
  trustSenderNames: boolean;
  dailyLimit: number;
}

/** A bare address: one `@`, no space, no display name or angle brackets. */
export const EMAIL = /^[^\s@<>"(),;:\\[\]]+@[^\s@<>"(),;:\\[\]]+\.[^\s@<>"(),;:\\[\]]+$/;

/** `senderName`'s rule (DESIGN.md 22): 1 to 100 characters, no control character or `"<>`. */
export function senderNameProblem(value: string): string | null {
  if ([...value].length < 1 || [...value].length > 100) return 'must be 1 to 100 characters';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f-\u009f"<>]/.test(value)) return 'must hold no control character, " < or >';
  return null;
}

function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare.toLowerCase() === 'localhost') return true;
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  return bare === '::1';
}

export const MAIL_DISABLED: MailConfig = { smtp: null, from: null, fromName: 'Licensor', trustSenderNames: false, dailyLimit: 500 };

/** Reads the mail variables; a bad value is a ConfigError naming the variable, never the URL's credentials. */
export function loadMailConfig(env: NodeJS.ProcessEnv): MailConfig {
  const rawUrl = env.LICENSOR_SMTP_URL || '';
  const from = env.LICENSOR_MAIL_FROM || '';
  if ((rawUrl === '') !== (from === '')) throw new ConfigError('LICENSOR_SMTP_URL and LICENSOR_MAIL_FROM go together: set both or neither');
  const fromName = env.LICENSOR_MAIL_FROM_NAME ?? 'Licensor';
  const nameProblem = senderNameProblem(fromName);
  if (nameProblem) throw new ConfigError(`LICENSOR_MAIL_FROM_NAME ${nameProblem}`);
  const trustRaw = (env.LICENSOR_MAIL_TRUST_SENDER_NAMES ?? '').toLowerCase();
  if (!['', 'true', 'false', '1', '0'].includes(trustRaw)) throw new ConfigError('LICENSOR_MAIL_TRUST_SENDER_NAMES must be true or false');
  const trustSenderNames = trustRaw === 'true' || trustRaw === '1';
  const limitRaw = env.LICENSOR_MAIL_DAILY_LIMIT ?? '';
  let dailyLimit = 500;
  if (limitRaw !== '') {
    if (!/^\d+$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > 100_000) {
      throw new ConfigError(`LICENSOR_MAIL_DAILY_LIMIT must be an integer from 1 to 100000, got "${limitRaw}"`);
    }
    dailyLimit = Number(limitRaw);
  }
  if (rawUrl === '') return { ...MAIL_DISABLED, fromName, trustSenderNames, dailyLimit };

  if (!EMAIL.test(from) || from.length > 254) throw new ConfigError('LICENSOR_MAIL_FROM must be a bare email address, such as licences@example.com');
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new ConfigError('LICENSOR_SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://[user:pass@]host[:port]');
  }
  if (
    (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') ||
    url.hostname === '' ||
    (url.pathname !== '' && url.pathname !== '/') ||
    url.search ||
    url.hash
  ) {
    throw new ConfigError('LICENSOR_SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://[user:pass@]host[:port]');
  }
  const secure = url.protocol === 'smtps:';
  const port = url.port === '' ? (secure ? 465 : 587) : Number(url.port);
  const user = url.username === '' ? null : decodeURIComponent(url.username);
  const pass = url.password === '' ? null : decodeURIComponent(url.password);
  if ((user === null) !== (pass === null)) throw new ConfigError('LICENSOR_SMTP_URL must carry both a user and a password, or neither');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return {
    smtp: { secure, host, port, user, pass, requireTLS: !secure && user !== null && !isLoopbackHost(host) },
    from,
    fromName,
    trustSenderNames,
    dailyLimit,
  };
}
