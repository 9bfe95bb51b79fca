import { useQuery } from '@tanstack/react-query';
import { api, currentSlug, unwrap } from './client';

/** Query keys start with the slug, so two organisations never share cached answers. */
export const key = (...parts: unknown[]) => [currentSlug(), ...parts];

export function useMe() {
  return useQuery({ queryKey: key('me'), queryFn: () => unwrap(api().GET('/auth/me')), staleTime: 60_000 });
}

export function useSettings(enabled = true) {
  return useQuery({ queryKey: key('settings'), queryFn: () => unwrap(api().GET('/settings')), staleTime: 60_000, enabled });
}

export type Role = 'VIEWER' | 'ISSUER' | 'ORG_ADMIN' | 'TOKEN';

/** Whether the signed-in person may write (licences, products, customers), and why not. */
export function useCanWrite(): { allowed: boolean; reason: string } {
  const me = useMe().data;
  const allowed = me?.role === 'ISSUER' || me?.role === 'ORG_ADMIN';
  return { allowed, reason: allowed ? '' : `Your role (${me?.role ?? '…'}) can read but not change licences, products or customers.` };
}

/** Whether the signed-in person manages members, tokens and settings (ORG_ADMIN), and why not. */
export function useIsAdmin(): { allowed: boolean; reason: string } {
  const me = useMe().data;
  const allowed = me?.role === 'ORG_ADMIN';
  return { allowed, reason: allowed ? '' : `Only an ORG_ADMIN manages members, API tokens and settings; your role is ${me?.role ?? '…'}.` };
}
