import { Button, Group, NumberInput, Paper, Select, SimpleGrid, Stack, Switch, Text, TextInput } from '@mantine/core';
import type { Product } from '../../api/products';
import type { MeterPeriod } from '../usage-meters';

/** A meter as the product form edits it: a number field beside each switch, kept while the switch is on. */
export interface MeterDraft {
  key: string;
  label: string;
  limit: number | '';
  unlimited: boolean;
  period: MeterPeriod;
  overage: number | '';
  noCeiling: boolean;
}
/** A meter as the product declares it (DESIGN.md 19). */
export type ProductMeter = Product['meters'][number];

const KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
export const MAX_METERS = 20;

export const meterDraftOf = (m: ProductMeter): MeterDraft => ({
  key: m.key,
  label: m.label,
  limit: m.limit ?? '',
  unlimited: m.limit === null,
  period: m.period,
  overage: m.overage ?? 0,
  noCeiling: m.overage === null,
});
const blankMeter = (): MeterDraft => ({ key: '', label: '', limit: '', unlimited: false, period: 'MONTH', overage: 0, noCeiling: false });

/** The meter the API takes: the label defaults to the key, an unlimited meter has no overage. */
export const meterOf = (m: MeterDraft): ProductMeter => ({
  key: m.key.trim(),
  label: m.label.trim() || m.key.trim(),
  limit: m.unlimited ? null : m.limit === '' ? 0 : m.limit,
  period: m.period,
  overage: m.unlimited ? 0 : m.noCeiling ? null : m.overage === '' ? 0 : m.overage,
});

type Problems = Partial<Record<'key' | 'limit', string>>;

/** What the API would refuse in each meter, per field, so the form can say so before sending. */
export function meterProblems(meters: MeterDraft[]): Problems[] {
  return meters.map((m, i) => {
    const problems: Problems = {};
    const key = m.key.trim();
    if (!KEY.test(key)) problems.key = 'A letter, then up to 63 letters, digits, _ . or -';
    else if (meters.findIndex((other) => other.key.trim() === key) !== i) problems.key = 'Declared twice';
    if (!m.unlimited && m.limit === '') problems.limit = 'Enter the limit, or switch on Unlimited';
    return problems;
  });
}

/** The product form's Meters section (DESIGN.md 19): what applications count, how much a period allows, and what passes it. */
export function MeterEditor({
  meters,
  periods,
  tried,
  offlineOnly,
  onChange,
}: {
  meters: MeterDraft[];
  /** The product issues OFFLINE licences only: they carry no meters, since nothing reports their usage. */
  offlineOnly: boolean;
  periods: Array<{ value: string; label: string }>;
  /** Whether saving was tried: a new meter's empty fields say nothing before. */
  tried: boolean;
  onChange: (meters: MeterDraft[]) => void;
}) {
  const problems = meterProblems(meters);
  const update = (i: number, change: Partial<MeterDraft>) => onChange(meters.map((m, j) => (j === i ? { ...m, ...change } : m)));
  const shown = (i: number, field: keyof Problems) => (tried || (field === 'key' && meters[i]!.key !== '') ? problems[i]![field] : undefined);
  return (
    <Stack gap="sm">
      <Text size="sm" c="dimmed">
        {meters.length === 0
          ? 'No meters: applications report no usage. A meter counts what a licence may use in a period, such as exports a month.'
          : 'Applications report usage against each meter; the service counts it per licence in calendar periods of the organisation’s timezone. Licences copy the meters when issued or renewed.'}
      </Text>
      {offlineOnly && meters.length > 0 && (
        <Text size="sm" c="dimmed">
          OFFLINE licences have no meters, since nothing reports their usage: allow ONLINE or HYBRID above for meters to matter.
        </Text>
      )}
      {meters.map((m, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a meter has no identity but its place while its key is typed; every field in it is controlled
        <Paper key={i} withBorder p="xs" role="group" aria-label={`Meter ${i + 1}`}>
          <Stack gap="xs">
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <TextInput
                label="Meter key"
                description="What the application names"
                required
                maxLength={64}
                value={m.key}
                onChange={(e) => update(i, { key: e.currentTarget.value })}
                error={shown(i, 'key')}
              />
              <TextInput
                label="Meter label"
                description="What people read"
                placeholder={m.key || undefined}
                maxLength={200}
                value={m.label}
                onChange={(e) => update(i, { label: e.currentTarget.value })}
              />
              <Select
                label="Period"
                description="When the count starts again"
                data={periods}
                value={m.period}
                allowDeselect={false}
                onChange={(period) => update(i, { period: (period ?? 'MONTH') as MeterPeriod })}
              />
            </SimpleGrid>
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <Stack gap={6}>
                <NumberInput
                  label="Limit"
                  description="Per period"
                  min={0}
                  max={1_000_000_000_000}
                  allowDecimal={false}
                  allowNegative={false}
                  thousandSeparator=","
                  required={!m.unlimited}
                  disabled={m.unlimited}
                  value={m.unlimited ? '' : m.limit}
                  placeholder={m.unlimited ? 'No limit' : undefined}
                  onChange={(v) => update(i, { limit: typeof v === 'number' ? v : '' })}
                  error={shown(i, 'limit')}
                />
                <Switch label="Unlimited" checked={m.unlimited} onChange={(e) => update(i, { unlimited: e.currentTarget.checked })} />
              </Stack>
              <Stack gap={6}>
                <NumberInput
                  label="Overage"
                  description={m.unlimited ? 'An unlimited meter has no overage' : 'Accepted past the limit'}
                  min={0}
                  max={1_000_000_000_000}
                  allowDecimal={false}
                  allowNegative={false}
                  thousandSeparator=","
                  disabled={m.unlimited || m.noCeiling}
                  value={m.unlimited ? 0 : m.noCeiling ? '' : m.overage}
                  placeholder={m.noCeiling ? 'No ceiling' : undefined}
                  onChange={(v) => update(i, { overage: typeof v === 'number' ? v : '' })}
                />
                <Switch
                  label="No ceiling"
                  disabled={m.unlimited}
                  checked={!m.unlimited && m.noCeiling}
                  onChange={(e) => update(i, { noCeiling: e.currentTarget.checked })}
                />
              </Stack>
            </SimpleGrid>
            <Group justify="flex-end">
              <Button variant="subtle" color="red" size="compact-sm" onClick={() => onChange(meters.filter((_, j) => j !== i))}>
                Remove meter
              </Button>
            </Group>
          </Stack>
        </Paper>
      ))}
      <Group>
        <Button variant="light" size="xs" disabled={meters.length >= MAX_METERS} onClick={() => onChange([...meters, blankMeter()])}>
          Add meter
        </Button>
        {meters.length >= MAX_METERS && (
          <Text size="sm" c="dimmed">
            A product declares at most {MAX_METERS} meters.
          </Text>
        )}
      </Group>
    </Stack>
  );
}
