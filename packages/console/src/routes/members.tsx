import { Badge, Stack, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { key } from '../api/queries';
import { DateTime } from '../components/display';
import { RecordTable } from '../components/record-table';

export default function Members() {
  const members = useQuery({ queryKey: key('members'), queryFn: () => unwrap(api().GET('/users')) });
  return (
    <Stack>
      <Title order={1}>Members</Title>
      <RecordTable
        error={members.error}
        label="Members"
        rows={members.data}
        rowKey={(m) => m.id}
        empty="No member."
        columns={[
          ['Name', (m) => m.displayName],
          ['Username', (m) => m.username],
          ['Role', (m) => <Badge variant="default">{m.role}</Badge>],
          ['Active', (m) => (m.active ? 'yes' : 'no')],
          ['Last sign-in', (m) => <DateTime value={m.lastLoginAt} />],
        ]}
      />
    </Stack>
  );
}
