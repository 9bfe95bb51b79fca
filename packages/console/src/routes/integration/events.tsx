import { Anchor, Button, Group, Select, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { inWords } from '../../api/client';
import { useIntegrationEvents, useRetryEvent, type Integration, type Outcome } from '../../api/integrations';
import { DateTime } from '../../components/display';
import { ErrorText } from '../../components/feedback';
import { OUTCOMES, OutcomeBadge } from '../../components/integration-words';
import { Pager, RecordTable } from '../../components/record-table';

const PAGE = 25;
const FILTERS = [{ value: '', label: 'All outcomes' }, ...Object.entries(OUTCOMES).map(([value, [label]]) => ({ value, label }))];
/** A ledger entry a retry applies again (DESIGN.md 22). */
const UNSETTLED = new Set(['FAILED', 'WAITING']);

const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`;

/** `Events` (DESIGN.md 22): the connection's ledger, newest first, with `Retry` on what was not applied. */
export function IntegrationEvents({ integration }: { integration: Integration }) {
  const { slug = '' } = useParams();
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [offset, setOffset] = useState(0);
  const events = useIntegrationEvents(integration.id, { outcome, limit: PAGE, offset }, true);
  const retry = useRetryEvent(integration.id);
  const [retrying, setRetrying] = useState<string | null>(null);
  const again = async (eventId: string) => {
    setRetrying(eventId);
    await retry.run(eventId);
    setRetrying(null);
  };
  return (
    <Stack gap="xs" component="section" aria-labelledby="events-heading">
      <Group justify="space-between" align="flex-end">
        <Title order={2} size="h4" id="events-heading">
          Events
        </Title>
        <Select
          label="Outcome"
          size="xs"
          w={170}
          data={FILTERS}
          value={outcome ?? ''}
          allowDeselect={false}
          onChange={(value) => {
            setOutcome((value || null) as Outcome | null);
            setOffset(0);
          }}
        />
      </Group>
      <ErrorText error={retry.error} title="Not retried" />
      <RecordTable
        error={events.error}
        label="Events"
        rows={events.data?.items}
        rowKey={(e) => e.eventId}
        stale={events.isPlaceholderData}
        empty={outcome ? 'No event with this outcome in the last 90 days.' : 'No event yet: the provider’s events show here as they arrive (kept 90 days).'}
        minWidth={900}
        card={{ actions: 'Actions' }}
        columns={[
          [
            'Event',
            (e) => (
              <>
                <Text size="sm" fw={500}>
                  {e.type}
                </Text>
                <Text size="xs" c="dimmed" ff="monospace" style={{ wordBreak: 'break-all' }}>
                  {e.eventId}
                </Text>
              </>
            ),
          ],
          ['Received', (e) => <DateTime value={e.receivedAt} />],
          [
            'Outcome',
            (e) => (
              <>
                <OutcomeBadge outcome={e.outcome} />
                {e.error && (
                  <Text size="xs" c="dimmed">
                    {sentence(inWords(e.error))}
                  </Text>
                )}
              </>
            ),
          ],
          [
            'Licences',
            (e) =>
              e.lids.length === 0 ? (
                <Text span c="dimmed" inherit>
                  —
                </Text>
              ) : (
                <Stack gap={0}>
                  {e.lids.map((lid) => (
                    // The first characters tell a licence apart on the page; the link names it whole.
                    <Anchor key={lid} component={Link} to={`/o/${slug}/licences/${lid}`} size="sm" ff="monospace" aria-label={`Licence ${lid}`}>
                      {lid.slice(0, 8)}…
                    </Anchor>
                  ))}
                </Stack>
              ),
          ],
          [
            'Deliveries',
            (e) => (
              <>
                <Text size="sm">{e.deliveries.toLocaleString()}</Text>
                {e.deliveries > 1 && e.lastDeliveryAt && (
                  <Text size="xs" c="dimmed">
                    last <DateTime value={e.lastDeliveryAt} />
                  </Text>
                )}
              </>
            ),
          ],
          [
            'Actions',
            (e) =>
              UNSETTLED.has(e.outcome) && (
                <Button
                  variant="light"
                  size="compact-sm"
                  loading={retrying === e.eventId}
                  onClick={() => void again(e.eventId)}
                  aria-label={`Retry ${e.type} ${e.eventId}`}
                >
                  Retry
                </Button>
              ),
          ],
        ]}
      />
      {events.data && <Pager offset={offset} size={PAGE} shown={events.data.items.length} total={events.data.total} onOffset={setOffset} />}
    </Stack>
  );
}
