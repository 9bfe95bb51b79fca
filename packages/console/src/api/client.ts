import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never;
/** The JSON a successful call of `method path` answers, as the OpenAPI document says. */
export type Answer<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: infer R } ? Json<R[keyof R & (200 | 201)]> : never;

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
  ) {
    super(message);
  }
}

/** A 401 at any moment sends the person to sign-in, and back to where they were afterwards. */
const signInOn401: Middleware = {
  onResponse({ response, request }) {
    const path = window.location.pathname;
    // The customer portal has no sign-in page: its pages say when a session has ended.
    if (response.status === 401 && !request.url.endsWith('/auth/login') && !path.endsWith('/sign-in') && !request.url.includes('/api/portal/')) {
      const next = encodeURIComponent(path + window.location.search);
      window.location.assign(`/o/${encodeURIComponent(currentSlug())}/sign-in?next=${next}`);
    }
    return response;
  },
};

const clients = new Map<string, ReturnType<typeof createClient<paths>>>();

/** The typed client for this organisation's API (the session cookie is sent by the browser). */
export function api(slug = currentSlug()) {
  let client = clients.get(slug);
  if (!client) {
    client = createClient<paths>({ baseUrl: `/o/${encodeURIComponent(slug)}/api`, credentials: 'same-origin' });
    client.use(signInOn401);
    clients.set(slug, client);
  }
  return client;
}

/** The data of a successful answer, or an ApiError carrying the API's `error` text. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) {
    const body = error as { error?: string; reason?: string } | undefined;
    throw new ApiError(response.status, body?.error ?? `the service answered ${response.status}`, body?.reason);
  }
  return data as T;
}
