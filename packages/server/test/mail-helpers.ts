import { SMTPServer } from 'smtp-server';

/** One message the loopback relay accepted: its envelope and raw MIME. */
export interface Received {
  from: string;
  to: string[];
  raw: string;
}

/**
 * An SMTP relay on loopback for the mail tests: `ok` accepts every message, `down` refuses every
 * connection with a 421 (a relay that is away), `reject` answers the recipient with a 550.
 */
export async function startSmtp(options: { password?: string } = {}) {
  const received: Received[] = [];
  let mode: 'ok' | 'down' | 'reject' = 'ok';
  const fail = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });
  const server = new SMTPServer({
    authOptional: options.password === undefined,
    allowInsecureAuth: true,
    disabledCommands: options.password === undefined ? ['STARTTLS', 'AUTH'] : ['STARTTLS'],
    onAuth(auth, _session, callback) {
      if (auth.password === options.password) callback(null, { user: auth.username });
      else callback(fail(535, 'authentication failed'));
    },
    logger: false,
    onConnect(_session, callback) {
      callback(mode === 'down' ? fail(421, 'relay away for maintenance') : undefined);
    },
    onRcptTo(_address, _session, callback) {
      callback(mode === 'reject' ? fail(550, 'no such mailbox here') : undefined);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    received,
    env: { LICENSOR_SMTP_URL: `smtp://127.0.0.1:${port}`, LICENSOR_MAIL_FROM: 'licences@vendor.example' },
    setMode(next: typeof mode) {
      mode = next;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface Part {
  headers: Record<string, string>;
  body: string;
  parts: Part[];
}

/** A plain MIME reading, enough to check structure: headers unfolded and lower-cased, multiparts split on their boundary. */
export function parseMime(raw: string): Part {
  const split = raw.indexOf('\r\n\r\n');
  const head = split === -1 ? raw : raw.slice(0, split);
  const body = split === -1 ? '' : raw.slice(split + 4);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const boundary = /boundary="?([^";]+)"?/i.exec(headers['content-type'] ?? '')?.[1];
  const parts =
    boundary && /^multipart\//i.test(headers['content-type'] ?? '')
      ? body
          .split(`--${boundary}`)
          .slice(1)
          .filter((p) => !p.startsWith('--'))
          .map((p) => parseMime(p.replace(/^\r\n/, '').replace(/\r\n$/, '')))
      : [];
  return { headers, body, parts };
}

/** A part's body decoded from its transfer encoding. */
export function decoded(part: Part): string {
  const encoding = (part.headers['content-transfer-encoding'] ?? '').toLowerCase();
  if (encoding === 'base64') return Buffer.from(part.body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding === 'quoted-printable')
    return Buffer.from(
      part.body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
      'latin1',
    ).toString('utf8');
  return part.body;
}
