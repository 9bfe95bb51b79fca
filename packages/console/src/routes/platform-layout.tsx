import { ActionIcon, AppShell, Burger, Button, Group, NavLink, Text, Tooltip, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQueryClient } from '@tanstack/react-query';
import { NavLink as RouterLink, Outlet, useLocation, useNavigate } from 'react-router';
import { platformApi, usePlatformMe } from '../api/platform';
import { ErrorText, Loading } from '../components/feedback';

const NAV = [
  { to: '', label: 'Organisations' },
  { to: 'activity', label: 'Activity' },
  { to: 'passkeys', label: 'Passkeys' },
] as const;

/** The control plane's frame (DESIGN.md 8): the same look as an organisation's console. */
export default function PlatformLayout() {
  const [opened, { toggle, close }] = useDisclosure();
  const me = usePlatformMe();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const { toggleColorScheme } = useMantineColorScheme();
  const section = useLocation().pathname.split('/')[2] ?? '';
  if (me.error) return <ErrorText error={me.error} />;
  if (!me.data) return <Loading />;
  const signOut = async () => {
    await platformApi.POST('/platform/api/auth/logout');
    queryClient.clear();
    navigate('/platform/sign-in');
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
            <Text c="dimmed" size="sm" visibleFrom="xs">
              Control plane
            </Text>
          </Group>
          <Group gap="xs" wrap="nowrap">
            <Tooltip label="Light or dark">
              <ActionIcon variant="default" size="lg" onClick={toggleColorScheme} aria-label="Switch between light and dark">
                ◐
              </ActionIcon>
            </Tooltip>
            <Text size="sm" visibleFrom="md">
              {me.data.username} · {me.data.platformRole}
            </Text>
            <Button variant="default" size="sm" onClick={signOut}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Main">
        {NAV.map((item) => (
          <NavLink key={item.label} component={RouterLink} to={`/platform/${item.to}`} end={item.to === ''} label={item.label} active={section === item.to} variant="filled" onClick={close} />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
