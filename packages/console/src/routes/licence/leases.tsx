import { Badge, Box, Card, Text, Title } from '@mantine/core';
import { bound } from '../../api/action';
import { useLeasePeaks, useMachines, useReleaseMachine, type Machine } from '../../api/licences';
import { DayChart } from '../../components/day-chart';
import { DateTime } from '../../components/display';
import { ConfirmButton, Guarded } from '../../components/feedback';
import { RecordTable } from '../../components/record-table';

/** Why a lease no longer holds a seat: released (by whom), or lapsed at its end. */
function ended(m: Machine) {
  if (m.releasedAt) {
    return (
      <Text span size="xs" c="dimmed">
        released by {m.releasedBy}
      </Text>
    );
  }
  return (
    <Badge size="xs" color="gray" variant="light">
      lapsed
    </Badge>
  );
}

/**
 * A floating licence's leases (DESIGN.md 13): who holds a seat now, since when and until when,
 * what is borrowed, `Release` for a live one, and each day's peak of live leases.
 */
export function Leases({ lid, maxMachines, write }: { lid: string; maxMachines: number; write: { allowed: boolean; reason: string } }) {
  const machines = useMachines(lid);
  const peaks = useLeasePeaks(lid);
  const release = useReleaseMachine(lid);
  const now = Date.now();
  // Live leases first, then the rest, the most recently ended first.
  const rows =
    machines.data && [...machines.data].sort((a, b) => Number(b.live) - Number(a.live) || Date.parse(b.leaseEndsAt ?? '') - Date.parse(a.leaseEndsAt ?? ''));
  const live = (machines.data ?? []).filter((m) => m.live).length;
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="sm">
        In use now: {live} of {maxMachines}
      </Title>
      <RecordTable
        label="Leases"
        error={machines.error}
        rows={rows}
        rowKey={(m) => m.id}
        empty="No machine has taken a lease yet: each running copy takes one with its first check."
        minWidth={760}
        columns={[
          ['Machine', (m) => <Text fw={500}>{m.label ?? `Machine ${m.id}`}</Text>],
          ['Since', (m) => <DateTime value={m.boundAt} />],
          [
            'Ends',
            (m) => (
              <>
                <DateTime value={m.leaseEndsAt} /> {!m.live && ended(m)}
              </>
            ),
          ],
          [
            'Borrowed until',
            (m) =>
              m.borrowedUntil && Date.parse(m.borrowedUntil) > now ? (
                <DateTime value={m.borrowedUntil} />
              ) : (
                <Text span c="dimmed">
                  —
                </Text>
              ),
          ],
          ['Last seen', (m) => <DateTime value={m.lastSeenAt} />],
          [
            'Action',
            (m) =>
              m.live && (
                <Guarded allowed={write.allowed} reason={write.reason}>
                  {(disabled) => (
                    <ConfirmButton
                      label="Release"
                      title={`Release ${m.label ?? `machine ${m.id}`}`}
                      disabled={disabled}
                      consequence={
                        m.borrowedUntil && Date.parse(m.borrowedUntil) > now
                          ? 'The seat is free for another machine at once. This machine borrowed it: offline, it keeps working until its borrow ends.'
                          : 'The seat is free for another machine at once; this one takes a lease again on its next check if a seat is free.'
                      }
                      action={bound(release, m.id)}
                    />
                  )}
                </Guarded>
              ),
          ],
        ]}
      />
      {peaks.data && (
        <Box mt="md" maw={640}>
          <Text size="sm" fw={500} mb={4}>
            Daily peak of live leases (UTC days)
          </Text>
          <DayChart
            title="Daily peak of live leases"
            series={peaks.data.map((p) => ({ date: p.date, count: p.peak }))}
            colour="var(--mantine-color-teal-6)"
            summed={false}
          />
        </Box>
      )}
    </Card>
  );
}
