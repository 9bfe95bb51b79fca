import { ActionIcon, AppShell, Burger, Button, Group, NavLink, Stack, Text, Title, Tooltip, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQueryClient } from '@tanstack/react-query';
import { NavLink as RouterLink, Outlet, useLocation, useNavigate, useParams } from 'react-router';
import { api, ApiError } from '../api/client';
import { useMe } from '../api/queries';
import { ErrorText, Loading } from '../components/feedback';
import { CommandPalette } from '../components/palette';

export const NAV = [
  { to: '', label: 'Dashboard' },
  { to: 'licences', label: 'Licences' },
  { to: 'products', label: 'Products' },
  { to: 'customers', label: 'Customers' },
  { to: 'members', label: 'Members' },
  { to: 'tokens', label: 'API tokens' },
  { to: 'activity', label: 'Activity' },
  { to: 'settings', label: 'Settings' },
  { to: 'verify', label: 'Verify' },
] as const;

export function Layout() {
  const { slug = '' } = useParams();
  const [opened, { toggle, close }] = useDisclosure();
  const me = useMe();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const { toggleColorScheme } = useMantineColorScheme();
  const { pathname } = useLocation();
  const section = pathname.split('/')[3] ?? '';

  if (me.error instanceof ApiError && me.error.status === 404) {
    return (
      <Stack align="center" py={80}>
        <Title order={1}>No such organisation</Title>
        <Text c="dimmed">There is no organisation “{slug}” on this service.</Text>
        <Button component="a" href="/" variant="light">
          Choose an organisation
        </Button>
      </Stack>
    );
  }
  if (me.error) return <ErrorText error={me.error} />;
  if (!me.data) return <Loading />;

  const signOut = async () => {
    await api().POST('/auth/logout');
    queryClient.clear();
    // A platform account signs out of the control plane, where it came from.
    navigate(me.data.platform ? '/platform/' : `/o/${slug}/sign-in`);
  };

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
              {me.data.organization.name}
            </Text>
          </Group>
          <Group gap="xs" wrap="nowrap">
            <CommandPalette />
            <Tooltip label="Light or dark">
              <ActionIcon variant="default" size="lg" onClick={toggleColorScheme} aria-label="Switch between light and dark">
                ◐
              </ActionIcon>
            </Tooltip>
            <Text size="sm" visibleFrom="md">
              {/* A platform account shows as platform/<username>, as the activity trail names it. */}
              {me.data.platform ? me.data.username : me.data.displayName} · {me.data.role}
            </Text>
            <Button variant="default" size="sm" onClick={signOut}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Main">
        {NAV.map((item) => (
          <NavLink
            key={item.label}
            component={RouterLink}
            to={`/o/${slug}/${item.to}`}
            end={item.to === ''}
            label={item.label}
            active={section === item.to}
            variant="filled"
            onClick={close}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
