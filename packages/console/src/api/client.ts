import createClient, { type Middleware } from 'openapi-fetch';
import type { operations, paths } from './schema';

type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never;
/** The JSON a successful call of `method path` answers, as the OpenAPI document says. */
export type Answer<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: infer R } ? Json<R[keyof R & (200 | 201)]> : never;
/** The query string an operation takes. */
export type Query<O extends keyof operations> = NonNullable<operations[O]['parameters']['query']>;
/** The JSON body an operation takes. */
export type Body<O extends keyof operations> = operations[O] extends { requestBody?: { content: { 'application/json': infer J } } } ? J : never;

/** The organisation a page belongs to: the first segment after `/o/`. */
export function currentSlug(): string {
  return decodeURIComponent(window.location.pathname.split('/')[2] ?? '');
}

/** An answer other than success: the API's own `error` text, shown where it happened. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A refusal's machine-readable reason, where the API gives one (`{ error, reason }`). */
    readonly reason?: string,
    /** Seconds until asking again can work, from `Retry-After` (a sign-in lockout). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** A message that begins with a body field as the API names it: "Seats (params.seats): …". */
const FIELD_NAMED = /^([^():]*?) \(([A-Za-z0-9_.[\]-]+)\)(?=:| is | must )/;

/** The body field a refusal is about, as the API spells it (`params.seats`, `fingerprints[0]`), to show the message beside it. */
export function fieldOf(error: unknown): string | null {
  return error instanceof ApiError ? (FIELD_NAMED.exec(error.message)?.[2] ?? null) : null;
}

/** A message as a person reads it: the field in words, without the API's spelling beside them. */
export const inWords = (message: string) => message.replace(FIELD_NAMED, '$1');

/** What a refusal says about its field, for showing beside that field: "Seats (params.seats): must be …" → "Must be …". */
export function besideField(message: string): string {
  const rest = message.replace(/^[^():]*? \([A-Za-z0-9_.[\]-]+\):\s*/, '');
  return `${rest.charAt(0).toUpperCase()}${rest.slice(1)}`;
}

/**
 * Where a 401 sends the person: the sign-in page, and back to where they were afterwards.
 * `ended` says on the sign-in page that their session ended, when this browser had one.
 */
export function signInOn401(signInPath: () => string): Middleware {
  return {
    onResponse({ response, request }) {
      const path = window.location.pathname;
      // The customer portal has no sign-in page: its pages say when a session has ended.
      if (response.status === 401 && !request.url.endsWith('/auth/login') && !path.endsWith('/sign-in') && !request.url.includes('/api/portal/')) {
        const signIn = signInPath();
        const ended = sessionMarks.has(signIn) ? '&ended=1' : '';
        sessionMarks.clear(signIn);
        window.location.assign(`${signIn}?next=${encodeURIComponent(path + window.location.search)}${ended}`);
      }
      return response;
    },
  };
}

/** Which sign-in pages this browser has signed in through and not signed out of (so a 401 means the session ended). */
export const sessionMarks = {
  set: (signIn: string) => localStorage.setItem(`licensor.session:${signIn}`, '1'),
  has: (signIn: string) => localStorage.getItem(`licensor.session:${signIn}`) !== null,
  clear: (signIn: string) => localStorage.removeItem(`licensor.session:${signIn}`),
};

/** An organisation's sign-in page. */
export const signInPath = (slug = currentSlug()) => `/o/${encodeURIComponent(slug)}/sign-in`;

const clients = new Map<string, ReturnType<typeof createClient<paths>>>();

/** The typed client for this organisation's API (the session cookie is sent by the browser). */
export function api(slug = currentSlug()) {
  let client = clients.get(slug);
  if (!client) {
    client = createClient<paths>({ baseUrl: `/o/${encodeURIComponent(slug)}/api`, credentials: 'same-origin' });
    client.use(signInOn401(() => signInPath(slug)));
    clients.set(slug, client);
  }
  return client;
}

/** The data of a successful answer, or an ApiError carrying the API's `error` text. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) {
    const body = error as { error?: string; reason?: string } | undefined;
    const retryAfter = Number(response.headers.get('retry-after')) || undefined;
    throw new ApiError(response.status, body?.error ?? `the service answered ${response.status}`, body?.reason, retryAfter);
  }
  return data as T;
}
