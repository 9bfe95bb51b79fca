import { Anchor, Code, Stack, Title } from '@mantine/core';
import { useState } from 'react';
import { usePlatformActivity } from '../api/platform';
import { actionWords, DateTime } from '../components/display';
import { Pager, RecordTable } from '../components/record-table';

const PAGE = 50;

export default function PlatformActivity() {
  const [offset, setOffset] = useState(0);
  const activity = usePlatformActivity(PAGE, offset);
  return (
    <Stack>
      <Title order={1}>Activity</Title>
      <RecordTable
        label="Activity"
        card={{ heading: 'Action' }}
        error={activity.error}
        rows={activity.data?.items}
        rowKey={(e) => e.id}
        empty="Nothing recorded yet."
        minWidth={820}
        columns={[
          ['When', (e) => <DateTime value={e.at} />],
          ['Who', (e) => e.actor],
          ['Action', (e) => actionWords(e.action)],
          ['Organisation', (e) => (e.organisation ? <Anchor href={`/o/${e.organisation}/`} size="sm">{e.organisation}</Anchor> : '—')],
          ['Details', (e) => (e.details ? <Code style={{ whiteSpace: 'pre-wrap' }}>{JSON.stringify(e.details)}</Code> : '—')],
        ]}
      />
      {activity.data && <Pager offset={offset} size={PAGE} shown={activity.data.items.length} total={activity.data.total} onOffset={setOffset} />}
    </Stack>
  );
}
