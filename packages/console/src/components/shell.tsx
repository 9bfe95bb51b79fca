import { ActionIcon, AppShell, Burger, Button, Group, NavLink, Text, Tooltip, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import type { ReactNode } from 'react';
import { NavLink as RouterLink, Outlet } from 'react-router';

/**
 * The frame of every signed-in page, an organisation's or the control plane's: the header with
 * who is signed in, the theme switch and `Sign out`, and the `Main` navigation.
 */
export function Shell(props: {
  subtitle: string;
  links: Array<{ to: string; label: string; active: boolean; end?: boolean }>;
  tools?: ReactNode;
  who: string;
  onSignOut: () => void;
}) {
  const [opened, { toggle, close }] = useDisclosure();
  const { toggleColorScheme } = useMantineColorScheme();
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="lg">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <Text fw={700} size="lg">
              Licensor
            </Text>
            <Text c="dimmed" size="sm" visibleFrom="xs" truncate>
              {props.subtitle}
            </Text>
          </Group>
          <Group gap="xs" wrap="nowrap">
            {props.tools}
            <Tooltip label="Light or dark">
              <ActionIcon variant="default" size="lg" onClick={toggleColorScheme} aria-label="Switch between light and dark">
                ◐
              </ActionIcon>
            </Tooltip>
            <Text size="sm" visibleFrom="md">
              {props.who}
            </Text>
            <Button variant="default" size="sm" onClick={props.onSignOut}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Main">
        {props.links.map((link) => (
          <NavLink
            key={link.label}
            component={RouterLink}
            to={link.to}
            end={link.end}
            label={link.label}
            active={link.active}
            variant="filled"
            onClick={close}
          />
        ))}
        {/* The service's own reference for every endpoint the console calls, for the people who script it. */}
        <NavLink component="a" href="/docs" target="_blank" label="API reference" description="Opens in a new tab" mt="auto" />
      </AppShell.Navbar>
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
