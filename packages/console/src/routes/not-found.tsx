import { Stack, Text, Title } from '@mantine/core';

export default function NotFound() {
  return (
    <Stack>
      <Title order={1}>Not found</Title>
      <Text c="dimmed">There is no such page in the console.</Text>
    </Stack>
  );
}
