import { NumberInput } from '@mantine/core';

/** `Updates (months)` of the issue and renew forms (DESIGN.md 20): empty is no window. */
export function UpdatesMonthsInput({ value, onChange, error }: { value: number | ''; onChange: (value: number | '') => void; error?: string | undefined }) {
  return (
    <NumberInput
      label="Updates (months)"
      description="Releases published this long after the term's date are covered; empty = every release while valid"
      min={0}
      max={1200}
      allowDecimal={false}
      value={value}
      onChange={(v) => onChange(typeof v === 'number' ? v : '')}
      error={error}
    />
  );
}
