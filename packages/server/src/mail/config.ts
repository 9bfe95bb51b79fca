import net from 'node:net';
import { ConfigError } from '../config.js';

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

export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare.toLowerCase() === 'localhost') return true;
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  return bare === '::1';
}

const DISABLED: MailConfig = { smtp: null, from: null, fromName: 'Licensor', trustSenderNames: false, dailyLimit: 500 };

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
  if (rawUrl === '') return { ...DISABLED, fromName, trustSenderNames, dailyLimit };

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

let current: MailConfig = DISABLED;

/** The app (app.ts) states the deployment's mail configuration once; queueing and sending read it. */
export function useMailConfig(config: MailConfig): void {
  current = config;
}

export const mailConfig = (): MailConfig => current;
export const mailConfigured = (config: MailConfig = current): boolean => config.smtp !== null && config.from !== null;
