import createClient, { type Middleware } from 'openapi-fetch';
import { useQuery } from '@tanstack/react-query';
import { unwrap, type Answer } from './client';
import type { paths } from './schema';

export type Organisation = Answer<'/platform/api/organisations/{slug}', 'get'>;

/** A 401 sends the person to the control plane's sign-in, and back afterwards. */
const signInOn401: Middleware = {
  onResponse({ response, request }) {
    const path = window.location.pathname;
    if (response.status === 401 && !request.url.endsWith('/auth/login') && !path.endsWith('/sign-in')) {
      window.location.assign(`/platform/sign-in?next=${encodeURIComponent(path + window.location.search)}`);
    }
    return response;
  },
};

/** The control plane's client: its paths are absolute (`/platform/api/...`), outside every organisation. */
export const platformApi = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
platformApi.use(signInOn401);

export function usePlatformMe() {
  return useQuery({ queryKey: ['platform', 'me'], queryFn: () => unwrap(platformApi.GET('/platform/api/auth/me')), staleTime: 60_000 });
}
