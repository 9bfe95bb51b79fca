import type { IncomingMessage, ServerResponse } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import fastJsonStringify from 'fast-json-stringify';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { ApiError, notFound } from '../core/errors.js';
import { failureOf } from '../http/failures.js';
import type { ObserveRequest } from '../http/metrics.js';
import { schemaErrorMessage, validatorCompiler } from '../http/validation.js';
import type { OrganisationCache } from '../orgs/repo.js';
import type { Asked, CheckGate } from './gate.js';
import { CHECK_ROUTES, type CheckRoute } from './schemas.js';

/**
 * The check API's four routes in their common shape only: segments of plain characters within the
 * schema's 64 (so already valid, storable path parameters, never percent-decoded), no query
 * string. Every other request, these routes' unusual ones included, goes to Fastify.
 */
const PATH = new RegExp(`^/o/([A-Za-z0-9_-]{1,64})/api/public/license/([A-Za-z0-9_-]{1,64})/(${Object.keys(CHECK_ROUTES).join('|')})$`);
/** The content types Fastify's JSON parser takes as they are; others (a 415 among them) go to Fastify. */
const JSON_TYPES = new Set(['application/json', 'application/json; charset=utf-8']);

const ROUTES = Object.entries(CHECK_ROUTES) as Array<[CheckRoute, (typeof CHECK_ROUTES)[CheckRoute]]>;

export interface LeanDeps {
  gates: Record<CheckRoute, CheckGate>;
  database: Database;
  organisations: OrganisationCache;
  trustProxy: boolean;
  bodyLimit: number;
  /** The app's JSON body parser (app.ts): undefined for an empty body, a 400 for malformed JSON. */
  parseJsonBody: (text: string) => unknown;
  genReqId: () => string;
  log: Logger;
  observe: ObserveRequest;
}

/**
 * The licence check API served on `node:http` ahead of Fastify (docs/decisions.md, "Licence check
 * API"): the same gate and work as its Fastify routes (gate.ts), with only the plumbing Fastify
 * would run for them, in its order and with its answers byte for byte: the organisation (404),
 * the gate's refusals, the body (413, malformed JSON), its validation (400, Fastify's validator
 * and messages), then the work; answers serialised from the routes' own response schemas, the
 * API's headers, the error handler's answers and log lines (http/failures.ts), the same metrics,
 * and Fastify's request log lines when `info` is on. Returns false for a request it does not take.
 */
export function leanCheckHandler(deps: LeanDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const validators = Object.fromEntries(
    ROUTES.map(([route, { body }]) => [
      route,
      validatorCompiler({ schema: body, method: 'POST', url: '', httpPart: 'body' }) as ((body: unknown) => boolean) & { errors?: unknown[] | null },
    ]),
  ) as Record<CheckRoute, ((body: unknown) => boolean) & { errors?: unknown[] | null }>;
  // Fastify serialises a route's answer with fast-json-stringify from its response schema: in the schema's property order, unknown properties dropped.
  const serializers = Object.fromEntries(ROUTES.map(([route, { answer }]) => [route, fastJsonStringify(answer)])) as Record<
    CheckRoute,
    (value: unknown) => string
  >;
  const trustAll = () => true;
  // Fastify's disabled logger (`logger: false`, the OpenAPI build) has no isLevelEnabled.
  const logRequests = deps.log.isLevelEnabled?.('info') === true;

  const ipOf = (req: IncomingMessage) => {
    if (!deps.trustProxy) return req.socket.remoteAddress!;
    const addresses = proxyAddr.all(req, trustAll);
    return addresses[addresses.length - 1]!;
  };

  /** What the `req` serializers read of a Fastify request (app.ts's, or Fastify's own), for the `incoming request` line. */
  const loggedRequest = (req: IncomingMessage, ip: string) => {
    const forwarded = req.headers['x-forwarded-host'] as string | undefined;
    const host = deps.trustProxy && forwarded ? forwarded.slice(forwarded.lastIndexOf(',') + 1).trim() : (req.headers.host ?? '');
    const hostname = host[0] === '[' ? host.slice(0, host.indexOf(']') + 1) : host.split(':', 1)[0]!;
    return { method: req.method, url: req.url, headers: req.headers, host, hostname, ip, socket: req.socket };
  };

  /** The body as Fastify's raw-body reader takes it: refused past the limit, decoded once as UTF-8. */
  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const declared = Number(req.headers['content-length']);
      if (declared > deps.bodyLimit) return reject(new ApiError(413, 'request body is too large'));
      const chunks: Buffer[] = [];
      let received = 0;
      const onData = (chunk: Buffer) => {
        received += chunk.length;
        if (received > deps.bodyLimit) {
          done();
          reject(new ApiError(413, 'request body is too large'));
          return;
        }
        chunks.push(chunk);
      };
      const onEnd = (err?: Error & { statusCode?: number }) => {
        done();
        if (err) return reject(Object.assign(err, { statusCode: err.statusCode && err.statusCode >= 400 ? err.statusCode : 400 }));
        if (!Number.isNaN(declared) && received !== declared) return reject(new ApiError(400, 'request body does not match its Content-Length'));
        resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, received).toString('utf8'));
      };
      const done = () => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onEnd);
      };
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('error', onEnd);
      req.resume();
    });

  const serve = async (req: IncomingMessage, res: ServerResponse, route: CheckRoute, slug: string, checkId: string) => {
    const started = performance.now();
    const id = deps.genReqId();
    let logger: Logger | undefined;
    const log = () => (logger ??= deps.log.child({ reqId: id }));
    const ip = ipOf(req);
    if (logRequests) log().info({ req: loggedRequest(req, ip) }, 'incoming request');
    let status = 200;
    let payload: string;
    let headers: Record<string, string> = {};
    let closeConnection = false;
    try {
      const org = await deps.organisations.find(deps.database.db, slug);
      if (!org) throw notFound(`no organisation "${slug}"`);
      const asked: Asked = { org, checkId, ip, authorization: req.headers.authorization, contentType: req.headers['content-type'] };
      const gate = deps.gates[route];
      const scope = await gate.admit(asked);
      let body: unknown;
      try {
        body = deps.parseJsonBody(await readBody(req));
      } catch (err) {
        // As Fastify does: the client may still be sending the body.
        closeConnection = true;
        throw err;
      }
      const validate = validators[route];
      if (!validate(body)) throw new ApiError(400, schemaErrorMessage(validate.errors as never, 'body').message);
      payload = serializers[route](await gate.serve(asked, scope, body as never));
    } catch (err) {
      const failure = failureOf(err as Error, { id, url: req.url! }, log);
      status = failure.status;
      headers = failure.headers;
      // Fastify serialises these with the Error schema where the route declares the status, else JSON.stringify: the same bytes for `{ error, reason? }`.
      payload = JSON.stringify(failure.body);
    }
    res.writeHead(status, {
      ...headers,
      'content-type': 'application/json; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(payload),
      ...(closeConnection ? { connection: 'close' } : {}),
    });
    res.end(payload);
    const elapsed = performance.now() - started;
    deps.observe('POST', `/o/:slug/api/public/license/:checkId/${route}`, status, elapsed / 1000);
    if (logRequests) log().info({ res: { statusCode: status }, responseTime: elapsed }, 'request completed');
  };

  return (req, res) => {
    if (req.method !== 'POST' || !JSON_TYPES.has(req.headers['content-type'] ?? '')) return false;
    const match = PATH.exec(req.url!);
    if (!match) return false;
    // serve answers every failure itself; this only keeps a fault in answering from going unseen.
    serve(req, res, match[3] as CheckRoute, match[1]!, match[2]!).catch((err: unknown) => deps.log.error({ err }, 'unexpected fault'));
    return true;
  };
}
