import { Badge, Stack, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { key } from '../api/queries';
import { ErrorText, Loading } from '../components/feedback';
import { DateTime } from '../components/display';
import { SimpleTable } from '../components/simple-table';

export default function Members() {
  const members = useQuery({ queryKey: key('members'), queryFn: () => unwrap(api().GET('/users')) });
  return (
    <Stack>
      <Title order={1}>Members</Title>
      <ErrorText error={members.error} />
      {!members.data ? (
        !members.error && <Loading />
      ) : (
        <SimpleTable
          label="Members"
          rows={members.data}
          rowKey={(m) => m.id}
          empty="No member."
          columns={[
            ['Name', (m) => m.displayName],
            ['Username', (m) => m.username],
            ['Role', (m) => <Badge variant="outline" color="dark">{m.role}</Badge>],
            ['Active', (m) => (m.active ? 'yes' : 'no')],
            ['Last sign-in', (m) => <DateTime value={m.lastLoginAt} />],
          ]}
        />
      )}
    </Stack>
  );
}
