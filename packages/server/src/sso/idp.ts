import type net from 'node:net';
import * as oidc from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { AddressRefused, checkTarget } from '../webhooks/address.js';

/** DESIGN.md 21: every request to an identity provider. */
const TIMEOUT_MS = 5_000;
const SETTING = 'LICENSOR_SSO_ALLOW_NETWORKS';
/** Discovery and keys are kept at most this long per instance, keyed by the configuration's version. */
const CACHE_MS = 5 * 60_000;

export type ProblemCode = 'DISCOVERY_FAILED' | 'ISSUER_MISMATCH' | 'INSECURE_URL' | 'JWKS_FAILED' | 'NO_SIGNING_KEYS' | 'NO_S256' | 'SCOPE_NOT_SUPPORTED';

export interface Problem {
  code: ProblemCode;
  severity: 'error' | 'warning';
  message: string;
}

/** An IdP request refused, failed or answered wrongly: its code and a message in our words (never the IdP's). */
export class IdpProblem extends Error {
  constructor(
    readonly code: ProblemCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A fetch for openid-client (its `customFetch`) that judges the address of every request as
 * webhooks do (section 15's ranges, widened only by LICENSOR_SSO_ALLOW_NETWORKS), connects to
 * the address it judged, follows no redirect and gives up after five seconds.
 */
export function idpFetch(allowed: net.BlockList): oidc.CustomFetch {
  return async (url, options) => {
    let target: Awaited<ReturnType<typeof checkTarget>>;
    try {
      target = await checkTarget(url, allowed, SETTING);
    } catch (err) {
      if (err instanceof AddressRefused)
        throw new IdpProblem('INSECURE_URL', `the identity provider's address ${new URL(url).origin} is refused: ${err.message}`);
      throw err;
    }
    const { address, family } = target;
    const dispatcher = new Agent({
      connect: {
        lookup: ((_host: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) =>
          opts.all ? callback(null, [{ address, family }]) : callback(null, address, family)) as never,
      },
    });
    try {
      const response = await undiciFetch(url, {
        method: options.method,
        headers: options.headers as never,
        body: options.body as never,
        redirect: 'manual',
        signal: AbortSignal.timeout(TIMEOUT_MS),
        dispatcher,
      });
      // The body is read before the agent closes; openid-client reads a Response of its own kind.
      const body = await response.arrayBuffer();
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers as never });
    } finally {
      void dispatcher.close();
    }
  };
}

/** The issuer's metadata, from `{issuer}/.well-known/openid-configuration`, whose `issuer` must be ours with or without a trailing `/`. */
export async function discover(issuer: string, fetcher: oidc.CustomFetch): Promise<oidc.ServerMetadata> {
  let document: unknown;
  try {
    const response = await fetcher(`${issuer}/.well-known/openid-configuration`, {
      method: 'GET',
      headers: { accept: 'application/json' },
      body: undefined,
      redirect: 'manual',
      signal: undefined,
    } as never);
    if (response.status !== 200) throw new IdpProblem('DISCOVERY_FAILED', `the discovery document answered HTTP ${response.status}`);
    document = await response.json();
  } catch (err) {
    if (err instanceof IdpProblem) throw err;
    throw new IdpProblem('DISCOVERY_FAILED', 'the discovery document could not be fetched or is not JSON');
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    throw new IdpProblem('DISCOVERY_FAILED', 'the discovery document is not a JSON object');
  const metadata = document as oidc.ServerMetadata;
  if (typeof metadata.issuer !== 'string' || metadata.issuer.replace(/\/$/, '') !== issuer) {
    throw new IdpProblem('ISSUER_MISMATCH', `the discovery document names another issuer than ${issuer}`);
  }
  if (typeof metadata.authorization_endpoint !== 'string' || typeof metadata.token_endpoint !== 'string' || typeof metadata.jwks_uri !== 'string') {
    throw new IdpProblem('DISCOVERY_FAILED', 'the discovery document lacks an authorization, token or JWKS endpoint');
  }
  return metadata;
}

/** The number of signature keys the JWKS holds. */
async function signingKeyCount(jwksUri: string, fetcher: oidc.CustomFetch): Promise<number> {
  let keys: unknown;
  try {
    const response = await fetcher(jwksUri, { method: 'GET', headers: { accept: 'application/json' }, body: undefined } as never);
    if (response.status !== 200) throw new IdpProblem('JWKS_FAILED', `the JWKS answered HTTP ${response.status}`);
    keys = ((await response.json()) as { keys?: unknown }).keys;
  } catch (err) {
    if (err instanceof IdpProblem) throw err;
    throw new IdpProblem('JWKS_FAILED', 'the JWKS could not be fetched or is not JSON');
  }
  if (!Array.isArray(keys)) throw new IdpProblem('JWKS_FAILED', 'the JWKS holds no "keys" list');
  return keys.filter(
    (k) => k && typeof k === 'object' && ['RSA', 'EC', 'OKP'].includes((k as { kty?: string }).kty ?? '') && (k as { use?: string }).use !== 'enc',
  ).length;
}

export interface TestResult {
  ok: boolean;
  issuer: string | null;
  authorizationEndpoint: string | null;
  tokenEndpoint: string | null;
  userinfoEndpoint: string | null;
  jwksUri: string | null;
  signingKeys: number | null;
  idTokenAlgorithms: string[] | null;
  pkceS256: boolean | null;
  scopesSupported: string[] | null;
  problems: Problem[];
}

const strings = (value: unknown) => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : null);

/** DESIGN.md 21's `test`: discovery and the JWKS, uncached; every problem found, errors first. */
export async function testConnection(issuer: string, scopes: string[], allowed: net.BlockList): Promise<TestResult> {
  const fetcher = idpFetch(allowed);
  const result: TestResult = {
    ok: false,
    issuer: null,
    authorizationEndpoint: null,
    tokenEndpoint: null,
    userinfoEndpoint: null,
    jwksUri: null,
    signingKeys: null,
    idTokenAlgorithms: null,
    pkceS256: null,
    scopesSupported: null,
    problems: [],
  };
  const problem = (err: unknown) => {
    if (!(err instanceof IdpProblem)) throw err;
    result.problems.push({ code: err.code, severity: 'error', message: err.message });
  };
  let metadata: oidc.ServerMetadata;
  try {
    metadata = await discover(issuer, fetcher);
  } catch (err) {
    problem(err);
    return result;
  }
  result.issuer = metadata.issuer;
  result.authorizationEndpoint = metadata.authorization_endpoint ?? null;
  result.tokenEndpoint = metadata.token_endpoint ?? null;
  result.userinfoEndpoint = metadata.userinfo_endpoint ?? null;
  result.jwksUri = metadata.jwks_uri ?? null;
  result.idTokenAlgorithms = strings(metadata.id_token_signing_alg_values_supported);
  result.scopesSupported = strings(metadata.scopes_supported);
  const methods = strings(metadata.code_challenge_methods_supported);
  result.pkceS256 = methods === null ? null : methods.includes('S256');
  try {
    result.signingKeys = await signingKeyCount(metadata.jwks_uri!, fetcher);
    if (result.signingKeys === 0) throw new IdpProblem('NO_SIGNING_KEYS', 'the JWKS holds no signature key');
  } catch (err) {
    problem(err);
  }
  if (result.pkceS256 === false) result.problems.push({ code: 'NO_S256', severity: 'error', message: 'the identity provider does not offer PKCE with S256' });
  const unsupported = result.scopesSupported === null ? [] : scopes.filter((s) => !result.scopesSupported!.includes(s));
  if (unsupported.length > 0)
    result.problems.push({
      code: 'SCOPE_NOT_SUPPORTED',
      severity: 'warning',
      message: `the identity provider does not list the scopes ${unsupported.join(', ')}`,
    });
  result.ok = !result.problems.some((p) => p.severity === 'error');
  return result;
}

export interface ClientSettings {
  orgId: number;
  version: number;
  issuer: string;
  clientId: string;
  clientSecret: string;
}

const discovered = new Map<number, { version: number; at: number; metadata: oidc.ServerMetadata }>();

/**
 * openid-client's configuration for an organisation's IdP: its discovery cached five minutes per
 * instance and configuration version; ID-token signatures checked against the JWKS
 * (`enableNonRepudiationChecks`); `client_secret_basic` unless the IdP offers only `_post`.
 * `seen` hears the status of every answer the IdP gives this configuration's requests.
 */
export async function clientFor(
  settings: ClientSettings,
  allowed: net.BlockList,
  now: number,
  seen?: (url: string, status: number) => void,
): Promise<oidc.Configuration> {
  const plain = idpFetch(allowed);
  const fetcher: oidc.CustomFetch = async (url, options) => {
    const response = await plain(url, options);
    seen?.(url, response.status);
    return response;
  };
  let kept = discovered.get(settings.orgId);
  if (!kept || kept.version !== settings.version || now - kept.at >= CACHE_MS) {
    kept = { version: settings.version, at: now, metadata: await discover(settings.issuer, plain) };
    discovered.set(settings.orgId, kept);
  }
  const { metadata } = kept;
  const methods = strings(metadata.token_endpoint_auth_methods_supported);
  const auth =
    methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
      ? oidc.ClientSecretPost(settings.clientSecret)
      : oidc.ClientSecretBasic(settings.clientSecret);
  const config = new oidc.Configuration(metadata, settings.clientId, {}, auth);
  config[oidc.customFetch] = fetcher;
  config.timeout = TIMEOUT_MS / 1000;
  // Our fetch judges every address; http:// reaches only the allowed ranges.
  oidc.allowInsecureRequests(config);
  oidc.enableNonRepudiationChecks(config);
  return config;
}

/** Forgets an organisation's cached client (its configuration changed or was removed). */
export function forgetClient(orgId: number): void {
  discovered.delete(orgId);
}

/** The IdPProblem behind an error openid-client wrapped, if one is. */
export function idpProblemIn(err: unknown): IdpProblem | null {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) if (e instanceof IdpProblem) return e;
  return null;
}
