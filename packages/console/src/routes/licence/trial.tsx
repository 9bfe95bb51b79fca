import { Anchor, Button, Card, Group, NumberInput, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { besideField, fieldOf } from '../../api/client';
import { useExtendTrial, useResetTrialLedger, useTrialInstallations, type Licence } from '../../api/licences';
import { roleName, useMe } from '../../api/session';
import { DateTime, Field } from '../../components/display';
import { ConfirmButton, Guarded } from '../../components/feedback';
import { IssueLicence } from '../../components/issue-licence';
import { ModalForm, useProblems } from '../../components/modal-form';
import { RecordTable } from '../../components/record-table';

type Write = { allowed: boolean; reason: string };
const DAY = 86_400_000;

/** A trial's page (DESIGN.md 18): its start, end and installations; Extend, Convert and Reset where they happen. */
export function Trial({ licence: l, write }: { licence: Licence; write: Write }) {
  const { slug = '' } = useParams();
  const me = useMe().data;
  const [extending, setExtending] = useState(false);
  const [converting, setConverting] = useState(false);
  const reset = useResetTrialLedger(l.lid);
  const installations = useTrialInstallations(l.lid, true);
  // ISSUER and VIEWER may not reset the ledger (DESIGN.md 18); an administrator may.
  const admin = me?.role === 'ORG_ADMIN';
  const converted = l.trialConvertedTo !== null;
  return (
    <Card withBorder>
      <Group justify="space-between" mb="sm" wrap="wrap" align="flex-start">
        <Title order={2} size="h4">
          Trial
        </Title>
        <Group gap="xs">
          <Guarded allowed={write.allowed && !l.archived} reason={l.archived ? 'An archived trial is not extended: restore it first.' : write.reason}>
            {(disabled) => (
              <Button variant="light" disabled={disabled} onClick={() => setExtending(true)}>
                Extend trial
              </Button>
            )}
          </Guarded>
          <Guarded allowed={write.allowed && !converted} reason={converted ? 'This trial is already converted to a paid licence.' : write.reason}>
            {(disabled) => (
              <Button disabled={disabled} onClick={() => setConverting(true)}>
                Convert to paid licence
              </Button>
            )}
          </Guarded>
          <Guarded
            allowed={admin && l.trialLedgerResetAt === null}
            reason={
              l.trialLedgerResetAt !== null
                ? 'The ledger entry of this trial is already reset.'
                : `Only an Administrator resets the trial ledger; your role is ${roleName(me?.role)}.`
            }
          >
            {(disabled) => (
              <ConfirmButton
                label="Reset trial ledger"
                title="Reset the trial ledger"
                color="red"
                disabled={disabled}
                consequence="This trial stops counting against its machine: that machine, and machines like it, may then start a new trial. This trial keeps running to its end."
                confirmLabel="Reset"
                action={reset}
              />
            )}
          </Guarded>
        </Group>
      </Group>
      <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="lg" verticalSpacing="md" mb="md">
        <Field label="Started">
          <DateTime value={l.trialStartedAt} />
        </Field>
        <Field label="Ends">
          <DateTime value={l.expiresAt} />
        </Field>
        <Field label="Converted">
          {l.trialConvertedTo ? (
            <>
              <Anchor component={Link} to={`/o/${slug}/licences/${l.trialConvertedTo}`}>
                Paid licence
              </Anchor>{' '}
              <Text span size="xs" c="dimmed">
                <DateTime value={l.trialConvertedAt} />
              </Text>
            </>
          ) : (
            <Text span c="dimmed" inherit>
              not yet
            </Text>
          )}
        </Field>
        <Field label="Trial ledger">
          {l.trialLedgerResetAt ? (
            <>
              reset <DateTime value={l.trialLedgerResetAt} />
            </>
          ) : (
            'keeps this machine from a second trial'
          )}
        </Field>
      </SimpleGrid>
      <Title order={3} size="h5" mb="xs">
        Installations
      </Title>
      <RecordTable
        label="Installations"
        error={installations.error}
        rows={installations.data?.map((installation, n) => ({ ...installation, n: n + 1 }))}
        rowKey={(i) => i.devicePublicKey}
        empty="No installation has started this trial yet."
        minWidth={420}
        columns={[
          ['Installation', (i) => `#${i.n}`],
          ['First seen', (i) => <DateTime value={i.firstSeenAt} />],
        ]}
      />
      <ExtendTrial licence={l} opened={extending} onClose={() => setExtending(false)} />
      <IssueLicence opened={converting} onClose={() => setConverting(false)} trial={{ lid: l.lid, productId: l.productId, email: l.licenseeEmail }} />
    </Card>
  );
}

/** Extends a trial by whole days from the later of now and its current end (DESIGN.md 18). */
function ExtendTrial({ licence: l, opened, onClose }: { licence: Licence; opened: boolean; onClose: () => void }) {
  const extend = useExtendTrial(l.lid);
  const [days, setDays] = useState<number | ''>(7);
  const problems = useProblems({ days: days === '' && 'Enter the days to add' });
  const message = extend.error instanceof Error ? extend.error.message : '';
  const beside = fieldOf(extend.error) === 'days';
  const from = Math.max(Date.now(), l.expiresAt ? Date.parse(l.expiresAt) : 0);
  const close = () => {
    extend.reset();
    onClose();
  };
  return (
    <ModalForm
      title="Extend trial"
      submit="Extend trial"
      opened={opened}
      onClose={close}
      action={{ busy: extend.busy, error: beside ? null : extend.error }}
      onSubmit={() => problems.check() && extend.run({ days: days as number })}
    >
      <Stack gap="xs">
        <NumberInput
          label="Days to add"
          description={
            days === '' ? (
              'From the later of now and the current end'
            ) : (
              <>
                The trial then ends <DateTime value={new Date(from + days * DAY).toISOString().replace(/\.\d{3}Z$/, 'Z')} />
              </>
            )
          }
          min={1}
          max={365}
          allowDecimal={false}
          value={days}
          onChange={(v) => setDays(typeof v === 'number' ? v : '')}
          error={problems.of('days') ?? (beside ? besideField(message) : undefined)}
        />
        <Text size="sm" c="dimmed">
          The application gets the new term with its next start or check; a trial lasts at most 365 days from its start.
        </Text>
      </Stack>
    </ModalForm>
  );
}
