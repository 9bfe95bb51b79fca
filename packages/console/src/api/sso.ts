import { useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, ApiError, unwrap, type Answer, type Body } from './client';

export type SsoConfig = Answer<'/sso', 'get'>;
export type SsoBody = Body<'putSingleSignOn'>;
export type SsoTest = Answer<'/sso/test', 'post'>;
export type SignInMethods = Answer<'/auth/methods', 'get'>;

const sso = () => key('sso');

/** The organisation's single sign-on, or null when none is set up (a 404). */
export const useSso = (enabled: boolean) =>
  useQuery({
    queryKey: sso(),
    queryFn: () =>
      unwrap(api().GET('/sso')).catch((err: unknown) => {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }),
    enabled,
  });
export const useSaveSso = () => useAction((body: SsoBody) => unwrap(api().PUT('/sso', { body })), [sso()]);
export const useTestSso = () => useAction(() => unwrap(api().POST('/sso/test')));
export const useRemoveSso = () => useAction(() => unwrap(api().DELETE('/sso')), [sso()]);

/**
 * `Link <displayName>` (DESIGN.md 21): the service's authorization URL for this member, then the
 * browser goes there; the identity provider sends it back to `returnTo`, linked and signed in.
 */
export const useLinkSso = () =>
  useAction(async (returnTo: string) => {
    const { authorizationUrl } = await unwrap(api().POST('/auth/sso/link', { body: { returnTo } }));
    window.location.assign(authorizationUrl);
  });

/** A fresh sign-in through the identity provider (`prompt=login`), back to `returnTo`: what REAUTH_REQUIRED asks for. */
export const signInAgain = (startUrl: string, returnTo: string) => window.location.assign(`${startUrl}?prompt=login&returnTo=${encodeURIComponent(returnTo)}`);

/** What the sign-in page offers (no credential). */
export const useSignInMethods = (slug: string) =>
  useQuery({ queryKey: [slug, 'auth-methods'], queryFn: () => unwrap(api(slug).GET('/auth/methods')), staleTime: 60_000 });

/** An `ssoError` code as a sentence for the sign-in page. */
export const SSO_ERRORS: Record<string, string> = {
  RATE_LIMITED: 'Too many sign-ins were started from this address. Wait a minute and try again.',
  SSO_DISABLED: 'Single sign-on is not turned on for this organisation.',
  ORG_SUSPENDED: 'This organisation is suspended.',
  IDP_UNAVAILABLE: 'The identity provider could not be reached. Try again, or ask an administrator to test the connection.',
  STATE_INVALID: 'That sign-in had expired or was already used. Start it again from this page.',
  IDP_ERROR: 'The identity provider did not sign you in.',
  TOKEN_EXCHANGE_FAILED: 'The identity provider did not confirm the sign-in. Try again, or ask an administrator to check the client secret.',
  ID_TOKEN_INVALID: 'The identity provider’s answer could not be trusted, so you were not signed in.',
  EMAIL_NOT_VERIFIED: 'Your identity provider does not say your email address is verified.',
  DOMAIN_NOT_ALLOWED: 'Your email address’s domain is not allowed to sign in here.',
  NO_ROLE: 'Your identity provider gives you no role here. Ask an administrator.',
  ACCOUNT_NOT_LINKED: 'A member with your email address exists but is not linked to single sign-on. Sign in with its password, or ask an administrator.',
  NOT_PROVISIONED: 'You are not a member of this organisation yet. Ask an administrator to add you.',
  MEMBER_INACTIVE: 'Your membership of this organisation is deactivated.',
  ALREADY_LINKED: 'That identity is already linked to another member.',
};
