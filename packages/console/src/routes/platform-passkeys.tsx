import { Stack, Title } from '@mantine/core';
import { platformPasskeys } from '../api/passkeys';
import { PasskeysCard } from '../components/passkeys';

/** The platform account's own passkeys (DESIGN.md 9). */
export default function PlatformPasskeys() {
  return (
    <Stack>
      <Title order={1}>Passkeys</Title>
      <PasskeysCard realm={platformPasskeys} />
    </Stack>
  );
}
