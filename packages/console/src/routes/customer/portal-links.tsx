import { Button, Group, Stack, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { key, useCanWrite } from '../api/queries';
import { DateTime, SecretOnce } from './display';
import { ConfirmButton, ErrorText, Guarded } from './feedback';
import { RecordTable } from './record-table';

/** A customer's portal links (DESIGN.md 12): create one (shown once), see them, revoke one. */
export function PortalLinks({ customerId, name }: { customerId: number; name: string }) {
  const write = useCanWrite();
  const queryClient = useQueryClient();
  const path = { params: { path: { id: customerId } } };
  const links = useQuery({ queryKey: key('customers', String(customerId), 'portal-links'), queryFn: () => unwrap(api().GET('/customers/{id}/portal-links', path)) });
  const [created, setCreated] = useState<{ url: string; expiresAt: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: key('customers', String(customerId), 'portal-links') });
  const create = async () => {
    setError(null);
    try {
      setCreated(await unwrap(api().POST('/customers/{id}/portal-links', path)));
      await refresh();
    } catch (e) {
      setError(e);
    }
  };
  const revoke = (linkId: number) => async () => {
    await unwrap(api().DELETE('/customers/{id}/portal-links/{linkId}', { params: { path: { id: customerId, linkId } } }));
    await refresh();
  };
  return (
    <section aria-labelledby="portal-heading">
      <Group justify="space-between" mb="xs">
        <div>
          <Title order={2} size="h4" id="portal-heading">
            Customer portal
          </Title>
          <Text size="sm" c="dimmed">
            A link lets {name} see their licences, download them and free a computer, within each product&apos;s limit.
          </Text>
        </div>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Button variant="light" onClick={create} disabled={disabled}>
              Portal link
            </Button>
          )}
        </Guarded>
      </Group>
      <Stack gap="sm">
        <ErrorText error={error} />
        {created && (
          <SecretOnce value={created.url} label="portal link">
            It works once, until <DateTime value={created.expiresAt} />; send it to {name}.
          </SecretOnce>
        )}
        <RecordTable
          label="Portal links"
          card={{ actions: 'State' }}
          error={links.error}
          rows={links.data}
          rowKey={(l) => l.id}
          empty="No portal link yet."
          columns={[
            ['Created', (l) => (<><DateTime value={l.createdAt} /> <Text span size="xs" c="dimmed">by {l.createdBy}</Text></>)],
            ['Expires', (l) => <DateTime value={l.expiresAt} />],
            ['Used', (l) => (l.usedAt ? <DateTime value={l.usedAt} /> : <Text span c="dimmed" inherit>not yet</Text>)],
            [
              'State',
              (l) =>
                l.revokedAt ? (
                  <Text span c="dimmed" inherit>revoked</Text>
                ) : (
                  <ConfirmButton compact label="Revoke" color="red" title="Revoke this portal link" disabled={!write.allowed} consequence="The link stops working, and a portal opened with it ends at once." onConfirm={revoke(l.id)} />
                ),
            ],
          ]}
        />
      </Stack>
    </section>
  );
}
