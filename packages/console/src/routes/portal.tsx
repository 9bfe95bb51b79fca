import { Badge, Button, Card, Container, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { bound } from '../api/action';
import { ApiError } from '../api/client';
import { usePortalAirGap, usePortalDownload, usePortalLicence, usePortalLicences, usePortalMe, usePortalRelease, usePortalSignOut } from '../api/portal';
import { DateTime, download, Field, StatusBadge, TimeZoneOverride } from '../components/display';
import { ConfirmButton, Empty, ErrorText, Loading } from '../components/feedback';
import { AirGapActions } from '../components/air-gap';
import { UsageMeters } from '../components/usage-meters';
import { PortalDownloads } from './portal-downloads';

/** The customer's own view (DESIGN.md 12): their licences, downloads, and their machines to free. */
export default function Portal() {
  const me = usePortalMe();
  const licences = usePortalLicences(me.isSuccess);
  const signOut = usePortalSignOut();
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
          <Button variant="default" loading={signOut.busy} onClick={() => void signOut.run()}>
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
  const licence = usePortalLicence(lid);
  const release = usePortalRelease(lid);
  const save = usePortalDownload(lid);
  const airGap = usePortalAirGap(lid);
  if (licence.error) return <ErrorText error={licence.error} />;
  if (!licence.data) return <Loading />;
  const l = licence.data;
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
          <Button
            variant="light"
            loading={save.busy}
            onClick={async () => {
              const done = await save.run();
              if (done) download(done.value, `${lid}.lic`);
            }}
            aria-label={`Download the licence file of ${l.productName}`}
          >
            Download
          </Button>
        </Group>
        <ErrorText error={save.error} title="Not downloaded" />
        <SimpleGrid cols={{ base: 2, sm: 4 }}>
          <Field label="Type">{l.licenceType}</Field>
          <Field label="Expires">{l.expiresAt ? <DateTime value={l.expiresAt} withTime={false} /> : 'never'}</Field>
          <Field label="Machines">
            {l.seatsUsed} of {l.maxMachines}
          </Field>
          <Field label="Releases left">{l.releasesLeft === null ? 'no limit' : `${l.releasesLeft} in the last 30 days`}</Field>
        </SimpleGrid>
        <Text size="xs" c="dimmed" ff="monospace">
          {l.lid}
        </Text>
        {live.length === 0 ? (
          <Text size="sm" c="dimmed">
            No machine holds this licence yet.
          </Text>
        ) : (
          <Table aria-label={`Machines of ${l.productName}`}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Machine</Table.Th>
                <Table.Th>Since</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {live.map((m) => (
                <Table.Tr key={m.id}>
                  <Table.Td>
                    <Text span inherit style={{ whiteSpace: 'nowrap' }}>
                      Machine {m.id}
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
                      <Badge variant="default" tt="none">
                        named in the licence
                      </Badge>
                    ) : (
                      <ConfirmButton
                        compact
                        label="Release"
                        title={`Release machine ${m.id}`}
                        disabled={l.releasesLeft === 0}
                        consequence={`The licence stops working on this machine and can be used on another. ${
                          l.releasesLeft === null ? '' : `You have ${l.releasesLeft} ${l.releasesLeft === 1 ? 'release' : 'releases'} left in these 30 days.`
                        }`}
                        action={bound(release, m.id)}
                      />
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {l.usage.length > 0 && (
          <section aria-labelledby={`usage-${lid}`}>
            <Title order={2} size="h4" id={`usage-${lid}`} mb="xs">
              Usage
            </Title>
            <UsageMeters meters={l.usage} />
          </section>
        )}
        <PortalDownloads lid={lid} productName={l.productName} updatesUntil={l.updatesUntil} />
        {l.airGapActivation && <AirGapActions subject={lid} activate={airGap.activate} deactivate={airGap.deactivate} />}
        {l.releasesLeft === 0 && (
          <Text size="sm" c="dimmed">
            No releases are left in these 30 days: ask your vendor to free a machine.
          </Text>
        )}
      </Stack>
    </Card>
  );
}
