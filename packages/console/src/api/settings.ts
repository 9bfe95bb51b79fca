import { useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body } from './client';

export type MailSettings = Answer<'/settings', 'get'>['mail'];
export type MailBody = NonNullable<Body<'updateSettings'>['mail']>;

export const useSettings = (enabled = true) =>
  useQuery({ queryKey: key('settings'), queryFn: () => unwrap(api().GET('/settings')), staleTime: 60_000, enabled });
/** Every date and chart follows the zone: everything of the organisation is refetched. */
export const useSaveTimezone = () => useAction((timezone: string) => unwrap(api().PUT('/settings', { body: { timezone } })), [key()]);
export const useChangePassword = () => useAction((body: { currentPassword: string; newPassword: string }) => unwrap(api().PUT('/auth/password', { body })));
/** The email template's fields given (null restores a default); the daily count and switches come back with it. */
export const useSaveMail = () => useAction((mail: MailBody) => unwrap(api().PUT('/settings', { body: { mail } })), [key('settings')]);
/** One test email to the signed-in member's own address; the count of today's emails moves. */
export const useTestMail = () => useAction(() => unwrap(api().POST('/settings/mail/test')), [key('settings')]);

/** Why no licence email can go now (DESIGN.md 22: not configured, then switched off), in words, or null. */
export function mailOff(mail: Pick<MailSettings, 'configured' | 'enabled'> | undefined): string | null {
  if (mail && !mail.configured) return 'This service has no mail relay set up: its operator configures one before licences can be emailed.';
  if (mail && !mail.enabled) return 'Email is switched off for this organisation by the platform’s operator.';
  return null;
}
