import { Stack, Title } from '@mantine/core';
import { unwrap } from '../api/client';
import { platformApi } from '../api/platform';
import { PasskeysCard, type PasskeyApi } from '../components/passkeys';

const passkeyApi: PasskeyApi = {
  queryKey: ['platform', 'passkeys'],
  list: () => unwrap(platformApi.GET('/platform/api/auth/passkeys')),
  options: (currentPassword) => unwrap(platformApi.POST('/platform/api/auth/passkeys/options', { body: { currentPassword } })),
  register: (name, response) => unwrap(platformApi.POST('/platform/api/auth/passkeys', { body: { name, response: response as never } })),
  remove: (id) => unwrap(platformApi.DELETE('/platform/api/auth/passkeys/{id}', { params: { path: { id } } })),
};

/** The platform account's own passkeys (DESIGN.md 9). */
export default function PlatformPasskeys() {
  return (
    <Stack>
      <Title order={1}>Passkeys</Title>
      <PasskeysCard passkeyApi={passkeyApi} />
    </Stack>
  );
}
