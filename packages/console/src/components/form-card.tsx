import { Center, Paper, Stack, Text, Title } from '@mantine/core';
import type { FormEvent, ReactNode } from 'react';

/** A page that is one small form in the middle of the screen: the organisation chooser, sign-in. */
export function FormCard(props: { title: string; subtitle: ReactNode; onSubmit: (event: FormEvent) => void; children: ReactNode }) {
  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={380} maw="100%" component="main">
        <form onSubmit={props.onSubmit} noValidate>
          <Stack>
            <div>
              <Title order={1} size="h2">
                {props.title}
              </Title>
              <Text c="dimmed" size="sm">
                {props.subtitle}
              </Text>
            </div>
            {props.children}
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
