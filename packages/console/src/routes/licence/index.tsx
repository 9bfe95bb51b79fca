import { Anchor, Badge, Button, Card, Code, Group, Modal, NumberInput, Pagination, SimpleGrid, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { key, useCanWrite } from '../api/queries';
import { ConfirmButton, ErrorText, Guarded, Loading } from '../components/feedback';
import { CopyBox, DateTime, download, Field, HealthBadge, StatusBadge } from '../components/display';
import { splitClaims } from '../components/claims';
import { Leases } from '../components/leases';
import { RecordTable } from '../components/record-table';
import { AirGapActions } from '../components/air-gap';
import { defaultOf, ParamInput, type ParamValue, type ProductParam } from '../components/param-input';

export default function LicencePage() {
  const { slug = '', lid = '' } = useParams();
  const queryClient = useQueryClient();
  const write = useCanWrite();
  const path = { params: { path: { lid } } };
  const licence = useQuery({ queryKey: key('licence', lid), queryFn: () => unwrap(api().GET('/licenses/{lid}', path)) });
  const machines = useQuery({ queryKey: key('licence', lid, 'machines'), queryFn: () => unwrap(api().GET('/licenses/{lid}/machines', path)) });
  const versions = useQuery({ queryKey: key('licence', lid, 'versions'), queryFn: () => unwrap(api().GET('/licenses/{lid}/versions', path)) });
  const [activityPage, setActivityPage] = useState(1);
  const activity = useQuery({
    queryKey: key('licence', lid, 'activity', activityPage),
    queryFn: () => unwrap(api().GET('/licenses/{lid}/activity', { params: { path: { lid }, query: { limit: 20, offset: (activityPage - 1) * 20 } } })),
  });
  const [renewing, setRenewing] = useState(false);
  const [reason, setReason] = useState('');

  const refresh = () => Promise.all([queryClient.invalidateQueries({ queryKey: key('licence', lid) }), queryClient.invalidateQueries({ queryKey: key('licences') }), queryClient.invalidateQueries({ queryKey: key('dashboard') })]);
  const act = (action: 'revoke' | 'reinstate' | 'archive' | 'restore', body?: { reason?: string | null }) => async () => {
    await unwrap(api().POST(`/licenses/{lid}/${action}`, { params: { path: { lid } }, body: body ?? {} } as never));
    await refresh();
  };

  if (licence.error) return <ErrorText error={licence.error} />;
  if (!licence.data) return <Loading label="Loading the licence" />;
  const l = licence.data;
  const { params: declaredParams, ...restClaims } = splitClaims(l.claims);

  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-start" wrap="wrap">
        <div>
          <Anchor component={Link} to={`/o/${slug}/licences`} size="sm">
            ← Licences
          </Anchor>
          <Title order={1}>{l.licensee}</Title>
          <Group gap="xs">
            <StatusBadge status={l.status} />
            <HealthBadge health={l.checkHealth} />
            {l.archived && <Badge color="gray">archived</Badge>}
            <Text size="sm" c="dimmed">
              {l.productName} · {l.licenceType}
              {l.activation ? ` (${l.activation.toLowerCase()} activation)` : ''}
            </Text>
          </Group>
        </div>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Group gap="xs">
              {!l.archived && (
                <Button onClick={() => setRenewing(true)} disabled={disabled}>
                  Renew
                </Button>
              )}
              {!l.revoked && !l.archived && (
                <ConfirmButton label="Revoke" title="Revoke this licence" color="red" disabled={disabled} consequence="Online checks will answer REVOKED at once; an offline copy keeps working until it expires." onConfirm={act('revoke', { reason: reason.trim() || null })}>
                  <TextInput label="Reason" description="Shown to the application with its check" value={reason} onChange={(e) => setReason(e.currentTarget.value)} />
                </ConfirmButton>
              )}
              {l.revoked && !l.archived && (
                <Button variant="light" disabled={disabled} onClick={act('reinstate')}>
                  Reinstate
                </Button>
              )}
              {!l.archived && (l.status === 'REVOKED' || l.status === 'EXPIRED') && (
                <ConfirmButton label="Archive" title="Archive this licence" disabled={disabled} consequence="It leaves every list but the archived window; you can restore it later." onConfirm={act('archive')} />
              )}
              {l.archived && (
                <Button variant="light" disabled={disabled} onClick={act('restore')}>
                  Restore
                </Button>
              )}
            </Group>
          )}
        </Guarded>
      </Group>

      <Card withBorder>
        <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="lg" verticalSpacing="md">
          <Field label="Licence id">
            <Code>{l.lid}</Code>
          </Field>
          <Field label="Customer">
            {l.licensee}
            {l.licenseeEmail && <Text size="sm" c="dimmed">{l.licenseeEmail}</Text>}
          </Field>
          <Field label="Issued">
            <DateTime value={l.issuedAt} /> <Text span size="xs" c="dimmed">by {l.issuedBy}</Text>
          </Field>
          <Field label="Starts">{l.startsAt ? <DateTime value={l.startsAt} /> : 'at once'}</Field>
          <Field label="Expires">{l.expiresAt ? <DateTime value={l.expiresAt} /> : 'never (perpetual)'}</Field>
          <Field label="Grace">{l.graceDays} days</Field>
          <Field label={l.seatModel === 'FLOATING' ? 'Floating seats in use' : 'Seats'}>
            {l.seatsUsed} of {l.maxMachines} used {l.rebindCount > 0 && <Text span size="xs" c="dimmed">({l.rebindCount} released)</Text>}
          </Field>
          <Field label="Last check">
            <DateTime value={l.lastCheckedAt} />
          </Field>
          {l.revoked && (
            <Field label="Revoked">
              <DateTime value={l.revokedAt} /> {l.revokedReason && <Text size="sm">“{l.revokedReason}”</Text>}
            </Field>
          )}
          {l.renewedAt && (
            <Field label="Renewed">
              <DateTime value={l.renewedAt} />
            </Field>
          )}
        </SimpleGrid>
      </Card>

      <Notes lid={lid} notes={l.notes} allowed={write.allowed} reason={write.reason} onSaved={refresh} />

      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            Claims
          </Title>
          <Table withRowBorders={false} verticalSpacing={4}>
            <Table.Tbody>
              {[...Object.entries(restClaims), ...Object.entries(declaredParams)].map(([name, value]) => (
                <Table.Tr key={name}>
                  <Table.Td w={110}>
                    <Code>{name}</Code>
                  </Table.Td>
                  <Table.Td style={{ wordBreak: 'break-all' }}>{JSON.stringify(value)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Card>
        <Card withBorder>
          <Group justify="space-between" mb="sm">
            <Title order={2} size="h4">
              Licence string
            </Title>
            <Button variant="default" size="xs" onClick={() => download(l.licenseString, `${l.lid}.lic`)}>
              Download
            </Button>
          </Group>
          <CopyBox value={l.licenseString} label="licence string" />
        </Card>
      </SimpleGrid>

      {l.seatModel === 'FLOATING' ? (
        <Leases lid={lid} maxMachines={l.maxMachines} machines={machines.data} error={machines.error} write={write} onReleased={refresh} />
      ) : (
        <Card withBorder>
          <Group justify="space-between" mb="sm" wrap="wrap">
            <Title order={2} size="h4">
              Machines
            </Title>
            {l.licenceType !== 'OFFLINE' && !l.archived && (
              <Guarded allowed={write.allowed} reason={write.reason}>
                {(disabled) => (
                  <AirGapActions
                    subject={lid}
                    disabled={disabled}
                    activate={(request) => unwrap(api().POST('/licenses/{lid}/air-gap-activations', { params: { path: { lid } }, body: { request } }))}
                    deactivate={(code) => unwrap(api().POST('/licenses/{lid}/air-gap-deactivations', { params: { path: { lid } }, body: { code } }))}
                    onDone={() => Promise.all([refresh(), queryClient.invalidateQueries({ queryKey: key('licence', lid, 'machines') })])}
                  />
                )}
              </Guarded>
            )}
          </Group>
          <RecordTable
            label="Machines"
            card={{ actions: 'Action' }}
            error={machines.error}
            rows={machines.data}
            rowKey={(m) => m.id}
            empty="No machine is bound yet: the first valid check binds one."
            minWidth={760}
            columns={[
              [
                'Machine',
                (m) => (
                  <>
                    <Text fw={500}>{m.label ?? `Machine ${m.id}`}</Text>
                    {m.atIssue && <Badge size="xs" variant="outline">bound at issue</Badge>}
                    {m.airGapped && m.until && (
                      <Text size="xs" c="dimmed">
                        air-gapped until <DateTime value={m.until} withTime={false} />
                      </Text>
                    )}
                  </>
                ),
              ],
              [
                'Components',
                (m) => (
                  <Text size="xs" ff="monospace">
                    {Object.entries(m.parts)
                      .map(([part, hash]) => `${part} ${hash.slice(0, 6)}`)
                      .join(' · ')}
                  </Text>
                ),
              ],
              ['Bound', (m) => <DateTime value={m.boundAt} />],
              ['Last seen', (m) => <DateTime value={m.lastSeenAt} />],
              [
                'Released',
                (m) =>
                  m.releasedAt ? (
                    <>
                      <DateTime value={m.releasedAt} /> <Text span size="xs" c="dimmed">by {m.releasedBy}</Text>
                    </>
                  ) : (
                    <Text span c="dimmed" inherit>live</Text>
                  ),
              ],
              [
                'Action',
                (m) =>
                  m.live &&
                  !m.atIssue && (
                    <Guarded allowed={write.allowed} reason={write.reason}>
                      {(disabled) => (
                        <ConfirmButton
                          label="Release"
                          title={`Release ${m.label ?? `machine ${m.id}`}`}
                          disabled={disabled}
                          consequence="The seat is freed: that machine's next check binds again only if a seat is free."
                          onConfirm={async () => {
                            await unwrap(api().POST('/licenses/{lid}/release-binding', { params: { path: { lid } }, body: { machineId: m.id } }));
                            await Promise.all([refresh(), queryClient.invalidateQueries({ queryKey: key('licence', lid, 'machines') })]);
                          }}
                        />
                      )}
                    </Guarded>
                  ),
              ],
            ]}
          />
        </Card>
      )}

      <Card withBorder>
        <Title order={2} size="h4" mb="sm">
          Superseded terms
        </Title>
        <RecordTable
          label="Superseded terms"
          card={{ actions: 'Download' }}
          error={versions.error}
          rows={versions.data}
          rowKey={(v) => v.versionNo}
          empty="Never renewed."
          minWidth={560}
          columns={[
            ['Term', (v) => `#${v.versionNo}`],
            ['Issued', (v) => <DateTime value={v.issuedAt} />],
            ['Expired', (v) => (v.expiresAt ? <DateTime value={v.expiresAt} /> : 'perpetual')],
            [
              'Download',
              (v) => (
                <Button
                  size="xs"
                  variant="default"
                  aria-label={`Download term ${v.versionNo}`}
                  onClick={async () => {
                    const term = await unwrap(api().GET('/licenses/{lid}/versions/{versionNo}', { params: { path: { lid, versionNo: v.versionNo } } }));
                    download(term.licenseString, `${lid}-term-${v.versionNo}.lic`);
                  }}
                >
                  Download
                </Button>
              ),
            ],
          ]}
        />
      </Card>

      <Card withBorder>
        <Title order={2} size="h4" mb="sm">
          Activity
        </Title>
        <ErrorText error={activity.error} />
        <Stack gap={6}>
          {(activity.data?.items ?? []).map((entry) => (
            <Group key={entry.id} gap="sm" align="flex-start" style={{ rowGap: 0 }}>
              <Text size="sm" c="dimmed" w={180} style={{ flexShrink: 0 }}>
                <DateTime value={entry.at} />
              </Text>
              {/* Beside the time where there is room, under it on a phone. */}
              <Text size="sm" style={{ flex: '1 1 240px' }}>
                <b>{entry.actor}</b> · {entry.summary}
              </Text>
            </Group>
          ))}
        </Stack>
        {activity.data && activity.data.total > 20 && <Pagination mt="sm" size="sm" total={Math.ceil(activity.data.total / 20)} value={activityPage} onChange={setActivityPage} />}
      </Card>

      <Renew lid={lid} productId={l.productId} params={declaredParams} opened={renewing} onClose={() => setRenewing(false)} onRenewed={refresh} />
    </Stack>
  );
}

function Notes(props: { lid: string; notes: string | null; allowed: boolean; reason: string; onSaved: () => Promise<unknown> }) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(props.notes ?? '');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => setText(props.notes ?? ''), [props.notes]);
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      await unwrap(api().PUT('/licenses/{lid}/notes', { params: { path: { lid: props.lid } }, body: { notes: text.trim() ? text : null } }));
      await props.onSaved();
      setEditing(false);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder>
      <Group justify="space-between" mb="xs">
        <Title order={2} size="h4">
          Notes
        </Title>
        {!editing && (
          <Guarded allowed={props.allowed} reason={props.reason}>
            {(disabled) => (
              <Button size="xs" variant="default" disabled={disabled} onClick={() => setEditing(true)}>
                Edit notes
              </Button>
            )}
          </Guarded>
        )}
      </Group>
      {editing ? (
        <Stack gap="xs">
          <Textarea label="Notes" description="Never signed into the licence" autosize minRows={3} value={text} onChange={(e) => setText(e.currentTarget.value)} />
          <ErrorText error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setEditing(false)}>
              Cancel
            </Button>
            <Button loading={busy} onClick={save}>
              Save notes
            </Button>
          </Group>
        </Stack>
      ) : (
        <Text size="sm" c={props.notes ? undefined : 'dimmed'} style={{ whiteSpace: 'pre-wrap' }}>
          {props.notes ?? 'No notes.'}
        </Text>
      )}
    </Card>
  );
}

/** The renewal form, prefilled with the product's defaults and the licence's current parameters. */
function Renew(props: { lid: string; productId: number; params: Record<string, unknown>; opened: boolean; onClose: () => void; onRenewed: () => Promise<unknown> }) {
  const form = useQuery({
    queryKey: key('products', String(props.productId), 'form'),
    queryFn: () => unwrap(api().GET('/products/{id}/form', { params: { path: { id: props.productId } } })),
    enabled: props.opened,
  });
  const [validity, setValidity] = useState<number | ''>('');
  const [grace, setGrace] = useState<number | ''>('');
  const [issueDate, setIssueDate] = useState('');
  const [values, setValues] = useState<Record<string, ParamValue>>({});
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!form.data) return;
    setValidity(form.data.defaults.validityMonths ?? '');
    setGrace(form.data.defaults.graceDays);
    setValues(Object.fromEntries((form.data.params as ProductParam[]).map((p) => [p.key, (props.params[p.key] as ParamValue | undefined) ?? defaultOf(p)])));
  }, [form.data, props.params]);
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const params = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null));
      await unwrap(
        api().POST('/licenses/{lid}/renew', {
          params: { path: { lid: props.lid } },
          body: {
            ...(validity !== '' ? { validityMonths: validity } : {}),
            ...(grace !== '' ? { graceDays: grace } : {}),
            ...(issueDate ? { issueDate } : {}),
            params: params as Record<string, never>,
          },
        }),
      );
      await props.onRenewed();
      props.onClose();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal closeButtonProps={{ "aria-label": "Close" }} opened={props.opened} onClose={props.onClose} title="Renew licence" size="lg">
      {!form.data ? (
        <Loading />
      ) : (
        <Stack>
          <Text size="sm" c="dimmed">
            Without a date, the new term runs from the later of today and the current expiry, so renewing early never shortens it.
          </Text>
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <NumberInput label="Validity (months)" description="0 = perpetual" min={0} max={1200} allowDecimal={false} value={validity} onChange={(v) => setValidity(typeof v === 'number' ? v : '')} />
            <NumberInput label="Grace days" min={0} max={3650} allowDecimal={false} value={grace} onChange={(v) => setGrace(typeof v === 'number' ? v : '')} />
            <TextInput label="Issue date" description="Optional" type="date" value={issueDate} onChange={(e) => setIssueDate(e.currentTarget.value)} />
          </SimpleGrid>
          {(form.data.params as ProductParam[]).map((param) => (
            <ParamInput key={param.key} param={param} value={values[param.key] ?? null} onChange={(value) => setValues((all) => ({ ...all, [param.key]: value }))} />
          ))}
          <ErrorText error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={props.onClose}>
              Cancel
            </Button>
            <Button loading={busy} onClick={submit}>
              Renew licence
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
