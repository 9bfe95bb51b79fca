import { Button, Center, Paper, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';

/** `/`: asks for the organisation, remembering the last one, and goes to its console. */
export default function Chooser() {
  const [slug, setSlug] = useState(() => localStorage.getItem('licensor.lastSlug') ?? 'default');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const chosen = slug.trim().toLowerCase();
    localStorage.setItem('licensor.lastSlug', chosen);
    window.location.assign(`/o/${encodeURIComponent(chosen)}/`);
  };
  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={380} maw="100%" component="main">
        <form onSubmit={submit}>
          <Stack>
            <div>
              <Title order={1} size="h2">
                Licensor
              </Title>
              <Text c="dimmed" size="sm">
                Which organisation do you work in?
              </Text>
            </div>
            <TextInput label="Organisation" description="Its short name, as in /o/name/" value={slug} onChange={(e) => setSlug(e.currentTarget.value)} required />
            <Button type="submit" fullWidth>
              Continue
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
