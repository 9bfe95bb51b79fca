import { Anchor, Stack, Title } from '@mantine/core';
import { useState } from 'react';
import { usePlatformActivity } from '../api/platform';
import { roleName } from '../api/session';
import { actionWords, DateTime } from '../components/display';
import { Pager, RecordTable } from '../components/record-table';

const PAGE = 50;

const FIELD_WORDS: Record<string, string> = { name: 'name', planLimit: 'plan limit', timezone: 'time zone', username: 'username', role: 'role' };

function valueWords(key: string, value: unknown): string {
  if (value === null || value === undefined) return key === 'planLimit' ? 'unlimited' : 'none';
  if (key === 'role' && typeof value === 'string') return roleName(value);
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** An entry's details as a person reads them: "plan limit 10 → 25", "role Administrator". */
export function detailWords(details: Record<string, unknown>): string {
  return Object.entries(details)
    .map(([key, value]) => {
      const field = FIELD_WORDS[key] ?? key;
      const change = value as { from?: unknown; to?: unknown } | null;
      if (change && typeof change === 'object' && 'from' in change && 'to' in change)
        return `${field} ${valueWords(key, change.from)} → ${valueWords(key, change.to)}`;
      return `${field} ${valueWords(key, value)}`;
    })
    .join(', ');
}

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
          [
            'Organisation',
            (e) =>
              e.organisation ? (
                <Anchor href={`/o/${e.organisation}/`} size="sm">
                  {e.organisation}
                </Anchor>
              ) : (
                '—'
              ),
          ],
          ['Details', (e) => (e.details ? detailWords(e.details) : '—')],
        ]}
      />
      {activity.data && <Pager offset={offset} size={PAGE} shown={activity.data.items.length} total={activity.data.total} onOffset={setOffset} />}
    </Stack>
  );
}
