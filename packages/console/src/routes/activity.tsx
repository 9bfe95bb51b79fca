import { Anchor, Group, Stack, TextInput, Title, UnstyledButton } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, unwrap, type Answer } from '../api/client';
import { key } from '../api/queries';
import { DateTime } from '../components/display';
import { Pager, RecordTable } from '../components/record-table';

const PAGE = 50;
type Entry = Answer<'/dashboard/activity', 'get'>['items'][number];

/** Where an entry's subject lives in the console, if it has a page. */
function subjectPath(slug: string, e: Entry): string | null {
  if (e.lid) return `/o/${slug}/licences/${e.lid}`;
  if (!e.subjectId) return null;
  switch (e.subjectType) {
    case 'product':
      return `/o/${slug}/products/${e.subjectId}`;
    case 'customer':
      return `/o/${slug}/customers/${e.subjectId}`;
    case 'user':
      return `/o/${slug}/members`;
    case 'token':
      return `/o/${slug}/tokens`;
    case 'organisation':
      return `/o/${slug}/settings`;
    default:
      return null;
  }
}

export default function Activity() {
  const { slug = '' } = useParams();
  // Filters live in the URL, so a filtered trail can be shared.
  const [params, setParams] = useSearchParams();
  const action = params.get('action') ?? '';
  const actor = params.get('actor') ?? '';
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const [actionText, setActionText] = useState(action);
  const [actorText, setActorText] = useState(actor);
  const set = (change: { action?: string; actor?: string; offset?: number }) => {
    const next = { action, actor, offset: 0, ...change };
    const out = new URLSearchParams();
    if (next.action) out.set('action', next.action);
    if (next.actor) out.set('actor', next.actor);
    if (next.offset) out.set('offset', String(next.offset));
    setParams(out, { replace: true });
  };
  const push = useDebouncedCallback(set, 300);
  const query = { limit: PAGE, offset, ...(action ? { action } : {}), ...(actor ? { actor } : {}) };
  const activity = useQuery({
    queryKey: key('activity', query),
    queryFn: () => unwrap(api().GET('/dashboard/activity', { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const filterBy = (change: { action?: string; actor?: string }) => {
    if (change.action !== undefined) setActionText(change.action);
    if (change.actor !== undefined) setActorText(change.actor);
    set(change);
  };
  return (
    <Stack>
      <Title order={1}>Activity</Title>
      <Group grow maw={640} align="flex-start">
        <TextInput label="Action" placeholder="e.g. licence.revoked" description="Exact; click one in the list" value={actionText} onChange={(e) => { setActionText(e.currentTarget.value); push({ action: e.currentTarget.value.trim() }); }} />
        <TextInput label="Actor" placeholder="e.g. admin or token/ci" description="Exact; click one in the list" value={actorText} onChange={(e) => { setActorText(e.currentTarget.value); push({ actor: e.currentTarget.value.trim() }); }} />
      </Group>
      <RecordTable
        label="Activity"
        card={{ heading: 'What' }}
        error={activity.error}
        rows={activity.data?.items}
        rowKey={(e) => e.id}
        empty="Nothing recorded matches."
        minWidth={820}
        columns={[
          ['When', (e) => <DateTime value={e.at} />],
          ['Who', (e) => <UnstyledButton fz="sm" td="underline dotted" onClick={() => filterBy({ actor: e.actor })} aria-label={`Only what ${e.actor} did`}>{e.actor}</UnstyledButton>],
          ['Action', (e) => <UnstyledButton fz="sm" ff="monospace" td="underline dotted" onClick={() => filterBy({ action: e.action })} aria-label={`Only ${e.action}`}>{e.action}</UnstyledButton>],
          ['What', (e) => { const to = subjectPath(slug, e); return to ? <Anchor component={Link} to={to} size="sm">{e.summary}</Anchor> : e.summary; }],
        ]}
      />
      {activity.data && <Pager offset={offset} size={PAGE} shown={activity.data.items.length} total={activity.data.total} onOffset={(o) => set({ offset: o })} />}
    </Stack>
  );
}
