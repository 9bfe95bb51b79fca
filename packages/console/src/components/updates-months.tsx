import { NumberInput } from '@mantine/core';

/**
 * `Updates (months)` of the issue and renew forms (DESIGN.md 20): empty is no window. With
 * `product`, the months a mapping leaves to the product (DESIGN.md 22): empty is the product's.
 */
export function UpdatesMonthsInput({
  value,
  onChange,
  error,
  product,
  disabled,
}: {
  value: number | '';
  onChange: (value: number | '') => void;
  error?: string | undefined;
  product?: { months: number | null };
  disabled?: boolean;
}) {
  const theProducts = product && (product.months === null ? 'No window (the product’s)' : `${product.months} (the product’s)`);
  return (
    <NumberInput
      label="Updates (months)"
      description={
        product
          ? 'Releases after the term’s date; empty = the product’s'
          : "Releases published this long after the term's date are covered; empty = every release while valid"
      }
      placeholder={theProducts}
      min={0}
      max={1200}
      allowDecimal={false}
      disabled={disabled}
      value={value}
      onChange={(v) => onChange(typeof v === 'number' ? v : '')}
      error={error}
    />
  );
}
