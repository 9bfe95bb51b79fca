import { Anchor, Button, Group, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useIntegrations } from '../api/integrations';
import { useIsAdmin } from '../api/session';
import { DateTime } from '../components/display';
import { IntegrationForm } from '../components/integration-form';
import { EnabledBadge, LastRefusal, providerName } from '../components/integration-words';
import { RecordTable } from '../components/record-table';

/** A count of the ledger's entries; failed ones in red while there are any. */
function Count({ n, alarm = false }: { n: number; alarm?: boolean }) {
  return (
    <Text size="sm" c={alarm && n > 0 ? 'red' : undefined} fw={n > 0 ? 600 : undefined}>
      {n.toLocaleString()}
    </Text>
  );
}

export default function Integrations() {
  const { slug = '' } = useParams();
  const admin = useIsAdmin();
  const integrations = useIntegrations(admin.allowed);
  const [adding, setAdding] = useState(false);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Integrations</Title>
        {admin.allowed && <Button onClick={() => setAdding(true)}>Add integration</Button>}
      </Group>
      {!admin.allowed ? (
        <Text c="dimmed">{admin.reason}</Text>
      ) : (
        <>
          <Text size="sm" c="dimmed">
            Stripe or Paddle sends its payment events to an integration, signed with the endpoint’s secret: a paid order issues a licence (and emails it), a
            paid renewal renews it, and a refund, a dispute, a pause or a cancellation revokes it. No payment key is needed.
          </Text>
          <RecordTable
            error={integrations.error}
            label="Integrations"
            rows={integrations.data}
            rowKey={(i) => i.id}
            empty="No integration yet: add one so that a sale in Stripe or Paddle becomes a licence in your customer’s inbox, with nobody in between."
            minWidth={820}
            card={{ badge: 'State' }}
            columns={[
              [
                'Integration',
                (i) => (
                  <>
                    <Anchor component={Link} to={`/o/${slug}/integrations/${i.id}`} fw={500}>
                      {i.name}
                    </Anchor>
                    <Text size="xs" c="dimmed">
                      {providerName(i.provider)} · {i.mappings.length === 1 ? '1 price' : `${i.mappings.length} prices`}
                    </Text>
                  </>
                ),
              ],
              ['State', (i) => <EnabledBadge enabled={i.enabled} />],
              ['Failed', (i) => <Count n={i.failedEvents} alarm />],
              ['Waiting', (i) => <Count n={i.waitingEvents} />],
              ['Last event', (i) => <DateTime value={i.lastEventAt} />],
              ['Last refusal', (i) => <LastRefusal integration={i} />],
            ]}
          />
        </>
      )}
      {adding && <IntegrationForm onClose={() => setAdding(false)} />}
    </Stack>
  );
}
