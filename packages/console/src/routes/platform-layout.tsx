import { useQueryClient } from '@tanstack/react-query';
import { useLocation, useNavigate } from 'react-router';
import { platformApi, usePlatformMe } from '../api/platform';
import { ErrorText, Loading } from '../components/feedback';
import { Shell } from '../components/shell';

const NAV = [
  { to: '', label: 'Organisations' },
  { to: 'activity', label: 'Activity' },
  { to: 'passkeys', label: 'Passkeys' },
] as const;

/** The control plane's frame (DESIGN.md 8): the same look as an organisation's console. */
export default function PlatformLayout() {
  const me = usePlatformMe();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const section = useLocation().pathname.split('/')[2] ?? '';
  if (me.error) return <ErrorText error={me.error} />;
  if (!me.data) return <Loading />;
  const signOut = async () => {
    await platformApi.POST('/platform/api/auth/logout');
    queryClient.clear();
    navigate('/platform/sign-in');
  };
  return (
    <Shell
      subtitle="Control plane"
      links={NAV.map((item) => ({ to: `/platform/${item.to}`, label: item.label, active: section === item.to, end: item.to === '' }))}
      who={`${me.data.username} · ${me.data.platformRole}`}
      onSignOut={signOut}
    />
  );
}
