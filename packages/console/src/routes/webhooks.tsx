import { Badge, Button, Checkbox, Group, Modal, NumberInput, SegmentedControl, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap, type Answer } from '../api/client';
import { key, useIsAdmin } from '../api/queries';
import { DateTime, SecretOnce } from '../components/display';
import { ConfirmButton, ErrorText } from '../components/feedback';
import { RecordTable } from '../components/record-table';

type Endpoint = Answer<'/webhooks', 'get'>[number];
type Delivery = Answer<'/webhooks/{id}/deliveries', 'get'>['items'][number];

/** DESIGN.md 15's events, by the resource they concern. */
const EVENTS: Array<[string, string[]]> = [
  ['Licences', ['licence.issued', 'licence.renewed', 'licence.revoked', 'licence.reinstated', 'licence.archived', 'licence.restored', 'licence.expiring', 'licence.expired']],
  ['Machines', ['machine.bound', 'machine.released', 'machine.borrowed']],
  ['Products', ['product.created', 'product.updated', 'product.deleted', 'product.key_rotated', 'product.check_token_rotated']],
  ['Customers', ['customer.created', 'customer.updated', 'customer.deleted']],
];
const SECRET_KEPT = 'the service keeps it sealed and signs with it';

function Health({ endpoint }: { endpoint: Endpoint }) {
  const [colour, text] = !endpoint.enabled ? ['gray', 'disabled'] : endpoint.failingSince ? ['red', 'failing'] : endpoint.lastDeliveryAt ? ['green', 'healthy'] : ['blue', 'no attempt yet'];
  return (
    <Badge color={colour} variant="dot" tt="none" style={{ minWidth: 'max-content' }}>
      {text}
    </Badge>
  );
}

export default function Webhooks() {
  const admin = useIsAdmin();
  const queryClient = useQueryClient();
  const endpoints = useQuery({ queryKey: key('webhooks'), queryFn: () => unwrap(api().GET('/webhooks')), enabled: admin.allowed });
  const [adding, setAdding] = useState(false);
  const [rotating, setRotating] = useState<Endpoint | null>(null);
  const [shown, setShown] = useState<number | null>(null);
  const [tested, setTested] = useState<{ id: number; text: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: key('webhooks') });
  const path = (e: Endpoint) => ({ params: { path: { id: e.id } } });
  const setEnabled = (e: Endpoint, enabled: boolean) => async () => {
    await unwrap(api().PUT('/webhooks/{id}', { ...path(e), body: { enabled } }));
    await refresh();
  };
  const remove = (e: Endpoint) => async () => {
    await unwrap(api().DELETE('/webhooks/{id}', path(e)));
    if (shown === e.id) setShown(null);
    await refresh();
  };
  const test = async (e: Endpoint) => {
    try {
      const answer = await unwrap(api().POST('/webhooks/{id}/test', path(e)));
      const { httpStatus, error } = answer.attempt;
      setTested({ id: e.id, text: answer.status === 'delivered' ? `Test event delivered (HTTP ${httpStatus}).` : `Test event failed: ${error ?? `HTTP ${httpStatus}`}.` });
    } catch (err) {
      setTested({ id: e.id, text: err instanceof Error ? err.message : String(err) });
    }
    await refresh();
    await queryClient.invalidateQueries({ queryKey: key('webhook-deliveries', e.id) });
  };
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Webhooks</Title>
        {admin.allowed && <Button onClick={() => setAdding(true)}>Add endpoint</Button>}
      </Group>
      {!admin.allowed ? (
        <Text c="dimmed">{admin.reason.replace('members, API tokens and settings', 'members, API tokens, webhooks and settings')}</Text>
      ) : (
        <>
          <Text size="sm" c="dimmed">
            Licensing events are sent to your endpoints as signed POST requests (Standard Webhooks 1.0): verify them with its library and the endpoint’s secret. Failed deliveries are retried for about a day; an endpoint failing for five days is disabled.
          </Text>
          {tested && (
            <Text size="sm" role="status">
              {tested.text}
            </Text>
          )}
          <RecordTable
            error={endpoints.error}
            label="Webhook endpoints"
            rows={endpoints.data}
            rowKey={(e) => e.id}
            empty="No endpoint yet: events are not recorded until there is one."
            minWidth={900}
            columns={[
              ['Endpoint', (e) => (<><Text fw={500} span style={{ wordBreak: 'break-all' }}>{e.url}</Text>{e.description && <Text size="xs" c="dimmed">{e.description}</Text>}</>)],
              ['Events', (e) => (e.events.includes('*') ? 'all' : <Group gap={4}>{e.events.map((t) => <Badge key={t} variant="light" size="sm" tt="none">{t}</Badge>)}</Group>)],
              ['Health', (e) => (<><Health endpoint={e} />{e.disabledReason && <Text size="xs" c="dimmed">{e.disabledReason}</Text>}</>)],
              ['Last attempt', (e) => (<><DateTime value={e.lastDeliveryAt} />{e.lastDeliveryAt && <Text size="xs" c="dimmed">{e.lastStatus === null ? 'no answer' : `HTTP ${e.lastStatus}`}</Text>}</>)],
              [
                'Actions',
                (e) => (
                  <Group gap={6}>
                    <Button variant="light" size="compact-sm" onClick={() => setShown(shown === e.id ? null : e.id)} aria-expanded={shown === e.id}>
                      Deliveries
                    </Button>
                    <Button variant="light" size="compact-sm" onClick={() => test(e)}>
                      Send test event
                    </Button>
                    <Button variant="light" size="compact-sm" onClick={() => setRotating(e)}>
                      Rotate secret
                    </Button>
                    {e.enabled ? (
                      <ConfirmButton compact label="Disable" title={`Disable ${e.url}`} consequence="Nothing is sent to it while disabled; its events are kept as failed, so Recover can send them after you enable it again." onConfirm={setEnabled(e, false)} />
                    ) : (
                      <Button variant="light" size="compact-sm" onClick={setEnabled(e, true)}>
                        Enable
                      </Button>
                    )}
                    <ConfirmButton compact label="Delete" color="red" title={`Delete ${e.url}`} consequence="The endpoint and its delivery log are removed; nothing more is sent to it." onConfirm={remove(e)} />
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
  const queryClient = useQueryClient();
  const [status, setStatus] = useState('all');
  const deliveries = useQuery({
    queryKey: key('webhook-deliveries', endpoint.id, status),
    queryFn: () => unwrap(api().GET('/webhooks/{id}/deliveries', { params: { path: { id: endpoint.id }, query: status === 'all' ? {} : { status: status as 'pending' } } })),
    // While something waits for an attempt, the log follows the delivery loop.
    refetchInterval: (query) => (query.state.data?.items.some((d) => d.status === 'pending') ? 3_000 : false),
  });
  const redeliver = (d: Delivery) => async () => {
    await unwrap(api().POST('/webhooks/{id}/deliveries/{eventId}/redeliver', { params: { path: { id: endpoint.id, eventId: d.eventId } } }));
    await queryClient.invalidateQueries({ queryKey: key('webhook-deliveries', endpoint.id) });
    await queryClient.invalidateQueries({ queryKey: key('webhooks') });
  };
  const colour: Record<string, string> = { delivered: 'green', pending: 'blue', failed: 'red' };
  return (
    <Stack gap="xs" component="section" aria-label={`Deliveries to ${endpoint.url}`}>
      <Group justify="space-between">
        <Title order={2} size="h4">
          Deliveries to {endpoint.url}
        </Title>
        <SegmentedControl size="xs" value={status} onChange={setStatus} data={['all', 'pending', 'delivered', 'failed']} aria-label="Delivery status" />
      </Group>
      <RecordTable
        error={deliveries.error}
        label="Deliveries"
        rows={deliveries.data?.items}
        rowKey={(d) => d.eventId}
        empty="No delivery in the last 30 days."
        minWidth={900}
        columns={[
          ['Event', (d) => (<><Text size="sm" fw={500}>{d.type}</Text><Text size="xs" c="dimmed" ff="monospace">{d.eventId}</Text></>)],
          ['Raised', (d) => <DateTime value={d.createdAt} />],
          ['Status', (d) => (<><Badge color={colour[d.status] ?? 'gray'} variant="dot" tt="none">{d.status}</Badge>{d.nextAttemptAt && <Text size="xs" c="dimmed">next <DateTime value={d.nextAttemptAt} /></Text>}</>)],
          ['Attempts', (d) => {
            const last = d.attempts.at(-1);
            return d.attempts.length === 0 ? 'none' : (<><Text size="sm">{d.attempts.length}, last {last!.httpStatus === null ? 'no answer' : `HTTP ${last!.httpStatus}`} in {last!.durationMs} ms</Text>{last!.error && <Text size="xs" c="dimmed">{last!.error}</Text>}</>);
          }],
          ['Actions', (d) => <ConfirmButton compact label="Redeliver" title={`Redeliver ${d.type}`} consequence="The event is sent again with the same id and body, on a fresh retry schedule." onConfirm={redeliver(d)} />],
        ]}
      />
    </Stack>
  );
}

function AddEndpoint({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [url, setUrl] = useState('https://');
  const [description, setDescription] = useState('');
  const [all, setAll] = useState(true);
  const [events, setEvents] = useState<Set<string>>(new Set());
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const toggle = (event: string, on: boolean) => {
    const next = new Set(events);
    if (on) next.add(event);
    else next.delete(event);
    setEvents(next);
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const answer = await unwrap(api().POST('/webhooks', { body: { url: url.trim(), events: all ? ['*'] : [...events], ...(description.trim() ? { description: description.trim() } : {}) } }));
      setSecret(answer.secret);
      await queryClient.invalidateQueries({ queryKey: key('webhooks') });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened onClose={onClose} title="Add endpoint" size="lg">
      {secret ? (
        <Stack>
          <SecretOnce value={secret} label="signing secret" kept={SECRET_KEPT}>
            Give it to your receiver’s Standard Webhooks library.
          </SecretOnce>
          <Group justify="flex-end">
            <Button onClick={onClose}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit} aria-label="Add endpoint">
          <Stack>
            <TextInput label="URL" description="https:// to a public address" required maxLength={2048} value={url} onChange={(e) => setUrl(e.currentTarget.value)} data-autofocus />
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
            <ErrorText error={error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={busy} disabled={!all && events.size === 0}>
                Add
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

function RotateSecret({ endpoint, onClose }: { endpoint: Endpoint; onClose: () => void }) {
  const [overlap, setOverlap] = useState<number | string>(24);
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const answer = await unwrap(api().POST('/webhooks/{id}/rotate-secret', { params: { path: { id: endpoint.id } }, body: { overlapHours: Number(overlap) } }));
      setSecret(answer.secret);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened onClose={onClose} title="Rotate secret" size="lg">
      {secret ? (
        <Stack>
          <SecretOnce value={secret} label="new signing secret" kept={SECRET_KEPT} />
          <Group justify="flex-end">
            <Button onClick={onClose}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit} aria-label="Rotate secret">
          <Stack>
            <Text size="sm">A new secret signs every delivery to {endpoint.url} from now on. During the overlap the current one signs beside it, so receivers can switch without missing a delivery.</Text>
            <NumberInput label="Overlap (hours)" min={0} max={168} allowDecimal={false} value={overlap} onChange={setOverlap} maw={200} />
            <ErrorText error={error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={busy}>
                Rotate secret
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
