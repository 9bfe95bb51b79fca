import { Anchor, CloseButton, Group, Stack, Text, TextInput, Title, UnstyledButton } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { useActivity, type Entry } from '../api/dashboard';
import { actionWords, DateTime, Sentence } from '../components/display';
import { Pager, RecordTable } from '../components/record-table';

const PAGE = 50;

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
    case 'integration':
      return `/o/${slug}/integrations/${e.subjectId}`;
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
  const activity = useActivity(query);
  const filterBy = (change: { action?: string; actor?: string }) => {
    if (change.actor !== undefined) setActorText(change.actor);
    set(change);
  };
  return (
    <Stack>
      <Title order={1}>Activity</Title>
      <Group maw={640} align="flex-end">
        <TextInput
          label="Who"
          placeholder="e.g. admin or token/ci"
          description="Exact; or click a name in the list"
          value={actorText}
          onChange={(e) => {
            setActorText(e.currentTarget.value);
            push({ actor: e.currentTarget.value.trim() });
          }}
          w={300}
          maw="100%"
        />
        {action && (
          <Group gap={4} mb={4}>
            <Text size="sm">Only: {actionWords(action)}</Text>
            <CloseButton size="sm" aria-label={`Show every kind of entry, not only: ${actionWords(action)}`} onClick={() => set({ action: '' })} />
          </Group>
        )}
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
          [
            'Who',
            (e) => (
              <UnstyledButton fz="sm" td="underline dotted" onClick={() => filterBy({ actor: e.actor })} aria-label={`Only what ${e.actor} did`}>
                {e.actor}
              </UnstyledButton>
            ),
          ],
          [
            'Kind',
            (e) => (
              <UnstyledButton fz="sm" td="underline dotted" onClick={() => filterBy({ action: e.action })} aria-label={`Only ${actionWords(e.action)}`}>
                {actionWords(e.action)}
              </UnstyledButton>
            ),
          ],
          [
            'What',
            (e) => {
              const to = subjectPath(slug, e);
              return to ? (
                <Anchor component={Link} to={to} size="sm">
                  <Sentence text={e.summary} />
                </Anchor>
              ) : (
                <Sentence text={e.summary} />
              );
            },
          ],
        ]}
      />
      {activity.data && (
        <Pager offset={offset} size={PAGE} shown={activity.data.items.length} total={activity.data.total} onOffset={(o) => set({ offset: o })} />
      )}
    </Stack>
  );
}
