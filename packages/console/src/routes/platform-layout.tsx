import { useLocation, useNavigate } from 'react-router';
import { usePlatformMe, usePlatformSignOut } from '../api/platform';
import { roleName } from '../api/session';
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
  const signOut = usePlatformSignOut();
  const section = useLocation().pathname.split('/')[2] ?? '';
  if (me.error) return <ErrorText error={me.error} />;
  if (!me.data) return <Loading />;
  return (
    <Shell
      subtitle="Control plane"
      links={NAV.map((item) => ({ to: `/platform/${item.to}`, label: item.label, active: section === item.to, end: item.to === '' }))}
      who={`${me.data.username} · ${roleName(me.data.platformRole)}`}
      onSignOut={async () => (await signOut.run()) && navigate('/platform/sign-in')}
    />
  );
}
