import { Button, Card, Group, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { bound } from '../api/action';
import { useAddPasskey, useDeletePasskey, usePasskeys, type PasskeyRealm } from '../api/passkeys';
import { DateTime } from './display';
import { ConfirmButton, ErrorText } from './feedback';
import { useProblems } from './modal-form';
import { RecordTable } from './record-table';

/** `Passkeys` in the person's own settings (DESIGN.md 9): add one with a name, see them, delete one. */
export function PasskeysCard({ realm }: { realm: PasskeyRealm }) {
  const passkeys = usePasskeys(realm);
  const add = useAddPasskey(realm);
  const remove = useDeletePasskey(realm);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const problems = useProblems({ name: !name.trim() && 'Name it, e.g. Work laptop', password: !password && 'Enter your current password' });
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!problems.check()) return;
    if (await add.run({ name: name.trim(), currentPassword: password })) {
      problems.reset();
      setName('');
      setPassword('');
    }
  };
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
              required
              autoComplete="current-password"
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
              error={problems.of('password')}
              w={220}
            />
            <Button type="submit" loading={add.busy} mt={25}>
              Add a passkey
            </Button>
          </Group>
        </form>
        <ErrorText error={add.error} title="No passkey added" />
      </Stack>
    </Card>
  );
}
