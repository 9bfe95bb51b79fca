import { Badge, Button, Card, Container, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { api, ApiError, unwrap } from '../api/client';
import { DateTime, download, Field, StatusBadge, TimeZoneOverride } from '../components/display';
import { ConfirmButton, Empty, ErrorText, Loading } from '../components/feedback';
import { AirGapActions } from '../components/air-gap';

/** The customer's own view (DESIGN.md 12): their licences, downloads, and their machines to free. */
export default function Portal() {
  const { slug = '' } = useParams();
  const queryClient = useQueryClient();
  const me = useQuery({ queryKey: [slug, 'portal', 'me'], queryFn: () => unwrap(api().GET('/portal/me')), retry: false });
  const licences = useQuery({ queryKey: [slug, 'portal', 'licences'], queryFn: () => unwrap(api().GET('/portal/licenses')), enabled: me.isSuccess });
  if (me.error instanceof ApiError && me.error.status === 401) {
    return (
      <Container size="sm" py={80} component="main">
        <Title order={1}>Your session has ended</Title>
        <Text c="dimmed" mt="sm">
          Open a new portal link from your vendor to see your licences again.
        </Text>
      </Container>
    );
  }
  if (me.error) return <ErrorText error={me.error} />;
  if (!me.data) return <Loading />;
  const signOut = async () => {
    await api().POST('/portal/auth/logout');
    await queryClient.invalidateQueries({ queryKey: [slug, 'portal'] });
  };
  return (
    // The portal has no organisation session: dates are in the customer's own zone.
    <TimeZoneOverride.Provider value={Intl.DateTimeFormat().resolvedOptions().timeZone}>
      <Container size="md" py="lg" component="main">
        <Group justify="space-between" mb="lg" wrap="wrap">
          <div>
            <Text c="dimmed" size="sm">
              {me.data.organisation.name}
            </Text>
            <Title order={1}>Licences of {me.data.customer.name}</Title>
          </div>
          <Button variant="default" onClick={signOut}>
            Sign out
          </Button>
        </Group>
        <ErrorText error={licences.error} />
        {!licences.data ? (
          !licences.error && <Loading label="Loading your licences" />
        ) : licences.data.length === 0 ? (
          <Empty>You hold no licence.</Empty>
        ) : (
          <Stack>
            {licences.data.map((l) => (
              <LicenceCard key={l.lid} lid={l.lid} />
            ))}
          </Stack>
        )}
      </Container>
    </TimeZoneOverride.Provider>
  );
}

function LicenceCard({ lid }: { lid: string }) {
  const { slug = '' } = useParams();
  const queryClient = useQueryClient();
  const key = [slug, 'portal', 'licence', lid];
  const licence = useQuery({ queryKey: key, queryFn: () => unwrap(api().GET('/portal/licenses/{lid}', { params: { path: { lid } } })) });
  if (licence.error) return <ErrorText error={licence.error} />;
  if (!licence.data) return <Loading />;
  const l = licence.data;
  const save = async () => {
    const text = await unwrap(api().GET('/portal/licenses/{lid}/download', { params: { path: { lid } }, parseAs: 'text' }));
    download(text as string, `${lid}.lic`);
  };
  const release = (machineId: number) => async () => {
    const updated = await unwrap(api().POST('/portal/licenses/{lid}/release', { params: { path: { lid } }, body: { machineId } }));
    queryClient.setQueryData(key, updated);
    await queryClient.invalidateQueries({ queryKey: [slug, 'portal', 'licences'] });
  };
  const live = l.machines.filter((m) => m.live);
  return (
    <Card withBorder component="section" aria-labelledby={`licence-${lid}`}>
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap">
          <Group gap="xs">
            <Title order={2} size="h3" id={`licence-${lid}`}>
              {l.productName}
            </Title>
            <StatusBadge status={l.status} />
          </Group>
          <Button variant="light" onClick={save} aria-label={`Download the licence file of ${l.productName}`}>
            Download
          </Button>
        </Group>
        <SimpleGrid cols={{ base: 2, sm: 4 }}>
          <Field label="Type">{l.licenceType}</Field>
          <Field label="Expires">{l.expiresAt ? <DateTime value={l.expiresAt} withTime={false} /> : 'never'}</Field>
          <Field label="Computers">
            {l.seatsUsed} of {l.maxMachines}
          </Field>
          <Field label="Releases left">{l.releasesLeft === null ? 'no limit' : `${l.releasesLeft} this month`}</Field>
        </SimpleGrid>
        <Text size="xs" c="dimmed" ff="monospace">
          {l.lid}
        </Text>
        {live.length === 0 ? (
          <Text size="sm" c="dimmed">
            No computer holds this licence yet.
          </Text>
        ) : (
          <Table aria-label={`Computers of ${l.productName}`}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Computer</Table.Th>
                <Table.Th>Since</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {live.map((m) => (
                <Table.Tr key={m.id}>
                  <Table.Td>
                    <Text span inherit style={{ whiteSpace: 'nowrap' }}>
                      Computer {m.id}
                    </Text>
                    {m.airGapped && m.until && (
                      <Text size="xs" c="dimmed">
                        without internet, until <DateTime value={m.until} withTime={false} />
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <DateTime value={m.boundAt} withTime={false} />
                  </Table.Td>
                  <Table.Td ta="right">
                    {m.atIssue ? (
                      <Badge variant="default" tt="none">named in the licence</Badge>
                    ) : (
                      <ConfirmButton
                        compact
                        label="Release"
                        title={`Release computer ${m.id}`}
                        disabled={l.releasesLeft === 0}
                        consequence={`The licence stops working on this computer and can be used on another. ${
                          l.releasesLeft === null ? '' : `You have ${l.releasesLeft} ${l.releasesLeft === 1 ? 'release' : 'releases'} left in these 30 days.`
                        }`}
                        onConfirm={release(m.id)}
                      />
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {l.licenceType !== 'OFFLINE' && (
          <AirGapActions
            subject={lid}
            activate={(request) => unwrap(api().POST('/portal/licenses/{lid}/air-gap-activations', { params: { path: { lid } }, body: { request } }))}
            deactivate={(code) => unwrap(api().POST('/portal/licenses/{lid}/air-gap-deactivations', { params: { path: { lid } }, body: { code } }))}
            onDone={() => Promise.all([queryClient.invalidateQueries({ queryKey: key }), queryClient.invalidateQueries({ queryKey: [slug, 'portal', 'licences'] })])}
          />
        )}
        {l.releasesLeft === 0 && (
          <Text size="sm" c="dimmed">
            No releases are left in these 30 days: ask your vendor to free a computer.
          </Text>
        )}
      </Stack>
    </Card>
  );
}
