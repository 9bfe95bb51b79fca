import { Button, Stack, Text, Title } from '@mantine/core';
import { useLocation, useNavigate, useParams } from 'react-router';
import { ApiError } from '../../api/client';
import { roleName, useMe, useSignOut } from '../../api/session';
import { ErrorText, Loading } from '../../components/feedback';
import { Shell } from '../../components/shell';
import { CommandPalette } from './palette';

export const NAV = [
  { to: '', label: 'Dashboard' },
  { to: 'licences', label: 'Licences' },
  { to: 'products', label: 'Products' },
  { to: 'customers', label: 'Customers' },
  { to: 'members', label: 'Members' },
  { to: 'tokens', label: 'API tokens' },
  { to: 'webhooks', label: 'Webhooks' },
  { to: 'integrations', label: 'Integrations' },
  { to: 'activity', label: 'Activity' },
  { to: 'settings', label: 'Settings' },
  { to: 'verify', label: 'Verify' },
] as const;

export function Layout() {
  const { slug = '' } = useParams();
  const me = useMe();
  const navigate = useNavigate();
  const signOut = useSignOut();
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

  // A platform account signs out of the control plane, where it came from.
  const home = me.data.platform ? '/platform/' : `/o/${slug}/sign-in`;

  return (
    <Shell
      subtitle={me.data.organization.name}
      links={NAV.map((item) => ({ to: `/o/${slug}/${item.to}`, label: item.label, active: section === item.to, end: item.to === '' }))}
      tools={<CommandPalette />}
      // A platform account shows as platform/<username>, as the activity trail names it.
      who={`${me.data.platform ? me.data.username : me.data.displayName} · ${roleName(me.data.role)}`}
      onSignOut={async () => (await signOut.run()) && navigate(home)}
    />
  );
}
