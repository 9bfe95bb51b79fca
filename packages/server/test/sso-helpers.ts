/// <reference path="./oidc-provider.d.ts" />
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';
import type { Harness, Response } from './harness.js';

export const CLIENT_ID = 'licensor-console';
export const CLIENT_SECRET = 'a client secret of the test identity provider';

export interface Account {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
}

/** What the forging token endpoint signs: the claims an honest one would, changed by the test. */
export type Forge = (claims: Record<string, unknown>) => { claims: Record<string, unknown>; alg?: string };

export interface TestIdp {
  issuer: string;
  /** Who signs in at the next interaction. */
  account: Account;
  /** While set, the token endpoint answers with an ID token of the test's making, signed with the IdP's key. */
  forge: Forge | null;
  close(): Promise<void>;
}

/**
 * oidc-provider on loopback, a real identity provider: a confidential client with the service's
 * redirect URI, the claims `email`, `profile` and `groups` released through UserInfo (as most
 * IdPs do with an access token), and an interaction that signs in `account` and consents at once.
 */
export async function startIdp(redirectUri: string): Promise<TestIdp> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const idp: TestIdp = { issuer, account: { sub: 'nobody' }, forge: null, close: async () => void (await new Promise((r) => server.close(r))) };
  const accounts = new Map<string, Account>();
  const provider = new Provider(issuer, {
    clients: [
      { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] },
    ],
    jwks: { keys: [jwk] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    findAccount: (_ctx: unknown, sub: string) => {
      const account = accounts.get(sub);
      return account ? { accountId: sub, claims: () => ({ ...account }) } : undefined;
    },
    features: { devInteractions: { enabled: false } },
    cookies: { keys: ['a cookie key of the test identity provider'] },
  } as never);
  let lastNonce = '';
  const callback = provider.callback();
  server.on('request', async (req, res) => {
    try {
      const url = new URL(req.url!, issuer);
      if (url.pathname === '/auth') lastNonce = url.searchParams.get('nonce') ?? '';
      if (url.pathname.startsWith('/interaction/')) {
        const details = await provider.interactionDetails(req, res);
        if (details.prompt.name === 'login') {
          accounts.set(idp.account.sub, idp.account);
          return void (await provider.interactionFinished(req, res, { login: { accountId: idp.account.sub } }, { mergeWithLastSubmission: false }));
        }
        const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: CLIENT_ID });
        grant.addOIDCScope(String(details.params.scope));
        return void (await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true }));
      }
      if (url.pathname === '/token' && req.method === 'POST' && idp.forge) {
        const now = Math.floor(Date.now() / 1000);
        const { sub, ...claims } = idp.account;
        const forged = idp.forge({ iss: issuer, sub, aud: CLIENT_ID, iat: now, exp: now + 300, nonce: lastNonce, ...claims });
        const alg = forged.alg ?? 'RS256';
        const idToken =
          alg === 'none'
            ? `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(forged.claims)).toString('base64url')}.`
            : await new SignJWT(forged.claims)
                .setProtectedHeader({ alg, kid: 'test-key' })
                .sign(alg.startsWith('HS') ? new TextEncoder().encode(CLIENT_SECRET) : privateKey);
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        return void res.end(JSON.stringify({ access_token: 'forged', token_type: 'Bearer', expires_in: 300, id_token: idToken }));
      }
      callback(req, res);
    } catch (err) {
      res.writeHead(500).end(String(err));
    }
  });
  return idp;
}

/** The configuration a test sets up against the IdP. */
export const ssoSetup = (idp: TestIdp, extra: Record<string, unknown> = {}) => ({
  displayName: 'Test IdP',
  issuer: idp.issuer,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  allowedDomains: ['example.com'],
  ...extra,
});

/**
 * A browser's way there and back: the service's start, the IdP's pages (its cookies kept) up to
 * the redirect back to the callback, which is not yet sent: its query and the `svc_sso` cookie.
 */
export async function throughIdp(
  h: Harness,
  options: { slug?: string; returnTo?: string; ssoCookie?: string } = {},
): Promise<{ start: Response; query: URLSearchParams; path: string; ssoCookie: string }> {
  const slug = options.slug ?? h.slug;
  const start = await startSso(h, {
    slug,
    ...(options.returnTo ? { returnTo: options.returnTo } : {}),
    ...(options.ssoCookie ? { ssoCookie: options.ssoCookie } : {}),
  });
  if (start.statusCode !== 302 || !String(start.headers.location).startsWith('http://127.0.0.1'))
    throw new Error(`start answered ${start.statusCode} ${String(start.headers.location)}`);
  const ssoCookie = start.cookies.find((c) => c.name === 'svc_sso')?.value ?? options.ssoCookie!;
  const back = await followIdp(String(start.headers.location));
  return { start, query: back.searchParams, path: back.pathname, ssoCookie };
}

/** The IdP's pages from its authorization URL (its cookies kept) up to the redirect back to the callback, not yet sent. */
export async function followIdp(authorizationUrl: string): Promise<URL> {
  const jar = new Map<string, string>();
  let location = authorizationUrl;
  for (let hops = 0; hops < 10 && location.startsWith('http://127.0.0.1'); hops++) {
    const answer = await fetch(location, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of answer.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, ...value] = pair!.split('=');
      jar.set(name!.trim(), value.join('='));
    }
    await answer.arrayBuffer();
    location = new URL(answer.headers.get('location') ?? '', location).href;
  }
  const back = new URL(location);
  if (!back.pathname.endsWith('/api/sso/callback')) throw new Error(`the IdP did not send the browser back: ${location}`);
  return back;
}

/**
 * A browser's sign-in: there and back through the IdP, then the service's callback with the
 * `svc_sso` cookie. `changeCallback` alters the callback's query (a tampered `iss`); the answer is
 * the callback's.
 */
export async function signInWithSso(
  h: Harness,
  options: { slug?: string; returnTo?: string; changeCallback?: (query: URLSearchParams) => void; ssoCookie?: string } = {},
): Promise<{ callback: Response; start: Response; query: URLSearchParams; ssoCookie: string }> {
  const { start, query, path, ssoCookie } = await throughIdp(h, options);
  options.changeCallback?.(query);
  const callback = await h.request('GET', `${path}?${query}`, { cookies: { svc_sso: ssoCookie } });
  return { callback, start, query, ssoCookie };
}

/** The service's start, as a browser on `{base}` reaches it. */
export const startSso = (h: Harness, options: { slug?: string; returnTo?: string; ssoCookie?: string; query?: string } = {}) =>
  h.request(
    'GET',
    `/o/${options.slug ?? h.slug}/api/sso/start${options.query ?? (options.returnTo ? `?returnTo=${encodeURIComponent(options.returnTo)}` : '')}`,
    {
      cookies: options.ssoCookie ? { svc_sso: options.ssoCookie } : {},
      headers: { host: new URL(h.config.ssoBase).host },
    },
  );

/** The `ssoError` code a refused callback sends the browser to the sign-in page with. */
export const ssoError = (response: Response) => new URL(String(response.headers.location)).searchParams.get('ssoError');

export const sessionCookie = (response: Response) => response.cookies.find((c) => c.name === 'svc_session')?.value;
