import { Alert, Button, Card, Group, PasswordInput, Select, Stack, Text, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { key, useIsAdmin, useMe, useSettings } from '../api/queries';
import { DateTime } from '../components/display';
import { ErrorText, Guarded, Loading } from '../components/feedback';
import { useZones } from '../components/zones';
import { PasskeysCard, type PasskeyApi } from '../components/passkeys';

export default function Settings() {
  return (
    <Stack>
      <Title order={1}>Settings</Title>
      <Timezone />
      <OwnPassword />
      <OwnPasskeys />
    </Stack>
  );
}

function Timezone() {
  const settings = useSettings();
  const admin = useIsAdmin();
  const queryClient = useQueryClient();
  const zones = useZones();
  const [zone, setZone] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (settings.error) return <ErrorText error={settings.error} />;
  if (!settings.data) return <Loading />;
  const current = settings.data.timezone;
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await unwrap(api().PUT('/settings', { body: { timezone: zone ?? current } }));
      // Every date and chart follows the zone.
      await queryClient.invalidateQueries({ queryKey: key() });
      setZone(null);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder maw={640} component="section" aria-labelledby="timezone-heading">
      <form onSubmit={save}>
        <Stack gap="sm">
          <div>
            <Title order={2} size="h4" id="timezone-heading">
              Timezone
            </Title>
            <Text size="sm" c="dimmed">
              Dates in the console, the dashboard&apos;s days and licence terms&apos; calendar follow it.
              {settings.data.updatedBy && (
                <>
                  {' '}Changed by {settings.data.updatedBy} on <DateTime value={settings.data.updatedAt} />.
                </>
              )}
            </Text>
          </div>
          <Group align="flex-end">
            <Select label="Organisation timezone" data={zones} value={zone ?? current} onChange={setZone} searchable allowDeselect={false} disabled={!admin.allowed} limit={50} nothingFoundMessage="No zone by that name" w={380} maw="100%" />
            <Guarded allowed={admin.allowed} reason={admin.reason}>
              {(disabled) => (
                <Button type="submit" loading={busy} disabled={disabled || zone === null || zone === current}>
                  Save timezone
                </Button>
              )}
            </Guarded>
          </Group>
          <ErrorText error={error} />
        </Stack>
      </form>
    </Card>
  );
}

function OwnPassword() {
  const me = useMe().data;
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  const mismatch = again !== '' && again !== next;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setDone(false);
    try {
      await unwrap(api().PUT('/auth/password', { body: { currentPassword: current, newPassword: next } }));
      setCurrent('');
      setNext('');
      setAgain('');
      setDone(true);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder maw={640} component="section" aria-labelledby="password-heading">
      <form onSubmit={submit}>
        <Stack gap="sm">
          <div>
            <Title order={2} size="h4" id="password-heading">
              Your password
            </Title>
            <Text size="sm" c="dimmed">
              Signed in as {me?.displayName} ({me?.username}, {me?.role}).
            </Text>
          </div>
          <PasswordInput label="Current password" required autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.currentTarget.value)} />
          <PasswordInput label="New password" description="At least 12 characters" required minLength={12} autoComplete="new-password" value={next} onChange={(e) => setNext(e.currentTarget.value)} />
          <PasswordInput label="Repeat the new password" required autoComplete="new-password" value={again} onChange={(e) => setAgain(e.currentTarget.value)} error={mismatch ? 'Not the same as the new password' : undefined} />
          <ErrorText error={error} />
          {done && (
            <Alert color="green" variant="light" role="status">
              Password changed. Use it the next time you sign in.
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={busy} disabled={!current || next.length < 12 || next !== again}>
              Change password
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

function OwnPasskeys() {
  const me = useMe().data;
  if (!me) return null;
  // A platform account's passkeys are the control plane's; none are planted from inside an organisation.
  if (me.platform) {
    return (
      <Text size="sm" c="dimmed" maw={640}>
        You are signed in as a platform account: manage its password and passkeys in the control plane.
      </Text>
    );
  }
  const passkeyApi: PasskeyApi = {
    queryKey: key('passkeys'),
    list: () => unwrap(api().GET('/auth/passkeys')),
    options: (currentPassword) => unwrap(api().POST('/auth/passkeys/options', { body: { currentPassword } })),
    register: (name, response) => unwrap(api().POST('/auth/passkeys', { body: { name, response: response as never } })),
    remove: (id) => unwrap(api().DELETE('/auth/passkeys/{id}', { params: { path: { id } } })),
  };
  return <PasskeysCard passkeyApi={passkeyApi} />;
}
