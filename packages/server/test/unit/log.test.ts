import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { prettyLines } from '../../src/log.js';

/** A logger writing through `prettyLines`, and what it wrote. */
function pretty() {
  const written: string[] = [];
  return {
    log: pino(
      { level: 'info' },
      prettyLines((text) => void written.push(text)),
    ),
    written,
  };
}
const TIME = /^\d\d:\d\d:\d\d /;

describe('LOG_FORMAT=pretty', () => {
  it('writes each request as one short line when it completes, whichever order requests end in', () => {
    const { log, written } = pretty();
    const first = log.child({ reqId: 'req-1' });
    const second = log.child({ reqId: 'req-2' });
    first.info({ req: { method: 'POST', url: '/o/default/api/licenses', host: 'localhost', remoteAddress: '127.0.0.1' } }, 'incoming request');
    second.info({ req: { method: 'GET', url: '/healthz' } }, 'incoming request');
    expect(written).toEqual([]);
    second.info({ res: { statusCode: 200 }, responseTime: 0.4 }, 'request completed');
    first.info({ res: { statusCode: 201 }, responseTime: 14.2 }, 'request completed');
    expect(written.map((line) => line.replace(TIME, ''))).toEqual(['GET /healthz 200 0 ms\n', 'POST /o/default/api/licenses 201 14 ms\n']);
    expect(written.every((line) => TIME.test(line))).toBe(true);
  });

  it('writes other entries as level, message and their own fields, an error with its stack', () => {
    const { log, written } = pretty();
    log.child({ role: 'primary' }).warn({ worker: 42 }, 'worker died: starting another');
    log.error({ err: new Error('disk full') }, 'unexpected fault');
    expect(written[0]!.replace(TIME, '')).toBe('WARN  worker died: starting another worker=42\n');
    expect(written[1]!.replace(TIME, '')).toMatch(/^ERROR unexpected fault\nError: disk full\n {4}at /);
  });
});
