import { Alert, Button, Card, Group, PasswordInput, Select, Stack, Text, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { currentSlug } from '../api/client';
import { useMembers } from '../api/members';
import { memberPasskeys } from '../api/passkeys';
import { useLinkSso, useSignInMethods } from '../api/sso';
import { roleName, useIsAdmin, useMe } from '../api/session';
import { useChangePassword, useSaveTimezone, useSettings } from '../api/settings';
import { DateTime } from '../components/display';
import { ErrorText, Guarded, Loading } from '../components/feedback';
import { useProblems } from '../components/modal-form';
import { PasskeysCard } from '../components/passkeys';
import { useZones } from '../components/zones';
import { MailSettingsCard } from './settings-mail';
import { SingleSignOn } from './settings-sso';

export default function Settings() {
  return (
    <Stack>
      <Title order={1}>Settings</Title>
      <Timezone />
      <MailSettingsCard />
      <SingleSignOn />
      <OwnPassword />
      <OwnSingleSignOn />
      <OwnPasskeys />
    </Stack>
  );
}

function Timezone() {
  const settings = useSettings();
  const admin = useIsAdmin();
  const saveZone = useSaveTimezone();
  const zones = useZones();
  const [zone, setZone] = useState<string | null>(null);
  if (settings.error) return <ErrorText error={settings.error} />;
  if (!settings.data) return <Loading />;
  const current = settings.data.timezone;
  const save = async (event: FormEvent) => {
    event.preventDefault();
    if (await saveZone.run(zone ?? current)) setZone(null);
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
                  {' '}
                  Changed by {settings.data.updatedBy} on <DateTime value={settings.data.updatedAt} />.
                </>
              )}
            </Text>
          </div>
          <Group align="flex-end">
            <Select
              label="Organisation timezone"
              data={zones}
              value={zone ?? current}
              onChange={setZone}
              searchable
              allowDeselect={false}
              disabled={!admin.allowed}
              limit={50}
              nothingFoundMessage="No zone by that name"
              w={380}
              maw="100%"
            />
            <Guarded allowed={admin.allowed} reason={admin.reason}>
              {(disabled) => (
                <Button type="submit" loading={saveZone.busy} disabled={disabled || zone === null || zone === current}>
                  Save timezone
                </Button>
              )}
            </Guarded>
          </Group>
          <ErrorText error={saveZone.error} title="Timezone not saved" />
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
  const change = useChangePassword();
  const [done, setDone] = useState(false);
  const problems = useProblems({
    current: !current && 'Enter your current password',
    next: next.length < 12 && 'At least 12 characters',
    again: again !== next && 'Not the same as the new password',
  });
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(false);
    if (!problems.check()) return;
    if (await change.run({ currentPassword: current, newPassword: next })) {
      problems.reset();
      setCurrent('');
      setNext('');
      setAgain('');
      setDone(true);
    }
  };
  return (
    <Card withBorder maw={640} component="section" aria-labelledby="password-heading">
      <form onSubmit={submit} noValidate>
        <Stack gap="sm">
          <div>
            <Title order={2} size="h4" id="password-heading">
              Your password
            </Title>
            <Text size="sm" c="dimmed">
              Signed in as {me?.displayName} ({me?.username}, {roleName(me?.role)}).
            </Text>
          </div>
          <PasswordInput
            label="Current password"
            required
            autoComplete="current-password"
            value={current}
            onChange={(e) => setCurrent(e.currentTarget.value)}
            error={problems.of('current')}
          />
          <PasswordInput
            label="New password"
            description="At least 12 characters"
            required
            minLength={12}
            autoComplete="new-password"
            value={next}
            onChange={(e) => setNext(e.currentTarget.value)}
            error={problems.of('next')}
          />
          <PasswordInput
            label="Repeat the new password"
            required
            autoComplete="new-password"
            value={again}
            onChange={(e) => setAgain(e.currentTarget.value)}
            error={problems.of('again') ?? (again !== '' && again !== next ? 'Not the same as the new password' : undefined)}
          />
          <ErrorText error={change.error} title="Password not changed" />
          {done && (
            <Alert color="green" variant="light" role="status">
              Password changed. Use it the next time you sign in.
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={change.busy}>
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
  const sso = useSignInMethods(currentSlug()).data?.sso ?? null;
  if (!me) return null;
  // A platform account's passkeys are the control plane's; none are planted from inside an organisation.
  if (me.platform) {
    return (
      <Text size="sm" c="dimmed" maw={640}>
        You are signed in as a platform account: manage its password and passkeys in the control plane.
      </Text>
    );
  }
  return <PasskeysCard realm={memberPasskeys} sso={sso} />;
}

/**
 * `Link <displayName>` (DESIGN.md 21): a member with a password (or one linked to another identity)
 * links their own account to the organisation's identity provider; shown while single sign-on is on.
 */
function OwnSingleSignOn() {
  const me = useMe().data;
  const sso = useSignInMethods(currentSlug()).data?.sso ?? null;
  const members = useMembers();
  const link = useLinkSso();
  if (!me || me.platform || !sso) return null;
  const own = members.data?.find((m) => m.username === me.username);
  return (
    <Card withBorder maw={640} component="section" aria-labelledby="own-sso-heading">
      <Stack gap="sm">
        <div>
          <Title order={2} size="h4" id="own-sso-heading">
            Your {sso.displayName} account
          </Title>
          <Text size="sm" c="dimmed">
            {own?.ssoLinkedAt ? (
              <>
                Linked on <DateTime value={own.ssoLinkedAt} withTime={false} />: {sso.displayName} signs you in as {me.username}. Linking again replaces the
                link with the account you sign in with there.
              </>
            ) : (
              <>
                Not linked. Link it to sign in here with {sso.displayName}: you go there to sign in, then come back signed in as {me.username}.
              </>
            )}
          </Text>
        </div>
        <Group>
          <Button variant={own?.ssoLinkedAt ? 'default' : 'filled'} loading={link.busy} onClick={() => link.run(window.location.pathname)}>
            Link {sso.displayName}
          </Button>
        </Group>
        <ErrorText error={link.error} title="Not linked" />
      </Stack>
    </Card>
  );
}
