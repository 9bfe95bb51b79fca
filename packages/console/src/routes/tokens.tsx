import { Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { key, useMe } from '../api/queries';
import { DateTime } from '../components/display';
import { RecordTable } from '../components/record-table';

export default function Tokens() {
  const me = useMe().data;
  const admin = me?.role === 'ORG_ADMIN';
  const tokens = useQuery({ queryKey: key('tokens'), queryFn: () => unwrap(api().GET('/tokens')), enabled: admin });
  return (
    <Stack>
      <Title order={1}>API tokens</Title>
      {!admin ? (
        <Text c="dimmed">API tokens are managed by an ORG_ADMIN; your role is {me?.role ?? '…'}.</Text>
      ) : (
        <RecordTable
          error={tokens.error}
          label="API tokens"
          rows={tokens.data}
          rowKey={(t) => t.id}
          empty="No API token yet."
          minWidth={760}
          columns={[
            ['Name', (t) => t.name],
            ['Scopes', (t) => t.scopes.join(', ')],
            ['Expires', (t) => (t.expiresAt ? <DateTime value={t.expiresAt} /> : 'never')],
            ['Last used', (t) => <DateTime value={t.lastUsedAt} />],
            ['Revoked', (t) => (t.revokedAt ? <DateTime value={t.revokedAt} /> : 'no')],
          ]}
        />
      )}
    </Stack>
  );
}
