import { Alert, NumberInput, SegmentedControl, SimpleGrid, Stack, Text } from '@mantine/core';
import { duration } from '../display';

export type SeatModel = 'NODE_LOCKED' | 'FLOATING';
type Count = number | '';

export interface SeatDraft {
  seatModel: SeatModel;
  leaseSeconds: Count;
  maxBorrowSeconds: Count;
  maxBorrowedSeats: Count;
}

/**
 * Checks a minute from one address when every seat of a licence is leased behind it: each machine
 * checks every leaseSeconds / 3 (DESIGN.md 13), so maxMachines × 180 / leaseSeconds.
 */
export const siteCheckRate = (maxMachines: number, leaseSeconds: number) => Math.ceil((maxMachines * 180) / leaseSeconds);

/** The product form's seat model, lease length and borrowing (DESIGN.md 13). */
export function SeatFields({
  draft,
  maxMachines,
  checkRateAddress,
  onChange,
}: {
  draft: SeatDraft;
  maxMachines: Count;
  /** Checks allowed per minute from one address; 0 = no limit. */
  checkRateAddress: number | undefined;
  onChange: (change: Partial<SeatDraft>) => void;
}) {
  const count = (value: string | number): Count => (typeof value === 'number' ? value : '');
  const floating = draft.seatModel === 'FLOATING';
  const rate =
    typeof maxMachines === 'number' && typeof draft.leaseSeconds === 'number' && draft.leaseSeconds > 0 ? siteCheckRate(maxMachines, draft.leaseSeconds) : 0;
  const tooFast = floating && checkRateAddress !== undefined && checkRateAddress > 0 && rate > checkRateAddress;
  return (
    <Stack gap="sm">
      <SegmentedControl
        aria-label="Seat model"
        // No sliding indicator: its colours mid-way are not the ones judged for contrast.
        transitionDuration={0}
        value={draft.seatModel}
        onChange={(value) => onChange({ seatModel: value as SeatModel })}
        data={[
          { value: 'NODE_LOCKED', label: 'Node-locked' },
          { value: 'FLOATING', label: 'Floating' },
        ]}
      />
      <Text size="sm" c="dimmed">
        {floating
          ? 'A seat is a lease: so many machines at a time. An application that stops checking in frees its seat when its lease ends. ONLINE licences only.'
          : 'A seat is a machine, bound on its first check until it is released.'}
      </Text>
      {floating && (
        <SimpleGrid cols={{ base: 1, sm: 3 }}>
          <NumberInput
            label="Lease length (seconds)"
            description={typeof draft.leaseSeconds === 'number' ? `${duration(draft.leaseSeconds)}: the longest outage a site survives` : 'Default: 15 minutes'}
            min={60}
            max={3_600}
            allowDecimal={false}
            value={draft.leaseSeconds}
            onChange={(v) => onChange({ leaseSeconds: count(v) })}
          />
          <NumberInput
            label="Longest borrow (seconds)"
            description={
              typeof draft.maxBorrowSeconds === 'number' && draft.maxBorrowSeconds > 0
                ? `A laptop may keep its seat offline for ${duration(draft.maxBorrowSeconds)}`
                : '0 = no borrowing'
            }
            min={0}
            max={2_592_000}
            allowDecimal={false}
            thousandSeparator=","
            value={draft.maxBorrowSeconds}
            onChange={(v) => onChange({ maxBorrowSeconds: count(v) })}
          />
          <NumberInput
            label="Borrowed seats at once"
            description="Per licence; empty = every seat"
            min={0}
            max={typeof maxMachines === 'number' ? maxMachines : undefined}
            allowDecimal={false}
            value={draft.maxBorrowedSeats}
            onChange={(v) => onChange({ maxBorrowedSeats: count(v) })}
          />
        </SimpleGrid>
      )}
      {tooFast && (
        <Alert color="yellow" title="Checks from one site may be refused">
          A site using all {maxMachines} seats behind one address checks about {rate} times a minute, more than this service allows from one address (
          {checkRateAddress} a minute, LICENSOR_CHECK_RATE_ADDRESS). Lengthen the lease, or raise that limit.
        </Alert>
      )}
    </Stack>
  );
}
