import { Card, Stack, Text, Title } from '@mantine/core';
import { useMe, useSettings } from '../api/queries';
import { ErrorText, Loading } from '../components/feedback';
import { DateTime } from '../components/display';

export default function Settings() {
  const settings = useSettings();
  const me = useMe().data;
  return (
    <Stack>
      <Title order={1}>Settings</Title>
      <ErrorText error={settings.error} />
      {!settings.data ? (
        !settings.error && <Loading />
      ) : (
        <Card withBorder maw={560}>
          <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
            Timezone
          </Text>
          <Text size="lg">{settings.data.timezone}</Text>
          <Text size="sm" c="dimmed">
            Dates in the console and licence terms follow it.
            {settings.data.updatedBy && (
              <>
                {' '}Changed by {settings.data.updatedBy} on <DateTime value={settings.data.updatedAt} />.
              </>
            )}
          </Text>
          <Text size="sm" mt="md">
            Signed in as {me?.displayName} ({me?.username}).
          </Text>
        </Card>
      )}
    </Stack>
  );
}
