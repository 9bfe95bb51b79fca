import { Anchor, Badge, Button, Card, Code, Group, Pagination, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import {
  downloadTerm,
  useArchive,
  useEraseLicence,
  useLicence,
  useLicenceActivity,
  useReinstate,
  useResetDownloadLinks,
  useRestore,
  useRevoke,
  useVersions,
  type Licence,
} from '../../api/licences';
import { useProduct } from '../../api/products';
import { useCanErase, useCanWrite } from '../../api/session';
import { useAction } from '../../api/action';
import { ClaimsTable } from '../../components/claims';
import { Erasure } from '../../components/erasure';
import { CopyBox, DateTime, days, download, Field, HealthBadge, Sentence, StatusBadge, TrialBadge } from '../../components/display';
import { ConfirmButton, ErrorText, Guarded, Loading } from '../../components/feedback';
import type { ProductParam } from '../../components/param-input';
import { RecordTable } from '../../components/record-table';
import { Emails } from './emails';
import { Leases } from './leases';
import { Machines } from './machines';
import { Notes } from './notes';
import { Renew } from './renew';
import { Trial } from './trial';
import { Usage } from './usage';

export default function LicencePage() {
  const { slug = '', lid = '' } = useParams();
  const write = useCanWrite();
  const erase = useCanErase();
  const licence = useLicence(lid);
  const product = useProduct(licence.data?.productId ?? null);
  const [renewing, setRenewing] = useState(false);

  if (licence.error) return <ErrorText error={licence.error} />;
  if (!licence.data) return <Loading label="Loading the licence" />;
  const l = licence.data;
  const labels = Object.fromEntries(((product.data?.params ?? []) as ProductParam[]).map((p) => [p.key, p.label]));

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
            {l.trial && <TrialBadge />}
            {l.archived && <Badge color="gray">archived</Badge>}
            <Text size="sm" c="dimmed">
              {l.productName} · {l.licenceType}
              {l.activation ? ` (${l.activation.toLowerCase()} activation)` : ''}
            </Text>
          </Group>
        </div>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => <Lifecycle licence={l} disabled={disabled} erase={erase} onRenew={() => setRenewing(true)} />}
        </Guarded>
      </Group>

      <Card withBorder>
        <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="lg" verticalSpacing="md">
          <Field label="Licence id">
            <Code>{l.lid}</Code>
          </Field>
          <Field label="Customer">
            {l.trial ? (
              <Text span c="dimmed" inherit>
                none: a trial
              </Text>
            ) : (
              l.licensee
            )}
            {l.licenseeEmail && (
              <Text size="sm" c="dimmed">
                {l.licenseeEmail}
              </Text>
            )}
            {l.convertedFromTrial && (
              <Anchor component={Link} to={`/o/${slug}/licences/${l.convertedFromTrial}`} size="sm" display="block">
                Converted from a trial
              </Anchor>
            )}
          </Field>
          <Field label="Issued">
            <DateTime value={l.issuedAt} />{' '}
            <Text span size="xs" c="dimmed">
              by {l.issuedBy}
            </Text>
          </Field>
          <Field label="Starts">{l.startsAt ? <DateTime value={l.startsAt} /> : 'at once'}</Field>
          <Field label="Expires">{l.expiresAt ? <DateTime value={l.expiresAt} /> : 'never (perpetual)'}</Field>
          <Field label="Grace">{days(l.graceDays)}</Field>
          <Field label="Updates until">
            {l.updatesUntil ? <DateTime value={l.updatesUntil} withTime={false} /> : 'every release'}
            {l.updatesMonths !== null && (
              <Text span size="xs" c="dimmed">
                {' '}
                ({l.updatesMonths} {l.updatesMonths === 1 ? 'month' : 'months'} from each term)
              </Text>
            )}
          </Field>
          <Field label={l.seatModel === 'FLOATING' ? 'Floating seats in use' : 'Seats'}>
            {l.seatsUsed} of {l.maxMachines} used{' '}
            {l.rebindCount > 0 && (
              <Text span size="xs" c="dimmed">
                ({l.rebindCount} released)
              </Text>
            )}
          </Field>
          <Field label="Last check">
            {l.lastCheckedAt ? (
              <DateTime value={l.lastCheckedAt} />
            ) : (
              <Text span c="dimmed" inherit>
                never
              </Text>
            )}
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

      {l.trial && <Trial licence={l} write={write} />}
      <Notes lid={lid} notes={l.notes} write={write} />

      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            Claims
          </Title>
          <ClaimsTable claims={l.claims} labels={labels} />
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

      <Emails licence={l} write={write} />
      {l.meters.length > 0 && <Usage licence={l} write={write} />}
      {l.seatModel === 'FLOATING' ? (
        <Leases lid={lid} maxMachines={l.maxMachines} write={write} />
      ) : (
        <Machines licence={l} airGap={product.data?.airGapActivation === true} write={write} />
      )}
      <Terms lid={lid} />
      <LicenceActivity lid={lid} />
      <Renew
        lid={lid}
        productId={l.productId}
        claims={l.claims}
        meters={l.meters}
        updatesMonths={l.updatesMonths}
        offline={l.licenceType === 'OFFLINE'}
        opened={renewing}
        onClose={() => setRenewing(false)}
      />
    </Stack>
  );
}

/** Renew, Revoke, Reinstate, Archive and Restore, as they apply; a refusal shows under the buttons. */
function Lifecycle({
  licence: l,
  disabled,
  erase,
  onRenew,
}: {
  licence: Licence;
  disabled: boolean;
  erase: { allowed: boolean; reason: string };
  onRenew: () => void;
}) {
  const [reason, setReason] = useState('');
  const revoke = useRevoke(l.lid);
  const reinstate = useReinstate(l.lid);
  const archive = useArchive(l.lid);
  const restore = useRestore(l.lid);
  const resetLinks = useResetDownloadLinks(l.lid);
  const eraseData = useEraseLicence(l.lid);
  return (
    <Stack gap="xs" maw={520}>
      <Group gap="xs">
        {/* A trial is extended instead (its own card), never renewed. */}
        {!l.archived && !l.trial && (
          <Button onClick={onRenew} disabled={disabled}>
            Renew
          </Button>
        )}
        {!l.revoked && !l.archived && (
          <ConfirmButton
            label="Revoke"
            title="Revoke this licence"
            color="red"
            disabled={disabled}
            consequence="Online checks will answer REVOKED at once; an offline copy keeps working until it expires."
            action={{ ...revoke, run: () => revoke.run(reason.trim() || null) }}
          >
            <TextInput
              label="Reason"
              description="Shown to the application with its check"
              maxLength={500}
              value={reason}
              onChange={(e) => setReason(e.currentTarget.value)}
            />
          </ConfirmButton>
        )}
        {l.revoked && !l.archived && (
          <Button variant="light" disabled={disabled} loading={reinstate.busy} onClick={() => void reinstate.run()}>
            Reinstate
          </Button>
        )}
        {!l.archived && (l.status === 'REVOKED' || l.status === 'EXPIRED') && (
          <ConfirmButton
            label="Archive"
            title="Archive this licence"
            disabled={disabled}
            consequence="It leaves every list but the archived window; you can restore it later."
            action={archive}
          />
        )}
        {l.archived && (
          <Button variant="light" disabled={disabled} loading={restore.busy} onClick={() => void restore.run()}>
            Restore
          </Button>
        )}
        <ConfirmButton
          label="Reset download links"
          title="Reset the download links"
          disabled={disabled}
          consequence="The applications get new update links the next time they ask; feed URLs copied before (into an updater's settings, a script) stop working at once. Download links already handed out run out by themselves within the hour."
          action={resetLinks}
        />
        {/* A Viewer sees the reason of the buttons around it; an Issuer this one's own. */}
        <Guarded allowed={disabled || erase.allowed} reason={erase.reason}>
          {(notAdmin) => (
            <ConfirmButton
              label="Erase personal data"
              title="Erase this licence’s personal data"
              color="red"
              confirmLabel="Erase"
              disabled={disabled || notAdmin}
              consequence="Emails still waiting are not sent. This cannot be undone."
              action={eraseData}
            >
              <Erasure
                erased={[
                  ...(l.trial ? ['the trial’s email address'] : []),
                  'the notes',
                  'the machines’ labels',
                  'the addresses its emails went to',
                  'those values in its activity (shown as “[erased]”)',
                ]}
                stays={l.trial ? [] : ['the customer’s name and email, until the customer is erased on its page']}
              />
            </ConfirmButton>
          )}
        </Guarded>
      </Group>
      <ErrorText error={reinstate.error} title="Not reinstated" />
      <ErrorText error={restore.error} title="Not restored" />
    </Stack>
  );
}

/** The terms a renewal replaced, each downloadable as it was signed. */
function Terms({ lid }: { lid: string }) {
  const versions = useVersions(lid);
  const save = useAction(async (versionNo: number) => download((await downloadTerm(lid, versionNo)).licenseString, `${lid}-term-${versionNo}.lic`));
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="sm">
        Superseded terms
      </Title>
      <ErrorText error={save.error} title="Not downloaded" />
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
              <Button size="xs" variant="default" aria-label={`Download term ${v.versionNo}`} onClick={() => void save.run(v.versionNo)}>
                Download
              </Button>
            ),
          ],
        ]}
      />
    </Card>
  );
}

const ACTIVITY_PAGE = 20;

function LicenceActivity({ lid }: { lid: string }) {
  const [page, setPage] = useState(1);
  const activity = useLicenceActivity(lid, ACTIVITY_PAGE, (page - 1) * ACTIVITY_PAGE);
  return (
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
              <b>{entry.actor}</b> · <Sentence text={entry.summary} />
            </Text>
          </Group>
        ))}
      </Stack>
      {activity.data && activity.data.total > ACTIVITY_PAGE && (
        <Pagination mt="sm" size="sm" total={Math.ceil(activity.data.total / ACTIVITY_PAGE)} value={page} onChange={setPage} />
      )}
    </Card>
  );
}
