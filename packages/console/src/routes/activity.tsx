import { Group, Pagination, Stack, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { key } from '../api/queries';
import { DateTime } from '../components/display';
import { RecordTable } from '../components/record-table';

const PAGE = 50;

export default function Activity() {
  const { slug = '' } = useParams();
  const [page, setPage] = useState(1);
  const [actionText, setActionText] = useState('');
  const [actorText, setActorText] = useState('');
  const [action] = useDebouncedValue(actionText.trim(), 300);
  const [actor] = useDebouncedValue(actorText.trim(), 300);
  const query = { limit: PAGE, offset: (page - 1) * PAGE, ...(action ? { action } : {}), ...(actor ? { actor } : {}) };
  const activity = useQuery({
    queryKey: key('activity', query),
    queryFn: () => unwrap(api().GET('/dashboard/activity', { params: { query } })),
    placeholderData: keepPreviousData,
  });
  return (
    <Stack>
      <Title order={1}>Activity</Title>
      <Group grow maw={640}>
        <TextInput label="Action" placeholder="e.g. licence.revoked" value={actionText} onChange={(e) => { setActionText(e.currentTarget.value); setPage(1); }} />
        <TextInput label="Actor" placeholder="e.g. admin or token/ci" value={actorText} onChange={(e) => { setActorText(e.currentTarget.value); setPage(1); }} />
      </Group>
      <RecordTable
        label="Activity"
        error={activity.error}
        rows={activity.data?.items}
        rowKey={(e) => e.id}
        empty="Nothing recorded matches."
        minWidth={760}
        columns={[
          ['When', (e) => <DateTime value={e.at} />],
          ['Who', (e) => e.actor],
          ['Action', (e) => e.action],
          ['What', (e) => (e.lid ? <Link to={`/o/${slug}/licences/${e.lid}`}>{e.summary}</Link> : e.summary)],
        ]}
      />
      {activity.data && activity.data.total > PAGE && <Pagination total={Math.ceil(activity.data.total / PAGE)} value={page} onChange={setPage} size="sm" />}
    </Stack>
  );
}
