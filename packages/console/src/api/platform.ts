import createClient from 'openapi-fetch';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import { useAction } from './action';
import { sessionMarks, signInOn401, unwrap, type Answer, type Body } from './client';
import type { paths } from './schema';
import type { PasskeyAssertion } from './session';

export type Organisation = Answer<'/platform/api/organisations/{slug}', 'get'>;
const SIGN_IN = '/platform/sign-in';

/** The control plane's client: its paths are absolute (`/platform/api/...`), outside every organisation. */
export const platformApi = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
platformApi.use(signInOn401(() => SIGN_IN));

const platform = ['platform'];
const orgs = ['platform', 'organisations'];

export const usePlatformMe = () =>
  useQuery({ queryKey: ['platform', 'me'], queryFn: () => unwrap(platformApi.GET('/platform/api/auth/me')), staleTime: 60_000 });
export const useOrganisations = () => useQuery({ queryKey: orgs, queryFn: () => unwrap(platformApi.GET('/platform/api/organisations')) });
export const usePlatformActivity = (limit: number, offset: number) =>
  useQuery({
    queryKey: ['platform', 'activity', offset],
    queryFn: () => unwrap(platformApi.GET('/platform/api/activity', { params: { query: { limit, offset } } })),
    placeholderData: keepPreviousData,
  });

const slugPath = (slug: string) => ({ params: { path: { slug } } });
export const useCreateOrganisation = () =>
  useAction((body: Body<'createOrganisation'>) => unwrap(platformApi.POST('/platform/api/organisations', { body })), [platform]);
export const useUpdateOrganisation = () =>
  useAction(
    ({ slug, body }: { slug: string; body: Body<'updateOrganisation'> }) =>
      unwrap(platformApi.PUT('/platform/api/organisations/{slug}', { ...slugPath(slug), body })),
    [platform],
  );
export const useAddOrganisationMember = () =>
  useAction(
    ({ slug, body }: { slug: string; body: Body<'createOrganisationMember'> }) =>
      unwrap(platformApi.POST('/platform/api/organisations/{slug}/members', { ...slugPath(slug), body })),
    [platform],
  );

/** Signing in to the control plane, by password or passkey. */
export const platformSignIn = {
  password: async (username: string, password: string) => {
    await unwrap(platformApi.POST('/platform/api/auth/login', { body: { username, password } }));
    sessionMarks.set(SIGN_IN);
  },
  passkey: async (sign: (options: PublicKeyCredentialRequestOptionsJSON) => Promise<PasskeyAssertion>) => {
    const options = await unwrap(platformApi.POST('/platform/api/auth/passkey/options'));
    const response = await sign(options as unknown as PublicKeyCredentialRequestOptionsJSON);
    await unwrap(platformApi.POST('/platform/api/auth/passkey/login', { body: { response } }));
    sessionMarks.set(SIGN_IN);
  },
};
export function usePlatformSignOut() {
  const queryClient = useQueryClient();
  return useAction(async () => {
    await platformApi.POST('/platform/api/auth/logout');
    sessionMarks.clear(SIGN_IN);
    queryClient.clear();
  });
}
