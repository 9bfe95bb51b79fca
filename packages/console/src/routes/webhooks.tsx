import { Badge, Button, Checkbox, Group, NumberInput, SegmentedControl, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { bound } from '../api/action';
import { useIsAdmin } from '../api/session';
import {
  useAddWebhook,
  useDeleteWebhook,
  useDeliveries,
  useRedeliver,
  useRotateSecret,
  useSetWebhookEnabled,
  useTestWebhook,
  useWebhooks,
  type DeliveryStatus,
  type Endpoint,
} from '../api/webhooks';
import { DateTime, SecretOnce } from '../components/display';
import { ConfirmButton, ErrorText } from '../components/feedback';
import { ModalForm, useProblems } from '../components/modal-form';
import { RecordTable } from '../components/record-table';

/** DESIGN.md 15's events, by the resource they concern. */
const EVENTS: Array<[string, string[]]> = [
  [
    'Licences',
    [
      'licence.issued',
      'licence.renewed',
      'licence.revoked',
      'licence.reinstated',
      'licence.archived',
      'licence.restored',
      'licence.expiring',
      'licence.expired',
    ],
  ],
  ['Machines', ['machine.bound', 'machine.released', 'machine.borrowed']],
  ['Products', ['product.created', 'product.updated', 'product.deleted', 'product.key_rotated', 'product.check_token_rotated']],
  ['Customers', ['customer.created', 'customer.updated', 'customer.deleted']],
  ['Integrations', ['integration.failed']],
];
const SECRET_KEPT = 'the service keeps it sealed and signs with it';

function Health({ endpoint }: { endpoint: Endpoint }) {
  const [colour, text] = !endpoint.enabled
    ? ['gray', 'disabled']
    : endpoint.failingSince
      ? ['red', 'failing']
      : endpoint.lastDeliveryAt
        ? ['green', 'healthy']
        : ['blue', 'no attempt yet'];
  return (
    <Badge color={colour} variant="dot" tt="none" style={{ minWidth: 'max-content' }}>
      {text}
    </Badge>
  );
}

export default function Webhooks() {
  const admin = useIsAdmin();
  const endpoints = useWebhooks(admin.allowed);
  const setEnabled = useSetWebhookEnabled();
  const remove = useDeleteWebhook();
  const test = useTestWebhook();
  const [adding, setAdding] = useState(false);
  const [rotating, setRotating] = useState<Endpoint | null>(null);
  const [shown, setShown] = useState<number | null>(null);
  const [tested, setTested] = useState<string | null>(null);
  const sendTest = async (e: Endpoint) => {
    setTested(null);
    const done = await test.run(e.id);
    if (!done) return;
    const { status, attempt } = done.value;
    setTested(
      status === 'delivered' ? `Test event delivered (HTTP ${attempt.httpStatus}).` : `Test event failed: ${attempt.error ?? `HTTP ${attempt.httpStatus}`}.`,
    );
  };
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Webhooks</Title>
        {admin.allowed && <Button onClick={() => setAdding(true)}>Add endpoint</Button>}
      </Group>
      {!admin.allowed ? (
        <Text c="dimmed">{admin.reason}</Text>
      ) : (
        <>
          <Text size="sm" c="dimmed">
            Licensing events are sent to your endpoints as signed POST requests (Standard Webhooks 1.0): verify them with its library and the endpoint’s secret.
            Failed deliveries are retried for about a day; an endpoint failing for five days is disabled.
          </Text>
          {tested && (
            <Text size="sm" role="status">
              {tested}
            </Text>
          )}
          <ErrorText error={test.error} title="No test event sent" />
          <ErrorText error={setEnabled.error} title="Not enabled" />
          <RecordTable
            error={endpoints.error}
            label="Webhook endpoints"
            rows={endpoints.data}
            rowKey={(e) => e.id}
            empty="No endpoint yet: events are not recorded until there is one."
            minWidth={900}
            columns={[
              [
                'Endpoint',
                (e) => (
                  <>
                    <Text fw={500} span style={{ wordBreak: 'break-all' }}>
                      {e.url}
                    </Text>
                    {e.description && (
                      <Text size="xs" c="dimmed">
                        {e.description}
                      </Text>
                    )}
                  </>
                ),
              ],
              [
                'Events',
                (e) =>
                  e.events.includes('*') ? (
                    'all'
                  ) : (
                    <Group gap={4}>
                      {e.events.map((t) => (
                        <Badge key={t} variant="light" size="sm" tt="none">
                          {t}
                        </Badge>
                      ))}
                    </Group>
                  ),
              ],
              [
                'Health',
                (e) => (
                  <>
                    <Health endpoint={e} />
                    {e.disabledReason && (
                      <Text size="xs" c="dimmed">
                        {e.disabledReason}
                      </Text>
                    )}
                  </>
                ),
              ],
              [
                'Last attempt',
                (e) => (
                  <>
                    <DateTime value={e.lastDeliveryAt} />
                    {e.lastDeliveryAt && (
                      <Text size="xs" c="dimmed">
                        {e.lastStatus === null ? 'no answer' : `HTTP ${e.lastStatus}`}
                      </Text>
                    )}
                  </>
                ),
              ],
              [
                'Actions',
                (e) => (
                  <Group gap={6}>
                    <Button variant="light" size="compact-sm" onClick={() => setShown(shown === e.id ? null : e.id)} aria-expanded={shown === e.id}>
                      Deliveries
                    </Button>
                    <Button variant="light" size="compact-sm" loading={test.busy} onClick={() => void sendTest(e)}>
                      Send test event
                    </Button>
                    <Button variant="light" size="compact-sm" onClick={() => setRotating(e)}>
                      Rotate secret
                    </Button>
                    {e.enabled ? (
                      <ConfirmButton
                        compact
                        label="Disable"
                        title={`Disable ${e.url}`}
                        consequence="Nothing is sent to it while disabled; its events are kept as failed, so Recover can send them after you enable it again."
                        action={bound(setEnabled, { id: e.id, enabled: false })}
                      />
                    ) : (
                      <Button variant="light" size="compact-sm" loading={setEnabled.busy} onClick={() => void setEnabled.run({ id: e.id, enabled: true })}>
                        Enable
                      </Button>
                    )}
                    <ConfirmButton
                      compact
                      label="Delete"
                      color="red"
                      title={`Delete ${e.url}`}
                      consequence="The endpoint and its delivery log are removed; nothing more is sent to it."
                      action={{
                        ...remove,
                        run: async () => {
                          const done = await remove.run(e.id);
                          if (done && shown === e.id) setShown(null);
                          return done;
                        },
                      }}
                    />
                  </Group>
                ),
              ],
            ]}
          />
          {shown !== null && endpoints.data?.some((e) => e.id === shown) && <Deliveries endpoint={endpoints.data.find((e) => e.id === shown)!} />}
        </>
      )}
      {adding && <AddEndpoint onClose={() => setAdding(false)} />}
      {rotating && <RotateSecret endpoint={rotating} onClose={() => setRotating(null)} />}
    </Stack>
  );
}

function Deliveries({ endpoint }: { endpoint: Endpoint }) {
  const [status, setStatus] = useState<DeliveryStatus>('all');
  const deliveries = useDeliveries(endpoint.id, status);
  const redeliver = useRedeliver(endpoint.id);
  const colour: Record<string, string> = { delivered: 'green', pending: 'blue', failed: 'red' };
  return (
    <Stack gap="xs" component="section" aria-label={`Deliveries to ${endpoint.url}`}>
      <Group justify="space-between">
        <Title order={2} size="h4">
          Deliveries to {endpoint.url}
        </Title>
        <SegmentedControl
          size="xs"
          value={status}
          onChange={(value) => setStatus(value as DeliveryStatus)}
          data={['all', 'pending', 'delivered', 'failed']}
          aria-label="Delivery status"
        />
      </Group>
      <RecordTable
        error={deliveries.error}
        label="Deliveries"
        rows={deliveries.data?.items}
        rowKey={(d) => d.eventId}
        empty="No delivery in the last 30 days."
        minWidth={900}
        columns={[
          [
            'Event',
            (d) => (
              <>
                <Text size="sm" fw={500}>
                  {d.type}
                </Text>
                <Text size="xs" c="dimmed" ff="monospace">
                  {d.eventId}
                </Text>
              </>
            ),
          ],
          ['Raised', (d) => <DateTime value={d.createdAt} />],
          [
            'Status',
            (d) => (
              <>
                <Badge color={colour[d.status] ?? 'gray'} variant="dot" tt="none">
                  {d.status}
                </Badge>
                {d.nextAttemptAt && (
                  <Text size="xs" c="dimmed">
                    next <DateTime value={d.nextAttemptAt} />
                  </Text>
                )}
              </>
            ),
          ],
          [
            'Attempts',
            (d) => {
              const last = d.attempts.at(-1);
              return d.attempts.length === 0 ? (
                'none'
              ) : (
                <>
                  <Text size="sm">
                    {d.attempts.length}, last {last!.httpStatus === null ? 'no answer' : `HTTP ${last!.httpStatus}`} in {last!.durationMs} ms
                  </Text>
                  {last!.error && (
                    <Text size="xs" c="dimmed">
                      {last!.error}
                    </Text>
                  )}
                </>
              );
            },
          ],
          [
            'Actions',
            (d) => (
              <ConfirmButton
                compact
                label="Redeliver"
                title={`Redeliver ${d.type}`}
                consequence="The event is sent again with the same id and body, on a fresh retry schedule."
                action={bound(redeliver, d.eventId)}
              />
            ),
          ],
        ]}
      />
    </Stack>
  );
}

function AddEndpoint({ onClose }: { onClose: () => void }) {
  const add = useAddWebhook();
  const [url, setUrl] = useState('https://');
  const [description, setDescription] = useState('');
  const [all, setAll] = useState(true);
  const [events, setEvents] = useState<Set<string>>(new Set());
  const [secret, setSecret] = useState<string | null>(null);
  const problems = useProblems({
    url: !/^https?:\/\/[^\s/]+/.test(url.trim()) && 'An address such as https://example.com/hooks',
    events: !all && events.size === 0 && 'Choose at least one event',
  });
  const toggle = (event: string, on: boolean) => {
    const next = new Set(events);
    if (on) next.add(event);
    else next.delete(event);
    setEvents(next);
  };
  const submit = async () => {
    if (!problems.check()) return false;
    const done = await add.run({ url: url.trim(), events: all ? ['*'] : [...events], ...(description.trim() ? { description: description.trim() } : {}) });
    if (done) setSecret(done.value.secret);
    return done;
  };
  const shown = secret && (
    <Stack>
      <SecretOnce value={secret} label="signing secret" kept={SECRET_KEPT}>
        Give it to your receiver’s Standard Webhooks library.
      </SecretOnce>
      <Group justify="flex-end">
        <Button onClick={onClose}>Done</Button>
      </Group>
    </Stack>
  );
  return (
    <ModalForm title="Add endpoint" submit="Add" onClose={onClose} action={add} onSubmit={submit} done={shown || undefined} stayOpen>
      <TextInput
        label="URL"
        description="https:// to a public address"
        required
        maxLength={2048}
        value={url}
        onChange={(e) => setUrl(e.currentTarget.value)}
        error={problems.of('url')}
        data-autofocus
      />
      <TextInput label="Description" maxLength={500} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
      <Checkbox label="All events, including those added later" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} />
      {!all && (
        <SimpleGrid cols={{ base: 1, sm: 2 }} role="group" aria-label="Events">
          {EVENTS.map(([resource, types]) => (
            <Stack key={resource} gap={4}>
              <Text size="sm" fw={500}>
                {resource}
              </Text>
              {types.map((t) => (
                <Checkbox key={t} size="xs" label={t} checked={events.has(t)} onChange={(e) => toggle(t, e.currentTarget.checked)} />
              ))}
            </Stack>
          ))}
        </SimpleGrid>
      )}
      {problems.of('events') && (
        <Text size="sm" c="var(--mantine-color-error)">
          {problems.of('events')}
        </Text>
      )}
    </ModalForm>
  );
}

function RotateSecret({ endpoint, onClose }: { endpoint: Endpoint; onClose: () => void }) {
  const rotate = useRotateSecret(endpoint.id);
  const [overlap, setOverlap] = useState<number | string>(24);
  const [secret, setSecret] = useState<string | null>(null);
  const submit = async () => {
    const done = await rotate.run(Number(overlap));
    if (done) setSecret(done.value.secret);
    return done;
  };
  const shown = secret && (
    <Stack>
      <SecretOnce value={secret} label="new signing secret" kept={SECRET_KEPT} />
      <Group justify="flex-end">
        <Button onClick={onClose}>Done</Button>
      </Group>
    </Stack>
  );
  return (
    <ModalForm title="Rotate secret" submit="Rotate secret" onClose={onClose} action={rotate} onSubmit={submit} done={shown || undefined} stayOpen>
      <Text size="sm">
        A new secret signs every delivery to {endpoint.url} from now on. During the overlap the current one signs beside it, so receivers can switch without
        missing a delivery.
      </Text>
      <NumberInput label="Overlap (hours)" min={0} max={168} allowDecimal={false} value={overlap} onChange={setOverlap} maw={200} />
    </ModalForm>
  );
}
