import { Anchor, Button, Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useCustomer, useDeleteCustomer, useEraseCustomer } from '../../api/customers';
import { useLicencePage } from '../../api/licences';
import { useCanErase, useCanWrite } from '../../api/session';
import { CustomerForm } from '../../components/customer-form';
import { DateTime, Field } from '../../components/display';
import { Erasure } from '../../components/erasure';
import { ConfirmButton, Empty, ErrorText, Guarded, Loading } from '../../components/feedback';
import { IssueLicence } from '../../components/issue-licence';
import { LicenceTable } from '../../components/licence-table';
import { Pager } from '../../components/record-table';
import { PortalLinks } from './portal-links';

const PAGE = 20;

export default function CustomerPage() {
  const { slug = '', id = '' } = useParams();
  const navigate = useNavigate();
  const write = useCanWrite();
  const customer = useCustomer(Number(id));
  const remove = useDeleteCustomer(Number(id));
  const erase = useCanErase();
  const eraseData = useEraseCustomer(Number(id));
  const [offset, setOffset] = useState(0);
  const licences = useLicencePage({ customerId: Number(id), window: 'all', limit: PAGE, offset });
  const [editing, setEditing] = useState(false);
  const [issuing, setIssuing] = useState(false);

  if (customer.error) return <ErrorText error={customer.error} />;
  if (!customer.data) return <Loading label="Loading the customer" />;
  const c = customer.data;

  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-start" wrap="wrap">
        <div>
          <Anchor component={Link} to={`/o/${slug}/customers`} size="sm">
            ← Customers
          </Anchor>
          <Title order={1}>{c.name}</Title>
          {c.email && <Text c="dimmed">{c.email}</Text>}
        </div>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Group gap="xs">
              <Button onClick={() => setIssuing(true)} disabled={disabled}>
                Issue licence
              </Button>
              <Button variant="light" onClick={() => setEditing(true)} disabled={disabled}>
                Edit
              </Button>
              <ConfirmButton
                label="Delete"
                title={`Delete ${c.name}`}
                color="red"
                disabled={disabled}
                consequence={
                  c.licenseCount > 0
                    ? `${c.name} holds ${c.licenseCount.toLocaleString()} licences; the service refuses to delete a customer who holds licences.`
                    : 'The customer record is deleted. This cannot be undone.'
                }
                action={{
                  ...remove,
                  run: async () => {
                    const done = await remove.run();
                    if (done) navigate(`/o/${slug}/customers`);
                    return done;
                  },
                }}
              />
              {/* A Viewer sees the reason of the buttons around it; an Issuer this one's own. */}
              <Guarded allowed={disabled || erase.allowed} reason={erase.reason}>
                {(notAdmin) => (
                  <ConfirmButton
                    label="Erase personal data"
                    title={`Erase ${c.name}’s personal data`}
                    color="red"
                    confirmLabel="Erase"
                    disabled={disabled || notAdmin}
                    consequence="Emails still waiting are not sent. This cannot be undone."
                    action={eraseData}
                  >
                    <Erasure
                      erased={[
                        `the name (it becomes “Erased customer ${c.id}”), the email address and the notes`,
                        `on each of its ${c.licenseCount === 1 ? 'licence' : `${c.licenseCount.toLocaleString()} licences`}: the licensee’s name and email, the notes, the machines’ labels and the addresses its emails went to`,
                        'those values in the activity (shown as “[erased]”)',
                      ]}
                      stays={['the licences themselves, which keep working']}
                    />
                  </ConfirmButton>
                )}
              </Guarded>
            </Group>
          )}
        </Guarded>
      </Group>
      <Card withBorder>
        <SimpleGrid cols={{ base: 1, xs: 3 }}>
          <Field label="Licences">{c.licenseCount.toLocaleString()}</Field>
          <Field label="Created">
            <DateTime value={c.createdAt} />{' '}
            {c.createdBy && (
              <Text span size="xs" c="dimmed">
                by {c.createdBy}
              </Text>
            )}
          </Field>
          <Field label="Notes">
            {c.notes ? (
              <Text style={{ whiteSpace: 'pre-wrap' }}>{c.notes}</Text>
            ) : (
              <Text span c="dimmed" inherit>
                —
              </Text>
            )}
          </Field>
        </SimpleGrid>
      </Card>
      <section aria-labelledby="licences-heading">
        <Title order={2} size="h4" id="licences-heading" mb="xs">
          Licences
        </Title>
        <ErrorText error={licences.error} />
        {!licences.data ? (
          !licences.error && <Loading label="Loading licences" />
        ) : licences.data.items.length === 0 ? (
          <Empty>{c.name} holds no licence yet.</Empty>
        ) : (
          <Stack gap="sm">
            <LicenceTable items={licences.data.items} stale={licences.isPlaceholderData} />
            <Pager offset={offset} size={PAGE} shown={licences.data.items.length} total={licences.data.total} onOffset={setOffset} />
          </Stack>
        )}
      </section>
      <PortalLinks customerId={c.id} name={c.name} />
      {editing && <CustomerForm customer={c} onClose={() => setEditing(false)} />}
      {issuing && <IssueLicence opened onClose={() => setIssuing(false)} customer={{ name: c.name, email: c.email }} />}
    </Stack>
  );
}
