import { Group, NumberInput, Progress, SimpleGrid, Stack, Text } from '@mantine/core';
import { DateTime, useTimeZone } from './display';

export type MeterPeriod = 'NONE' | 'DAY' | 'MONTH' | 'YEAR';

/** A meter's balance this period, as the usage read and the portal answer it (DESIGN.md 19). */
export interface MeterBalance {
  key: string;
  label: string;
  period: MeterPeriod;
  used: number;
  limit: number | null;
  overage: number | null;
  remaining: number | null;
  resetsAt: string | null;
}

/** The period a count belongs to, as a person says it: "92 of 100 this month". */
const PERIOD_NOW: Record<MeterPeriod, string> = { DAY: 'today', MONTH: 'this month', YEAR: 'this year', NONE: 'in total' };

/** A limit's period in words: "1,000 a month". */
export const PER_PERIOD: Record<MeterPeriod, string> = { DAY: 'a day', MONTH: 'a month', YEAR: 'a year', NONE: 'in total' };

const n = (value: number) => value.toLocaleString();

/** Whether an instant is a midnight where it is shown: a period starts at one in the organisation's zone, so its date alone says it. */
function atMidnight(value: string, timeZone: string): boolean {
  return new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(value)) === '00:00';
}

/** When a meter's count starts again: its date in the zone shown (with the time where that zone is not the organisation's), or never. */
function Resets({ at }: { at: string | null }) {
  const timeZone = useTimeZone();
  if (!at) return <>never resets</>;
  return (
    <>
      resets <DateTime value={at} withTime={!atMidnight(at, timeZone)} />
    </>
  );
}

/** What is left and what passes the limit, in words. */
function allowance(m: MeterBalance): string {
  if (m.limit === null) return 'Any amount is counted';
  if (m.overage === null)
    return m.used > m.limit ? `${n(m.used - m.limit)} past the limit; no ceiling` : `${n(m.limit - m.used)} to the limit; no ceiling past it`;
  const left = `${n(m.remaining ?? 0)} left`;
  return m.overage > 0 ? `${left}, counting ${n(m.overage)} allowed past the limit` : left;
}

/** One meter: its label, used of its limit as a progressbar (value used, max limit), what is left and when it resets. */
function MeterBar({ meter: m }: { meter: MeterBalance }) {
  const unlimited = m.limit === null;
  const share = m.limit === null ? 0 : m.limit === 0 ? (m.used > 0 ? 100 : 0) : Math.min(100, (m.used / m.limit) * 100);
  const colour = m.limit !== null && m.used >= m.limit && m.used > 0 ? 'red' : share >= 80 ? 'orange' : 'indigo';
  const amount = unlimited ? `${n(m.used)} ${PERIOD_NOW[m.period]}` : `${n(m.used)} of ${n(m.limit!)} ${PERIOD_NOW[m.period]}`;
  return (
    <div>
      <Group justify="space-between" gap={4} wrap="wrap" mb={4}>
        <Text size="sm" fw={600}>
          {m.label}
        </Text>
        <Text size="sm">
          {amount}
          {unlimited && (
            <Text span size="sm" c="dimmed">
              {' '}
              · No limit
            </Text>
          )}
        </Text>
      </Group>
      {/* The track carries the role, so a bar at 0 is still there to read. */}
      <Progress.Root
        size="md"
        role="progressbar"
        aria-label={m.label}
        aria-valuemin={0}
        aria-valuenow={m.used}
        {...(m.limit === null ? {} : { 'aria-valuemax': m.limit })}
        aria-valuetext={unlimited ? `${n(m.used)} used, no limit` : `${n(m.used)} of ${n(m.limit!)}`}
      >
        <Progress.Section value={share} color={colour} withAria={false} />
      </Progress.Root>
      <Text size="xs" c="dimmed" mt={4}>
        {allowance(m)} · <Resets at={m.resetsAt} />
      </Text>
    </div>
  );
}

/** Every meter of a licence this period: the licence page's and the customer portal's Usage. */
export function UsageMeters({ meters }: { meters: MeterBalance[] }) {
  return (
    <SimpleGrid cols={{ base: 1, md: 2 }} spacing="lg" verticalSpacing="md">
      {meters.map((m) => (
        <MeterBar key={m.key} meter={m} />
      ))}
    </SimpleGrid>
  );
}

/** A meter's limit and overage as a licence or a trial takes them: what the product declares, or what it grants instead. */
export interface MeterLimits {
  key: string;
  label: string;
  period: MeterPeriod;
  limit: number | null;
  overage: number | null;
}
/** Per meter key, the values that replace the declared ones, as issue, renew and trialMeters take them. */
export type MeterOverrides = Record<string, { limit?: number | null; overage?: number | null }>;

/** A meter's limit and overage with its overrides applied. */
export const effective = (m: MeterLimits, overrides: MeterOverrides) => {
  const own = overrides[m.key] ?? {};
  const limit = own.limit !== undefined ? own.limit : m.limit;
  // An unlimited meter has no overage (DESIGN.md 19).
  const overage = limit === null ? 0 : own.overage !== undefined ? own.overage : m.overage;
  return { limit, overage };
};

/** The overrides to send: only meters still declared, only values that differ from the declared ones (an unlimited one without overage). */
export function overridesOf(meters: MeterLimits[], overrides: MeterOverrides): MeterOverrides {
  const out: MeterOverrides = {};
  for (const m of meters) {
    const { limit, overage } = effective(m, overrides);
    const change: MeterOverrides[string] = {};
    if (limit !== m.limit) change.limit = limit;
    if (limit !== null && overage !== (m.limit === null ? 0 : m.overage)) change.overage = overage;
    if (Object.keys(change).length > 0) out[m.key] = change;
  }
  return out;
}

const TERA = 1_000_000_000_000;

/**
 * `<label> limit` and `<label> overage` per meter (DESIGN.md 19), prefilled with the declared
 * values: the issue and renew forms' per-licence limits, and with a prefix the trial's. With
 * `inherit`, a mapping's (DESIGN.md 22): empty fields, the declared values as their placeholders,
 * and a field left empty keeps the product's value, whatever it becomes.
 */
export function MeterLimitFields({
  meters,
  overrides,
  prefix = '',
  inherit = false,
  errorOf,
  onChange,
}: {
  meters: MeterLimits[];
  overrides: MeterOverrides;
  prefix?: string;
  inherit?: boolean;
  errorOf?: (key: string) => string | undefined;
  onChange: (overrides: MeterOverrides) => void;
}) {
  const set = (key: string, field: 'limit' | 'overage', value: number | null | undefined) => {
    const { [field]: _, ...rest } = overrides[key] ?? {};
    const own = value === undefined ? rest : { ...rest, [field]: value };
    const { [key]: __, ...others } = overrides;
    onChange(Object.keys(own).length > 0 ? { ...others, [key]: own } : others);
  };
  // Empty is "no limit" or "no ceiling", or with `inherit` the product's value.
  const emptied = (v: string | number) => (typeof v === 'number' ? v : inherit ? undefined : null);
  const products = (text: string) => `${text} (the product’s)`;
  return (
    <Stack gap="xs">
      {meters.map((m) => {
        const { limit, overage } = effective(m, overrides);
        const own = overrides[m.key] ?? {};
        const per = PER_PERIOD[m.period].replace(/^./, (c) => c.toUpperCase());
        return (
          <SimpleGrid key={m.key} cols={{ base: 1, sm: 2 }}>
            <NumberInput
              label={`${prefix}${m.label} limit`}
              description={inherit ? `${per}; empty = the product’s` : limit === null ? 'Empty: no limit' : `${per}; empty = no limit`}
              min={0}
              max={TERA}
              allowDecimal={false}
              allowNegative={false}
              thousandSeparator=","
              placeholder={inherit ? products(m.limit === null ? 'No limit' : n(m.limit)) : 'No limit'}
              value={(inherit ? own.limit : limit) ?? ''}
              onChange={(v) => set(m.key, 'limit', emptied(v))}
              error={errorOf?.(m.key)}
            />
            <NumberInput
              label={`${prefix}${m.label} overage`}
              description={
                limit === null
                  ? 'An unlimited meter has no overage'
                  : inherit
                    ? 'Accepted past the limit; empty = the product’s'
                    : 'Accepted past the limit; empty = no ceiling'
              }
              min={0}
              max={TERA}
              allowDecimal={false}
              allowNegative={false}
              thousandSeparator=","
              placeholder={limit === null ? undefined : inherit ? products(m.overage === null ? 'No ceiling' : n(m.overage)) : 'No ceiling'}
              disabled={limit === null}
              value={(inherit ? own.overage : overage) ?? ''}
              onChange={(v) => set(m.key, 'overage', emptied(v))}
            />
          </SimpleGrid>
        );
      })}
    </Stack>
  );
}
