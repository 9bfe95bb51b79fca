import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { MailConfig } from '../config.js';

/** What one attempt came to: sent (the 250 after the data), or failed with the reply or socket error; `permanent` for an SMTP 5xx. */
export type SendOutcome = { sent: true } | { sent: false; error: string; permanent: boolean };

/** nodemailer's transport for the configured relay (DESIGN.md 22): TLS from the start for smtps, STARTTLS when offered (required with credentials except on loopback), certificates verified. */
export function smtpTransport(config: MailConfig) {
  const smtp = config.smtp!;
  return nodemailer.createTransport({
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    requireTLS: smtp.requireTLS,
    ...(smtp.user !== null ? { auth: { user: smtp.user, pass: smtp.pass! } } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
    tls: { rejectUnauthorized: true, servername: smtp.host },
    logger: false,
    debug: false,
  });
}

/** An error's words for `lastError`, with the URL's user and password never in them. */
export function describeError(config: MailConfig, err: unknown): string {
  const e = err as { response?: unknown; message?: unknown; code?: unknown };
  let text = typeof e?.response === 'string' && e.response !== '' ? e.response : typeof e?.message === 'string' ? e.message : String(err);
  for (const secret of [config.smtp?.pass, config.smtp?.user]) {
    if (secret) text = text.split(secret).join('[redacted]');
  }
  return text.slice(0, 1000);
}

/** Sends one message, one attempt. */
export async function sendOnce(config: MailConfig, message: Mail.Options): Promise<SendOutcome> {
  const transport = smtpTransport(config);
  try {
    await transport.sendMail(message);
    return { sent: true };
  } catch (err) {
    const code = Number((err as { responseCode?: unknown }).responseCode);
    return { sent: false, error: describeError(config, err), permanent: code >= 500 && code < 600 };
  } finally {
    transport.close();
  }
}

/** From: `"<senderName> via <FROM_NAME>" <FROM>`, or the sender name alone when the deployment trusts them. */
export function fromOf(config: MailConfig, senderName: string): Mail.Address {
  return { name: config.trustSenderNames ? senderName : `${senderName} via ${config.fromName}`, address: config.from! };
}
