import { Badge, Button, Checkbox, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { bound } from '../api/action';
import { useIsAdmin } from '../api/session';
import { useCreateToken, useDeleteToken, useRevokeToken, useTokens } from '../api/tokens';
import { DateTime, SecretOnce } from '../components/display';
import { ConfirmButton } from '../components/feedback';
import { ModalForm, useProblems } from '../components/modal-form';
import { RecordTable } from '../components/record-table';

/** DESIGN.md 4's scopes: resource × read/write, where write implies read. */
const RESOURCES: Array<[string, boolean]> = [
  ['licenses', true],
  ['products', true],
  ['customers', true],
  ['users', true],
  ['analytics', false],
  ['activity', false],
  ['webhooks', true],
];

export default function Tokens() {
  const admin = useIsAdmin();
  const tokens = useTokens(admin.allowed);
  const revoke = useRevokeToken();
  const remove = useDeleteToken();
  const [creating, setCreating] = useState(false);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>API tokens</Title>
        {admin.allowed && <Button onClick={() => setCreating(true)}>Create token</Button>}
      </Group>
      {!admin.allowed ? (
        <Text c="dimmed">{admin.reason}</Text>
      ) : (
        <>
          <Text size="sm" c="dimmed">
            Tokens let scripts use the Management API with the scopes they are given, never more; each appears in the activity trail as token/&lt;name&gt;.
          </Text>
          <RecordTable
            error={tokens.error}
            label="API tokens"
            card={{ badge: 'State', actions: 'Actions' }}
            rows={tokens.data}
            rowKey={(t) => t.id}
            empty="No API token yet."
            minWidth={980}
            columns={[
              [
                'Name',
                (t) => (
                  <>
                    <Text fw={500} span>
                      {t.name}
                    </Text>
                    <Text size="xs" c="dimmed">
                      by {t.createdBy}, <DateTime value={t.createdAt} withTime={false} />
                    </Text>
                  </>
                ),
              ],
              [
                'Scopes',
                (t) => (
                  <Group gap={4}>
                    {t.scopes.map((s) => (
                      <Badge key={s} variant="light" size="sm" tt="none">
                        {s}
                      </Badge>
                    ))}
                  </Group>
                ),
              ],
              ['Expires', (t) => (t.expiresAt ? <DateTime value={t.expiresAt} /> : 'never')],
              ['Last used', (t) => <DateTime value={t.lastUsedAt} />],
              [
                'State',
                (t) =>
                  t.revokedAt ? (
                    <Badge color="red" variant="dot">
                      revoked
                    </Badge>
                  ) : t.expiresAt && new Date(t.expiresAt) < new Date() ? (
                    <Badge color="gray" variant="dot">
                      expired
                    </Badge>
                  ) : (
                    <Badge color="green" variant="dot">
                      active
                    </Badge>
                  ),
              ],
              [
                'Actions',
                (t) => (
                  <Group gap={6}>
                    {!t.revokedAt && (
                      <ConfirmButton
                        compact
                        label="Revoke"
                        title={`Revoke ${t.name}`}
                        color="red"
                        consequence="Every request carrying this token is refused from now on. The record stays, so its past use remains visible."
                        action={bound(revoke, t.id)}
                      />
                    )}
                    <ConfirmButton
                      compact
                      label="Delete"
                      title={`Delete ${t.name}`}
                      color="red"
                      consequence="The token is refused and its record removed; the activity trail keeps what it did."
                      action={bound(remove, t.id)}
                    />
                  </Group>
                ),
              ],
            ]}
          />
        </>
      )}
      {creating && <CreateToken onClose={() => setCreating(false)} />}
    </Stack>
  );
}

function CreateToken({ onClose }: { onClose: () => void }) {
  const create = useCreateToken();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Set<string>>(new Set());
  const [expires, setExpires] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const problems = useProblems({
    name: !name.trim() ? 'Enter a name' : !/^[A-Za-z0-9._-]{1,100}$/.test(name.trim()) && 'Letters, digits, dot, underscore and dash, at most 100 characters',
    scopes: scopes.size === 0 && 'Choose at least one scope',
  });
  const has = (scope: string) => scopes.has(scope);
  const setScope = (scope: string, on: boolean) => {
    const next = new Set(scopes);
    if (on) next.add(scope);
    else next.delete(scope);
    setScopes(next);
  };
  const submit = async () => {
    if (!problems.check()) return false;
    // A write scope carries its read: only the write is sent.
    const chosen = [...scopes].filter((s) => !(s.endsWith(':read') && scopes.has(s.replace(':read', ':write'))));
    const done = await create.run({ name: name.trim(), scopes: chosen, ...(expires ? { expiresAt: new Date(`${expires}T23:59:59Z`).toISOString() } : {}) });
    if (done) setCreated(done.value.token);
    return done;
  };
  const shown = created && (
    <Stack>
      <SecretOnce value={created} label="API token">
        Send it as <code>Authorization: Bearer …</code>.
      </SecretOnce>
      <Group justify="flex-end">
        <Button onClick={onClose}>Done</Button>
      </Group>
    </Stack>
  );
  return (
    <ModalForm title="Create token" submit="Create" onClose={onClose} action={create} onSubmit={submit} done={shown || undefined} stayOpen>
      <TextInput
        label="Name"
        description="Letters, digits, . _ and -; the activity trail shows token/<name>"
        required
        maxLength={100}
        value={name}
        onChange={(e) => setName(e.currentTarget.value)}
        error={problems.of('name')}
        data-autofocus
      />
      <div>
        <Text size="sm" fw={500}>
          Scopes
        </Text>
        <Text size="xs" c={problems.of('scopes') ? 'var(--mantine-color-error)' : 'dimmed'}>
          {problems.of('scopes') ?? 'Write includes read.'}
        </Text>
        <Table withRowBorders={false} verticalSpacing={4} aria-label="Scopes" maw={360}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Resource</Table.Th>
              <Table.Th>Read</Table.Th>
              <Table.Th>Write</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {RESOURCES.map(([resource, writable]) => {
              const implied = has(`${resource}:write`);
              return (
                <Table.Tr key={resource}>
                  <Table.Td>{resource}</Table.Td>
                  <Table.Td>
                    <Checkbox
                      aria-label={`${resource}:read`}
                      checked={has(`${resource}:read`) || implied}
                      disabled={implied}
                      onChange={(e) => setScope(`${resource}:read`, e.currentTarget.checked)}
                    />
                  </Table.Td>
                  <Table.Td>
                    {writable && (
                      <Checkbox aria-label={`${resource}:write`} checked={implied} onChange={(e) => setScope(`${resource}:write`, e.currentTarget.checked)} />
                    )}
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </div>
      <TextInput
        label="Expires"
        description="Optional; the token stops working at the end of this day (UTC)"
        type="date"
        value={expires}
        onChange={(e) => setExpires(e.currentTarget.value)}
        maw={240}
      />
    </ModalForm>
  );
}
