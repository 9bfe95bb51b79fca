// A stand-in for the check API: answers signed with test keys, and whatever forgery a test asks for.
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import {
  buildFingerprint,
  fpDigest,
  parseLicence,
  receiptTagOf,
  signBytes,
  signLicence,
  signReceipt,
  usageReceiptMessage,
  type ClaimsInput,
} from '@licensor/protocol';
import type { UsageBalance } from '@licensor/sdk';
import { LicenceClient, memoryStore, type LicenceClientOptions } from '@licensor/sdk';

export const keys = generateKeyPairSync('ed25519');
export const otherKeys = generateKeyPairSync('ed25519');
export const publicKeyPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();

export const myFingerprint = buildFingerprint({ machine: 'm-1', host: 'h-1', mac: 'a-1', cpu: 'c-1', disk: 'd-1' });
export const otherFingerprint = buildFingerprint({ machine: 'm-2', host: 'h-2', mac: 'a-2', cpu: 'c-2', disk: 'd-2' });

export const T0 = Date.UTC(2026, 10, 22, 7, 0, 0);
export const MAX_SECONDS = 86_400;
export const checkToken = `svcc_abc123def456_${'a'.repeat(64)}`;

/** An ONLINE licence valid around T0 with a one-day offline window. */
export function onlineLicence(overrides: Partial<ClaimsInput> = {}, privateKey: KeyObject = keys.privateKey): string {
  const iat = T0 / 1000 - 86_400 * 30;
  return signLicence(
    { lid: randomUUID(), prd: 'cad', org: 'acme', typ: 'ONLINE', iat, exp: iat + 86_400 * 365, grace: 7, mm: 1, chk: 3600, max: MAX_SECONDS, ...overrides },
    privateKey,
  );
}

export interface SentRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Record<string, any>;
}

export interface Answer {
  status: number;
  /** JSON, or the raw text, bytes or stream to send. */
  body: unknown;
}

/** A floating licence (v 5) valid around T0: `lse` 900 s unless overridden, `max` one day. */
export const floatingLicence = (overrides: Partial<ClaimsInput> = {}, privateKey?: KeyObject) =>
  onlineLicence({ mm: 5, chk: 300, max: MAX_SECONDS, lse: 900, ...overrides }, privateKey);

/** What the service would sign for this request (SVCR2 for a v 5 licence); `tweak` forges it. */
export function genuineAnswer(
  request: SentRequest,
  signed: { status?: string; boundAt?: string; checkedAt?: string; leaseEndsAt?: string },
  tweak: { lid?: string; nonce?: string; fingerprint?: string; key?: KeyObject; tag?: 'SVCR1' | 'SVCR2' } = {},
): Record<string, unknown> {
  const claims = parseLicence(request.body.license!).claims;
  const lid = tweak.lid ?? claims.lid;
  const tag = tweak.tag ?? receiptTagOf(claims);
  const fields = {
    lid,
    status: signed.status ?? '',
    nonce: tweak.nonce ?? request.body.nonce,
    checkedAt: signed.checkedAt ?? new Date(T0).toISOString(),
    boundAt: signed.boundAt ?? '',
    fpDigest: fpDigest(tweak.fingerprint ?? request.body.fingerprint!),
    ...(tag === 'SVCR2' ? { leaseEndsAt: signed.leaseEndsAt ?? '' } : {}),
  };
  const grants = (fields.status === 'ACTIVE' || fields.status === 'GRACE') && fields.boundAt !== '';
  const answer: Record<string, unknown> = {
    valid: grants,
    lid,
    checkedAt: fields.checkedAt,
    serverTime: fields.checkedAt,
    nonce: fields.nonce,
    receipt: signReceipt(fields, tweak.key ?? keys.privateKey, tag),
  };
  if (fields.status !== '') answer.status = fields.status;
  if (fields.boundAt !== '') answer.boundAt = fields.boundAt;
  if (signed.leaseEndsAt) answer.leaseEndsAt = signed.leaseEndsAt;
  return answer;
}

/**
 * A usage answer as DESIGN.md 19 has the service sign it (SVCU1): each sent event's result from
 * `result` (ACCEPTED unless it says otherwise), the meters given; `tweak` forges it.
 */
export function usageAnswer(
  request: SentRequest,
  signed: {
    status?: string;
    boundAt?: string;
    checkedAt?: string;
    meters?: Array<Omit<UsageBalance, 'pending'>>;
    result?: (event: { id: string; meter: string; amount: number }) => string;
  },
  tweak: { nonce?: string; key?: KeyObject; ids?: string[] } = {},
): Record<string, unknown> {
  const claims = parseLicence(request.body.license).claims;
  const sent = request.body.events as Array<{ id: string; meter: string; amount: number }>;
  const events = sent.map((event, i) => ({ id: tweak.ids?.[i] ?? event.id, result: signed.result?.(event) ?? 'ACCEPTED' }));
  const fields = {
    lid: claims.lid,
    status: signed.status ?? '',
    nonce: tweak.nonce ?? request.body.nonce,
    checkedAt: signed.checkedAt ?? new Date(T0).toISOString(),
    boundAt: signed.boundAt ?? '',
    fpDigest: fpDigest(request.body.fingerprint),
    events,
    meters: signed.meters ?? [],
  };
  const answer: Record<string, unknown> = {
    lid: claims.lid,
    valid: (fields.status === 'ACTIVE' || fields.status === 'GRACE') && fields.boundAt !== '',
    nonce: fields.nonce,
    checkedAt: fields.checkedAt,
    serverTime: fields.checkedAt,
    events: events.map((event) => ({ ...event, duplicate: false })),
    meters: fields.meters.map((meter) => ({ label: meter.key, period: 'MONTH', periodStart: '2026-11-01T00:00:00.000Z', ...meter })),
    receipt: signBytes(tweak.key ?? keys.privateKey, usageReceiptMessage(fields)).toString('base64url'),
  };
  if (fields.status !== '') answer.status = fields.status;
  if (fields.boundAt !== '') answer.boundAt = fields.boundAt;
  return answer;
}

export const licensed = (checkedAt = new Date(T0).toISOString()) => ({ status: 'ACTIVE', boundAt: '2026-01-05T09:30:12.345Z', checkedAt });

/** A floating licence's lease taken at `checkedAt`, ending `seconds` later. */
export const leased = (checkedAt = T0, seconds = 900) => ({
  ...licensed(new Date(checkedAt).toISOString()),
  leaseEndsAt: new Date(checkedAt + seconds * 1000).toISOString(),
});

/** A fetchImpl that records requests and answers with `respond`. */
export function fakeFetch(respond: (request: SentRequest) => Answer | Promise<Answer>) {
  const requests: SentRequest[] = [];
  const fetchImpl = (async (url: string | URL | Request, init?: RequestInit) => {
    const request: SentRequest = {
      url: String(url),
      method: init?.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      // A GET (a feed, a file) has no body.
      body: init?.body === undefined ? {} : JSON.parse(String(init.body)),
    };
    requests.push(request);
    const { status, body } = await respond(request);
    const raw = typeof body === 'string' || body instanceof Uint8Array || body instanceof ReadableStream;
    return new Response(raw ? (body as string | Uint8Array<ArrayBuffer> | ReadableStream) : JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
  return { fetchImpl, requests };
}

/**
 * A client of this machine (an ONLINE licence unless options say otherwise) against the fake
 * service, on a clock the test moves, its store in memory unless given one.
 */
export function testClient(respond: (request: SentRequest) => Answer | Promise<Answer>, options: Partial<LicenceClientOptions> = {}) {
  const { fetchImpl, requests } = fakeFetch(respond);
  const clock = { now: T0 };
  const store = options.store ?? memoryStore();
  const client = new LicenceClient({
    baseUrl: 'https://licensing.example.com/',
    slug: 'acme',
    checkId: 'abc123def456',
    checkToken,
    publicKeyPem,
    licence: onlineLicence(),
    fingerprint: myFingerprint,
    fetchImpl,
    store,
    clock: () => clock.now,
    timeoutMs: 200,
    ...options,
  });
  return { client, requests, clock, store };
}
