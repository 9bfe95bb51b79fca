import { NumberInput, SimpleGrid, Stack, Text } from '@mantine/core';
import { days } from '../display';
import { defaultOf, ParamInput, type ParamValue, type ProductParam } from '../param-input';
import { MeterLimitFields, type MeterLimits, type MeterOverrides } from '../usage-meters';

type Count = number | '';

export interface TrialDraft {
  trialDays: Count;
  trialDailyLimit: Count;
  trialAddressDailyLimit: Count;
  /** Only the values set for trials; a parameter without one takes its default. */
  trialParams: Record<string, ParamValue>;
  /** A trial's limits where they differ from the product's meters. */
  trialMeters: MeterOverrides;
}

const empty = (v: ParamValue | undefined) => v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0);

const shown = (v: ParamValue) => (Array.isArray(v) ? v.join(', ') : String(v));

/** The trial values to send: only the product's current parameters (a removed one goes with it), only those set. */
export const trialParamsOf = (params: ProductParam[], values: Record<string, ParamValue>) =>
  Object.fromEntries(params.filter((p) => !empty(values[p.key])).map((p) => [p.key, values[p.key]!]));

/** A required parameter with neither a trial value nor a default, per `trialParams.<key>`, while trials are on (the API's 400). */
export function trialProblems(draft: TrialDraft, params: ProductParam[]): Record<string, string | null> {
  const on = typeof draft.trialDays === 'number' && draft.trialDays > 0;
  return Object.fromEntries(
    params.map((p) => [
      `trialParams.${p.key}`,
      on && p.required && p.defaultValue === null && p.type !== 'BOOLEAN' && empty(draft.trialParams[p.key])
        ? `Trials need a value for ${p.label}: it is required and has no default`
        : null,
    ]),
  );
}

/** The product form's Trial section (DESIGN.md 18): how long, how many a day, and what a trial grants (its parameters and meter limits). */
export function TrialFields({
  draft,
  params,
  meters,
  floating,
  errorOf,
  onChange,
}: {
  draft: TrialDraft;
  params: ProductParam[];
  meters: MeterLimits[];
  floating: boolean;
  errorOf: (field: string) => string | undefined;
  onChange: (change: Partial<TrialDraft>) => void;
}) {
  const count = (value: string | number): Count => (typeof value === 'number' ? value : '');
  const on = typeof draft.trialDays === 'number' && draft.trialDays > 0;
  return (
    <Stack gap="sm">
      <Text size="sm" c="dimmed">
        {floating
          ? 'Node-locked products only: a floating seat is a lease, and a trial holds one machine.'
          : 'An application starts a trial on its first run with only its check token: an online licence for that one machine. A reinstall or a copied disk gets the same trial back, never a second one.'}
      </Text>
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <NumberInput
          label="Trial days"
          description={on ? `Each trial lasts ${days(draft.trialDays as number)}` : '0 = no trials'}
          min={0}
          max={90}
          allowDecimal={false}
          disabled={floating}
          value={draft.trialDays}
          onChange={(v) => onChange({ trialDays: count(v) })}
          error={errorOf('trialDays')}
        />
        <NumberInput
          label="Trials per day"
          description="In any 24 hours; empty = no limit"
          min={1}
          max={100_000}
          allowDecimal={false}
          thousandSeparator=","
          disabled={!on}
          value={draft.trialDailyLimit}
          onChange={(v) => onChange({ trialDailyLimit: count(v) })}
          error={errorOf('trialDailyLimit')}
        />
        <NumberInput
          label="Trials per address per day"
          description="From one address; empty = no limit"
          min={1}
          max={10_000}
          allowDecimal={false}
          thousandSeparator=","
          disabled={!on}
          value={draft.trialAddressDailyLimit}
          onChange={(v) => onChange({ trialAddressDailyLimit: count(v) })}
          error={errorOf('trialAddressDailyLimit')}
        />
      </SimpleGrid>
      {on && params.length > 0 && (
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          {params.map((p) => (
            <ParamInput
              key={p.key}
              param={{
                ...p,
                label: `Trial value: ${p.label}`,
                required: p.required && p.defaultValue === null,
                help: p.defaultValue === null || p.type === 'BOOLEAN' ? 'What a trial grants' : `Empty: the default, ${shown(defaultOf(p))}`,
              }}
              // A switch always shows a value: the default until it is changed.
              value={draft.trialParams[p.key] ?? (p.type === 'BOOLEAN' ? defaultOf(p) : null)}
              error={errorOf(`trialParams.${p.key}`)}
              onChange={(value) => onChange({ trialParams: { ...draft.trialParams, [p.key]: value } })}
            />
          ))}
        </SimpleGrid>
      )}
      {on && meters.length > 0 && (
        <MeterLimitFields
          meters={meters}
          overrides={draft.trialMeters}
          prefix="Trial "
          errorOf={(key) => errorOf(`trialMeters.${key}`)}
          onChange={(trialMeters) => onChange({ trialMeters })}
        />
      )}
    </Stack>
  );
}
