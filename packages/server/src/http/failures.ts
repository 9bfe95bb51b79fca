import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../db/database.js';
import { ApiError } from '../core/errors.js';

function clientMessage(err: { code?: string; message: string }): string {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type: send application/json';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body is too large';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'request body does not match its Content-Length';
    default:
      return err.message;
  }
}

const OUT_OF_RANGE = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

/** What a failed request answers: `{ error }` (and a refusal's `reason`) with its status and headers. */
export interface Failure {
  status: number;
  headers: Record<string, string>;
  body: { error: string } & Record<string, string>;
}

type Fault = Error & { statusCode?: number; code?: string; validation?: unknown; validationContext?: string };

/**
 * The answer to any error a request met, logged when it is the service's fault: the error handler
 * of the app (app.ts) and the check API's lean handler (check/lean.ts) both answer with it. `log`
 * is called only to log, so the lean handler makes its request's logger only then.
 */
export function failureOf(err: Fault, request: { id: string; url: string }, log: () => FastifyBaseLogger): Failure {
  if (err instanceof ApiError) return { status: err.status, headers: err.headers, body: { error: err.message, ...err.extra } };
  if (err.validation) {
    // A path id out of range names a record that cannot exist; a malformed one is still a 400.
    const keyword = (err.validation as Array<{ keyword: string }>)[0]?.keyword ?? '';
    if (err.validationContext === 'params' && OUT_OF_RANGE.has(keyword)) {
      return { status: 404, headers: {}, body: { error: `no such record: ${request.url.split('?')[0]}` } };
    }
    return { status: 400, headers: {}, body: { error: err.message } };
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return { status: err.statusCode, headers: {}, body: { error: clientMessage(err) } };
  }
  if (isDatabaseUnavailable(err)) {
    // DESIGN.md 17: the client tries again in a second, by when the pool may have reconnected.
    log().warn({ code: err.code, reason: err.message }, 'database unavailable');
    return { status: 503, headers: { 'retry-after': '1' }, body: { error: 'database unavailable' } };
  }
  log().error({ err }, 'unexpected fault');
  return { status: 500, headers: {}, body: { error: `internal error (request ${request.id})` } };
}
