import { Button, Group, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { bound } from '../../api/action';
import { useCreatePortalLink, usePortalLinks, useRevokePortalLink } from '../../api/customers';
import { useCanWrite } from '../../api/session';
import { DateTime, SecretOnce } from '../../components/display';
import { ConfirmButton, ErrorText, Guarded } from '../../components/feedback';
import { RecordTable } from '../../components/record-table';

/** A customer's portal links (DESIGN.md 12): create one (shown once), see them, revoke one. */
export function PortalLinks({ customerId, name }: { customerId: number; name: string }) {
  const write = useCanWrite();
  const links = usePortalLinks(customerId);
  const create = useCreatePortalLink(customerId);
  const revoke = useRevokePortalLink(customerId);
  const [created, setCreated] = useState<{ url: string; expiresAt: string } | null>(null);
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
            <Button
              variant="light"
              loading={create.busy}
              onClick={async () => {
                const done = await create.run();
                if (done) setCreated(done.value);
              }}
              disabled={disabled}
            >
              Portal link
            </Button>
          )}
        </Guarded>
      </Group>
      <Stack gap="sm">
        <ErrorText error={create.error} title="No portal link made" />
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
            [
              'Created',
              (l) => (
                <>
                  <DateTime value={l.createdAt} />{' '}
                  <Text span size="xs" c="dimmed">
                    by {l.createdBy}
                  </Text>
                </>
              ),
            ],
            ['Expires', (l) => <DateTime value={l.expiresAt} />],
            [
              'Used',
              (l) =>
                l.usedAt ? (
                  <DateTime value={l.usedAt} />
                ) : (
                  <Text span c="dimmed" inherit>
                    not yet
                  </Text>
                ),
            ],
            [
              'State',
              (l) =>
                l.revokedAt ? (
                  <Text span c="dimmed" inherit>
                    revoked
                  </Text>
                ) : (
                  <ConfirmButton
                    compact
                    label="Revoke"
                    color="red"
                    title="Revoke this portal link"
                    disabled={!write.allowed}
                    consequence="The link stops working, and a portal opened with it ends at once."
                    action={bound(revoke, l.id)}
                  />
                ),
            ],
          ]}
        />
      </Stack>
    </section>
  );
}
