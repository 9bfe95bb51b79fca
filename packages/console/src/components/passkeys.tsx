import { Alert, Button, Card, Group, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { bound } from '../api/action';
import { ApiError } from '../api/client';
import { useAddPasskey, useDeletePasskey, usePasskeys, type PasskeyRealm } from '../api/passkeys';
import { signInAgain } from '../api/sso';
import { DateTime } from './display';
import { ConfirmButton, ErrorText } from './feedback';
import { useProblems } from './modal-form';
import { RecordTable } from './record-table';

/**
 * `Passkeys` in the person's own settings (DESIGN.md 9): add one with a name, see them, delete one.
 * With single sign-on (`sso`), a person may have no password: the field may stay empty, and a
 * refusal for want of a fresh sign-in (REAUTH_REQUIRED, DESIGN.md 21) sends them through the
 * identity provider again.
 */
export function PasskeysCard({ realm, sso = null }: { realm: PasskeyRealm; sso?: { displayName: string; startUrl: string } | null }) {
  const passkeys = usePasskeys(realm);
  const add = useAddPasskey(realm);
  const remove = useDeletePasskey(realm);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const problems = useProblems({ name: !name.trim() && 'Name it, e.g. Work laptop', password: !sso && !password && 'Enter your current password' });
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!problems.check()) return;
    if (await add.run({ name: name.trim(), currentPassword: password })) {
      problems.reset();
      setName('');
      setPassword('');
    }
  };
  const reauth = sso !== null && add.error instanceof ApiError && add.error.reason === 'REAUTH_REQUIRED';
  // The service asks for a fresh sign-in: the console starts one at once, back to this page.
  useEffect(() => {
    if (reauth && sso) signInAgain(sso.startUrl, window.location.pathname);
  }, [reauth, sso]);
  return (
    <Card withBorder maw={640} component="section" aria-labelledby="passkeys-heading">
      <Stack gap="sm">
        <div>
          <Title order={2} size="h4" id="passkeys-heading">
            Passkeys
          </Title>
          <Text size="sm" c="dimmed">
            Sign in with this device&apos;s screen lock or a security key instead of your password: nothing to type, nothing to phish.
          </Text>
        </div>
        <RecordTable
          label="Passkeys"
          card={{ actions: '' }}
          error={passkeys.error}
          rows={passkeys.data}
          rowKey={(p) => p.id}
          empty="No passkey yet."
          minWidth={420}
          columns={[
            ['Name', (p) => p.name],
            ['Added', (p) => <DateTime value={p.createdAt} withTime={false} />],
            ['Last used', (p) => <DateTime value={p.lastUsedAt} />],
            [
              '',
              (p) => (
                <ConfirmButton
                  compact
                  label="Delete"
                  color="red"
                  title={`Delete passkey ${p.name}`}
                  consequence="It no longer signs you in; your password and other passkeys still do."
                  action={bound(remove, p.id)}
                />
              ),
            ],
          ]}
        />
        <form onSubmit={submit} aria-label="Add a passkey" noValidate>
          <Group align="flex-start" wrap="wrap">
            <TextInput
              label="Passkey name"
              placeholder="e.g. Work laptop"
              required
              maxLength={100}
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              error={problems.of('name')}
              w={200}
            />
            <PasswordInput
              label="Current password"
              required={!sso}
              description={sso ? `Empty if you sign in only with ${sso.displayName}` : undefined}
              autoComplete="current-password"
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
              error={problems.of('password')}
              w={sso ? 300 : 220}
            />
            <Button type="submit" loading={add.busy} mt={sso ? 45 : 25}>
              Add a passkey
            </Button>
          </Group>
        </form>
        {reauth && sso ? (
          <Alert color="yellow" variant="light" title="Sign in again first" role="alert">
            <Stack gap="xs" align="flex-start">
              <Text size="sm">
                Without a password, a passkey is added only within 5 minutes of signing in with {sso.displayName}, so that a session left open cannot plant one.
                Taking you to {sso.displayName} to sign in again; then add it.
              </Text>
              <Button size="compact-sm" onClick={() => signInAgain(sso.startUrl, window.location.pathname)}>
                Sign in again with {sso.displayName}
              </Button>
            </Stack>
          </Alert>
        ) : (
          <ErrorText error={add.error} title="No passkey added" />
        )}
      </Stack>
    </Card>
  );
}
