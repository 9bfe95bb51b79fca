import { Badge, Card, Group, Text, Title } from '@mantine/core';
import { bound } from '../../api/action';
import { useAirGap, useMachines, useReleaseMachine, type Licence } from '../../api/licences';
import { AirGapActions } from '../../components/air-gap';
import { DateTime } from '../../components/display';
import { ConfirmButton, Guarded } from '../../components/feedback';
import { RecordTable } from '../../components/record-table';

/** A node-locked licence's machines: bound, released, air-gapped, each live one with `Release`. */
export function Machines({ licence: l, airGap, write }: { licence: Licence; airGap: boolean; write: { allowed: boolean; reason: string } }) {
  const machines = useMachines(l.lid);
  const release = useReleaseMachine(l.lid);
  const airGapActions = useAirGap(l.lid);
  return (
    <Card withBorder>
      <Group justify="space-between" mb="sm" wrap="wrap">
        <Title order={2} size="h4">
          Machines
        </Title>
        {/* Offered only where it can work: the product has it on, and the licence checks in (DESIGN.md 14); trials are activated online (18). */}
        {airGap && l.licenceType !== 'OFFLINE' && !l.archived && !l.trial && (
          <Guarded allowed={write.allowed} reason={write.reason}>
            {(disabled) => <AirGapActions subject={l.lid} disabled={disabled} activate={airGapActions.activate} deactivate={airGapActions.deactivate} />}
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
                {m.atIssue && (
                  <Badge size="xs" variant="outline">
                    bound at issue
                  </Badge>
                )}
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
                  <DateTime value={m.releasedAt} />{' '}
                  <Text span size="xs" c="dimmed">
                    by {m.releasedBy}
                  </Text>
                </>
              ) : (
                <Text span c="dimmed" inherit>
                  live
                </Text>
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
                      action={bound(release, m.id)}
                    />
                  )}
                </Guarded>
              ),
          ],
        ]}
      />
    </Card>
  );
}
