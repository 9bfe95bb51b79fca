import { useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap } from './client';

export const useSettings = (enabled = true) =>
  useQuery({ queryKey: key('settings'), queryFn: () => unwrap(api().GET('/settings')), staleTime: 60_000, enabled });
/** Every date and chart follows the zone: everything of the organisation is refetched. */
export const useSaveTimezone = () => useAction((timezone: string) => unwrap(api().PUT('/settings', { body: { timezone } })), [key()]);
export const useChangePassword = () => useAction((body: { currentPassword: string; newPassword: string }) => unwrap(api().PUT('/auth/password', { body })));
