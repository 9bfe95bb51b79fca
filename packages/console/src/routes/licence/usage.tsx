import { Button, Card, Group, NumberInput, Select, Text, Textarea, Title } from '@mantine/core';
import { useState } from 'react';
import { besideField, fieldOf } from '../../api/client';
import { useAdjustUsage, useUsage, type Licence, type UsageEvent } from '../../api/licences';
import { DateTime } from '../../components/display';
import { ErrorText, Guarded } from '../../components/feedback';
import { ModalForm, useProblems } from '../../components/modal-form';
import { RecordTable } from '../../components/record-table';
import { UsageMeters } from '../../components/usage-meters';

type Write = { allowed: boolean; reason: string };

const RESULT_WORDS: Record<string, string> = { ACCEPTED: 'Counted', LIMIT_REACHED: 'Refused: limit reached' };

/** Who or what recorded an event: the application on a machine, or an operator with their reason. */
function source(e: UsageEvent) {
  if (e.source === 'application') return e.machineId === null ? 'The application' : `The application on machine ${e.machineId}`;
  return (
    <>
      {e.actor}
      {e.reason && (
        <Text span size="sm" c="dimmed">
          {' '}
          “{e.reason}”
        </Text>
      )}
    </>
  );
}

/** The licence page's Usage (DESIGN.md 19): each meter this period, the newest events, and Adjust usage. */
export function Usage({ licence: l, write }: { licence: Licence; write: Write }) {
  const usage = useUsage(l.lid, true);
  const [adjusting, setAdjusting] = useState(false);
  const labels = new Map(l.meters.map((m) => [m.key, m.label]));
  // A revoked licence may be adjusted; an archived one is restored first (the API's rule).
  const allowed = write.allowed && !l.archived;
  return (
    <Card withBorder component="section" aria-labelledby="usage-heading">
      <Group justify="space-between" mb="sm" wrap="wrap">
        <Title order={2} size="h4" id="usage-heading">
          Usage
        </Title>
        <Guarded allowed={allowed} reason={l.archived ? 'An archived licence is not adjusted: restore it first.' : write.reason}>
          {(disabled) => (
            <Button variant="light" disabled={disabled} onClick={() => setAdjusting(true)}>
              Adjust usage
            </Button>
          )}
        </Guarded>
      </Group>
      <ErrorText error={usage.error} />
      {usage.data && <UsageMeters meters={usage.data.meters} />}
      <Title order={3} size="h5" mt="lg" mb="xs">
        Recent events
      </Title>
      <RecordTable
        label="Recent usage events"
        rows={usage.data?.events.map((e, n) => ({ ...e, n }))}
        rowKey={(e) => e.n}
        empty="Nothing counted yet: the application reports usage as it is used."
        minWidth={680}
        columns={[
          ['When', (e) => <DateTime value={e.receivedAt} />],
          ['Meter', (e) => labels.get(e.meter) ?? e.meter],
          ['Amount', (e) => (e.amount < 0 ? `${(-e.amount).toLocaleString()} credited` : e.amount.toLocaleString())],
          ['Result', (e) => RESULT_WORDS[e.result] ?? e.result],
          ['By', source],
        ]}
      />
      {adjusting && <AdjustUsage licence={l} onClose={() => setAdjusting(false)} />}
    </Card>
  );
}

/** Credits (a negative amount) or debits a meter this period, with a reason for the activity trail. */
function AdjustUsage({ licence: l, onClose }: { licence: Licence; onClose: () => void }) {
  const adjust = useAdjustUsage(l.lid);
  // One key per dialog: a second submit of the same adjustment is answered once, never counted twice.
  // getRandomValues, not randomUUID: the console may be served over plain HTTP, where only the former exists.
  const [idempotencyKey] = useState(() => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join(''));
  const [meter, setMeter] = useState<string | null>(l.meters[0]?.key ?? null);
  const [amount, setAmount] = useState<number | ''>('');
  const [reason, setReason] = useState('');
  const problems = useProblems({
    meter: meter === null && 'Choose the meter',
    amount: (amount === '' || amount === 0) && 'Enter a whole number other than 0: negative to credit',
    reason: !reason.trim() && 'Say why, for the activity trail',
  });
  // A refusal naming a field shows beside it; any other below the form.
  const message = adjust.error instanceof Error ? adjust.error.message : '';
  const field = fieldOf(adjust.error);
  const beside = field === 'meter' || field === 'amount' || field === 'reason';
  const errorOf = (name: 'meter' | 'amount' | 'reason') => problems.of(name) ?? (field === name ? besideField(message) : undefined);
  return (
    <ModalForm
      title="Adjust usage"
      submit="Adjust"
      onClose={onClose}
      failed="Not adjusted"
      action={{ busy: adjust.busy, error: beside ? null : adjust.error }}
      onSubmit={() => problems.check() && adjust.run({ body: { meter: meter!, amount: amount as number, reason: reason.trim() }, idempotencyKey })}
    >
      <Text size="sm" c="dimmed">
        Changes this period&apos;s count: a positive amount adds to it, a negative one credits it back. It may pass the limit, never go below 0.
      </Text>
      <Select
        label="Meter"
        data={l.meters.map((m) => ({ value: m.key, label: m.label }))}
        value={meter}
        onChange={setMeter}
        allowDeselect={false}
        required
        error={errorOf('meter')}
      />
      <NumberInput
        label="Amount"
        description="Negative to credit"
        min={-1_000_000_000_000}
        max={1_000_000_000_000}
        allowDecimal={false}
        thousandSeparator=","
        required
        value={amount}
        onChange={(v) => setAmount(typeof v === 'number' ? v : '')}
        error={errorOf('amount')}
      />
      <Textarea
        label="Reason"
        description="Recorded in the licence's activity"
        autosize
        minRows={2}
        maxLength={500}
        required
        value={reason}
        onChange={(e) => setReason(e.currentTarget.value)}
        error={errorOf('reason')}
      />
    </ModalForm>
  );
}
