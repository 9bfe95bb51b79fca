import { useQuery, type QueryKey } from '@tanstack/react-query';
import { startRegistration, type PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/browser';
import { key, useAction } from './action';
import { api, unwrap, type Body } from './client';
import { platformApi } from './platform';

export interface Passkey {
  id: number;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}
type Registration = Body<'registerPasskey'>['response'];

/** What a realm (an organisation's member, a platform account) offers for its own passkeys (DESIGN.md 9). */
export interface PasskeyRealm {
  queryKey: () => QueryKey;
  list: () => Promise<Passkey[]>;
  options: (currentPassword: string) => Promise<unknown>;
  register: (name: string, response: Registration) => Promise<unknown>;
  remove: (id: number) => Promise<unknown>;
}

export const memberPasskeys: PasskeyRealm = {
  queryKey: () => key('passkeys'),
  list: () => unwrap(api().GET('/auth/passkeys')),
  options: (currentPassword) => unwrap(api().POST('/auth/passkeys/options', { body: currentPassword ? { currentPassword } : {} })),
  register: (name, response) => unwrap(api().POST('/auth/passkeys', { body: { name, response } })),
  remove: (id) => unwrap(api().DELETE('/auth/passkeys/{id}', { params: { path: { id } } })),
};

export const platformPasskeys: PasskeyRealm = {
  queryKey: () => ['platform', 'passkeys'],
  list: () => unwrap(platformApi.GET('/platform/api/auth/passkeys')),
  options: (currentPassword) => unwrap(platformApi.POST('/platform/api/auth/passkeys/options', { body: { currentPassword } })),
  register: (name, response) => unwrap(platformApi.POST('/platform/api/auth/passkeys', { body: { name, response } })),
  remove: (id) => unwrap(platformApi.DELETE('/platform/api/auth/passkeys/{id}', { params: { path: { id } } })),
};

export const usePasskeys = (realm: PasskeyRealm) => useQuery({ queryKey: realm.queryKey(), queryFn: realm.list });
/** A new passkey: the service's options, the browser's authenticator signs them, the service keeps the key. */
export const useAddPasskey = (realm: PasskeyRealm) =>
  useAction(
    async ({ name, currentPassword }: { name: string; currentPassword: string }) => {
      const options = (await realm.options(currentPassword)) as PublicKeyCredentialCreationOptionsJSON;
      await realm.register(name, (await startRegistration({ optionsJSON: options })) as Registration);
    },
    [realm.queryKey()],
  );
export const useDeletePasskey = (realm: PasskeyRealm) => useAction((id: number) => realm.remove(id), [realm.queryKey()]);
