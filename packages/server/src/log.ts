import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** What every entry (or every line of the primary process) carries, or what the request line says itself: not repeated as `key=value`. */
const SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'role', 'msg', 'reqId', 'req', 'res', 'responseTime', 'err']);
/** Requests whose completion has not been seen (an aborted one never is): the oldest go beyond this. */
const MAX_PENDING = 10_000;

interface Entry {
  level: number;
  time: number;
  msg?: string;
  reqId?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
  err?: { message?: string; stack?: string };
  [key: string]: unknown;
}

const clock = (time: number) => new Date(time).toTimeString().slice(0, 8);

/**
 * `LOG_FORMAT=pretty` (DESIGN.md 1): pino's JSON lines made short for a person at a terminal.
 * A request is one line, `10:04:31 POST /o/default/api/licenses 201 14 ms`, written when it
 * completes (Fastify's and the check API's lean handler's "incoming request" line only
 * remembers its method and path), so a start-up banner does not scroll away; every other entry is
 * `10:04:31 WARN  message key=value`, with an error's stack below it.
 */
export function prettyLines(write: (text: string) => void): DestinationStream {
  const pending = new Map<string, string>();
  return {
    write(line: string) {
      let entry: Entry;
      try {
        entry = JSON.parse(line) as Entry;
      } catch {
        return write(line);
      }
      const at = clock(entry.time);
      if (entry.msg === 'incoming request' && entry.reqId !== undefined) {
        pending.set(entry.reqId, `${entry.req?.method ?? ''} ${entry.req?.url ?? ''}`);
        if (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value!);
        return;
      }
      if (entry.msg === 'request completed' && entry.reqId !== undefined) {
        const request = pending.get(entry.reqId) ?? entry.reqId;
        pending.delete(entry.reqId);
        return write(`${at} ${request} ${entry.res?.statusCode ?? ''} ${Math.round(entry.responseTime ?? 0)} ms\n`);
      }
      const fields = Object.entries(entry)
        .filter(([key]) => !SHOWN.has(key))
        .map(([key, value]) => ` ${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
        .join('');
      const stack = entry.err?.stack ? `\n${entry.err.stack}` : entry.err?.message ? ` (${entry.err.message})` : '';
      write(`${at} ${(LEVELS[entry.level] ?? String(entry.level)).padEnd(5)} ${entry.msg ?? ''}${fields}${stack}\n`);
    },
  };
}

/**
 * Where the service's log goes, on standard output (1) or error (2): `prettyLines`, or for JSON
 * lines pino's own destination (undefined: pino's default, standard output).
 */
export function logDestination(config: Pick<Config, 'logFormat'>, fd: 1 | 2 = 1): DestinationStream | undefined {
  if (config.logFormat === 'pretty') return prettyLines((text) => void (fd === 1 ? process.stdout : process.stderr).write(text));
  return fd === 2 ? pino.destination(2) : undefined;
}

/** A logger outside the app (the primary process, an upgrade's backup), in the configured format. */
export function processLogger(config: Pick<Config, 'logLevel' | 'logFormat'>, fd: 1 | 2 = 1): Logger {
  const destination = logDestination(config, fd);
  return destination ? pino({ level: config.logLevel }, destination) : pino({ level: config.logLevel });
}
