import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import { key, useAction } from './action';
import { api, sessionMarks, signInPath, unwrap } from './client';
import type { operations } from './schema';

export function useMe() {
  return useQuery({ queryKey: key('me'), queryFn: () => unwrap(api().GET('/auth/me')), staleTime: 60_000 });
}

export type Role = 'VIEWER' | 'ISSUER' | 'ORG_ADMIN';

/** A role as people name it. */
export const ROLE_NAMES: Record<string, string> = {
  VIEWER: 'Viewer',
  ISSUER: 'Issuer',
  ORG_ADMIN: 'Administrator',
  PLATFORM_ADMIN: 'Platform administrator',
  PLATFORM_SUPPORT: 'Platform support',
};
export const roleName = (role: string | undefined) => (role ? (ROLE_NAMES[role] ?? role) : '…');

/** Whether the signed-in person may write (licences, products, customers), and why not. */
export function useCanWrite(): { allowed: boolean; reason: string } {
  const me = useMe().data;
  const allowed = me?.role === 'ISSUER' || me?.role === 'ORG_ADMIN';
  return { allowed, reason: allowed ? '' : `Your role (${roleName(me?.role)}) can read but not change licences, products or customers.` };
}

/** Whether the signed-in person manages members, tokens, webhooks, integrations and settings (an administrator), and why not. */
export function useIsAdmin(): { allowed: boolean; reason: string } {
  const me = useMe().data;
  const allowed = me?.role === 'ORG_ADMIN';
  return {
    allowed,
    reason: allowed ? '' : `Only an Administrator manages members, API tokens, webhooks, integrations and settings; your role is ${roleName(me?.role)}.`,
  };
}

/** Whether the signed-in person may erase personal data (an administrator, DESIGN.md 22), and why not. */
export function useCanErase(): { allowed: boolean; reason: string } {
  const me = useMe().data;
  const allowed = me?.role === 'ORG_ADMIN';
  return { allowed, reason: allowed ? '' : `Only an Administrator erases personal data; your role is ${roleName(me?.role)}.` };
}

/** Signing in to an organisation, by password or passkey; the browser then remembers it had a session. */
export function signIn(slug: string) {
  const done = () => {
    sessionMarks.set(signInPath(slug));
    localStorage.setItem('licensor.lastSlug', slug);
  };
  return {
    password: async (username: string, password: string) => {
      await unwrap(api(slug).POST('/auth/login', { body: { username, password } }));
      done();
    },
    passkey: async (sign: (options: PublicKeyCredentialRequestOptionsJSON) => Promise<PasskeyAssertion>) => {
      const options = await unwrap(api(slug).POST('/auth/passkey/options'));
      const response = await sign(options as unknown as PublicKeyCredentialRequestOptionsJSON);
      await unwrap(api(slug).POST('/auth/passkey/login', { body: { response } }));
      done();
    },
  };
}
/** What the browser signs for a passkey sign-in, as the API takes it. */
export type PasskeyAssertion = operations['signInWithPasskey']['requestBody']['content']['application/json']['response'];

/** Signs out; every cached answer goes with the session. */
export function useSignOut() {
  const queryClient = useQueryClient();
  return useAction(async () => {
    await api().POST('/auth/logout');
    sessionMarks.clear(signInPath());
    queryClient.clear();
  });
}
