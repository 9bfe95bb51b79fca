import { Button, Card, Group, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { startRegistration, type PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/browser';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { DateTime } from './display';
import { ConfirmButton, ErrorText } from './feedback';
import { RecordTable } from './record-table';

interface Passkey {
  id: number;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** What a realm (an organisation's member, a platform account) offers for its own passkeys. */
export interface PasskeyApi {
  queryKey: unknown[];
  list: () => Promise<Passkey[]>;
  options: (currentPassword: string) => Promise<unknown>;
  register: (name: string, response: unknown) => Promise<unknown>;
  remove: (id: number) => Promise<unknown>;
}

/** `Passkeys` in the person's own settings (DESIGN.md 9): add one with a name, see them, delete one. */
export function PasskeysCard({ passkeyApi }: { passkeyApi: PasskeyApi }) {
  const queryClient = useQueryClient();
  const passkeys = useQuery({ queryKey: passkeyApi.queryKey, queryFn: passkeyApi.list });
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const refresh = () => queryClient.invalidateQueries({ queryKey: passkeyApi.queryKey });
  const add = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const options = (await passkeyApi.options(password)) as PublicKeyCredentialCreationOptionsJSON;
      const response = await startRegistration({ optionsJSON: options });
      await passkeyApi.register(name.trim(), response);
      setName('');
      setPassword('');
      await refresh();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
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
                  onConfirm={async () => {
                    await passkeyApi.remove(p.id);
                    await refresh();
                  }}
                />
              ),
            ],
          ]}
        />
        <form onSubmit={add} aria-label="Add a passkey">
          <Group align="flex-end" wrap="wrap">
            <TextInput label="Passkey name" placeholder="e.g. Work laptop" required maxLength={100} value={name} onChange={(e) => setName(e.currentTarget.value)} w={200} />
            <PasswordInput label="Current password" required autoComplete="current-password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} w={220} />
            <Button type="submit" loading={busy} disabled={!name.trim() || !password}>
              Add a passkey
            </Button>
          </Group>
        </form>
        <ErrorText error={error} />
      </Stack>
    </Card>
  );
}
