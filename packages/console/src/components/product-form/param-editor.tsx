import { Button, Group, Paper, Select, SimpleGrid, Stack, Switch, TagsInput, Text, TextInput } from '@mantine/core';
import type { ProductParam } from '../param-input';

type ParamType = ProductParam['type'];
export const TYPES: Array<{ value: ParamType; label: string }> = [
  { value: 'STRING', label: 'Text' },
  { value: 'INTEGER', label: 'Whole number' },
  { value: 'BOOLEAN', label: 'Yes / no' },
  { value: 'DATE', label: 'Date' },
  { value: 'STRING_LIST', label: 'List of texts' },
  { value: 'ENUM', label: 'One of a list' },
];
const KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

export const blankParam = (): ProductParam => ({ key: '', label: '', type: 'STRING', required: false, defaultValue: null, options: [], help: null });

function isDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(text);
}

/** Why the API would refuse a parameter's default text (DESIGN.md 3), or null when it would not. */
function defaultProblem(param: ProductParam): string | null {
  const text = param.defaultValue;
  if (text === null) return null;
  switch (param.type) {
    case 'INTEGER':
      return INTEGER.test(text) && Number.isSafeInteger(Number(text)) ? null : 'Not a whole number';
    case 'DATE':
      return isDate(text) ? null : 'Not a date (YYYY-MM-DD)';
    case 'ENUM':
      return param.options.includes(text) ? null : 'Not one of the options';
    default:
      return null;
  }
}

/** What the API would refuse in each parameter, per field, so the form can say so before sending. */
export function paramProblems(params: ProductParam[], reserved: readonly string[]): Array<Partial<Record<'key' | 'options' | 'defaultValue', string>>> {
  return params.map((param, i) => {
    const problems: Partial<Record<'key' | 'options' | 'defaultValue', string>> = {};
    if (!KEY.test(param.key)) problems.key = 'A letter, then up to 63 letters, digits, _ . or -';
    else if (reserved.includes(param.key)) problems.key = `“${param.key}” is an issuer claim; choose another key`;
    else if (params.findIndex((other) => other.key === param.key) !== i) problems.key = 'Declared twice';
    if (param.type === 'ENUM' && param.options.length === 0) problems.options = 'An ENUM needs at least one option';
    const problem = defaultProblem(param);
    if (problem) problems.defaultValue = problem;
    return problems;
  });
}

/** The default's input, typed like the parameter; its value is the text the API stores. */
function DefaultInput({ param, error, onChange }: { param: ProductParam; error: string | undefined; onChange: (text: string | null) => void }) {
  const common = { label: 'Default', error };
  const text = param.defaultValue;
  switch (param.type) {
    case 'BOOLEAN':
      return (
        <Select
          {...common}
          data={[
            { value: 'true', label: 'Yes' },
            { value: 'false', label: 'No' },
          ]}
          placeholder="No default"
          value={text}
          onChange={onChange}
          clearable
        />
      );
    case 'ENUM':
      return <Select {...common} data={param.options} placeholder="No default" value={text} onChange={onChange} clearable />;
    case 'STRING_LIST':
      return (
        <TagsInput
          {...common}
          placeholder="No default"
          value={text ? (JSON.parse(text) as string[]) : []}
          onChange={(items) => onChange(items.length ? JSON.stringify(items) : null)}
        />
      );
    case 'DATE':
      return <TextInput {...common} type="date" value={text ?? ''} onChange={(e) => onChange(e.currentTarget.value || null)} />;
    default:
      return (
        <TextInput
          {...common}
          placeholder="No default"
          value={text ?? ''}
          onChange={(e) => onChange(e.currentTarget.value === '' ? null : e.currentTarget.value)}
        />
      );
  }
}

/** A parameter's type and stored default as the product page shows them: "One of a list (basic, pro)", "sync, export". */
export function paramTypeText(param: ProductParam): string {
  const label = TYPES.find((t) => t.value === param.type)?.label ?? param.type;
  return param.type === 'ENUM' ? `${label} (${param.options.join(', ')})` : label;
}
export function paramDefaultText(param: ProductParam): string | null {
  if (param.defaultValue === null) return null;
  if (param.type === 'STRING_LIST') return (JSON.parse(param.defaultValue) as string[]).join(', ');
  if (param.type === 'BOOLEAN') return param.defaultValue === 'true' ? 'yes' : 'no';
  return param.defaultValue;
}

/** Edits a product's parameters: key, label, type, required, default, ENUM options and help. */
export function ParamEditor({
  params,
  reserved,
  onChange,
}: {
  params: ProductParam[];
  reserved: readonly string[];
  onChange: (params: ProductParam[]) => void;
}) {
  const problems = paramProblems(params, reserved);
  const update = (i: number, change: Partial<ProductParam>) => onChange(params.map((p, j) => (j === i ? { ...p, ...change } : p)));
  return (
    <Stack gap="sm">
      <Text size="sm" c="dimmed">
        {params.length === 0
          ? 'No parameters: licences carry only the issuer’s claims.'
          : 'Each parameter is a claim in the licence: its key is the claim name, its label what the issue form shows.'}
      </Text>
      {params.map((param, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a parameter has no identity but its place; every field in it is controlled
        <Paper key={i} withBorder p="xs" role="group" aria-label={`Parameter ${i + 1}`}>
          <Stack gap="xs">
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <TextInput
                label="Key"
                required
                value={param.key}
                onChange={(e) => update(i, { key: e.currentTarget.value })}
                error={param.key ? problems[i]!.key : undefined}
              />
              <TextInput label="Label" value={param.label} onChange={(e) => update(i, { label: e.currentTarget.value })} />
              <Select
                label="Type"
                data={TYPES}
                value={param.type}
                allowDeselect={false}
                // A new type starts without a default or options of the old one.
                onChange={(type) => update(i, { type: (type ?? 'STRING') as ParamType, defaultValue: null, options: [] })}
              />
            </SimpleGrid>
            {param.type === 'ENUM' && (
              <TagsInput
                label="Options"
                description="Press Enter after each"
                value={param.options}
                onChange={(options) =>
                  update(i, { options, defaultValue: param.defaultValue !== null && options.includes(param.defaultValue) ? param.defaultValue : null })
                }
                error={problems[i]!.options}
              />
            )}
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <DefaultInput param={param} error={problems[i]!.defaultValue} onChange={(defaultValue) => update(i, { defaultValue })} />
              <TextInput
                label="Help"
                placeholder="Shown under the field"
                value={param.help ?? ''}
                onChange={(e) => update(i, { help: e.currentTarget.value || null })}
              />
            </SimpleGrid>
            <Group justify="space-between">
              <Switch label="Required at issue" checked={param.required} onChange={(e) => update(i, { required: e.currentTarget.checked })} />
              <Button
                variant="subtle"
                color="red"
                size="compact-sm"
                aria-label={`Remove parameter ${param.key || i + 1}`}
                onClick={() => onChange(params.filter((_, j) => j !== i))}
              >
                Remove
              </Button>
            </Group>
          </Stack>
        </Paper>
      ))}
      <Group>
        <Button variant="light" size="xs" onClick={() => onChange([...params, blankParam()])}>
          Add parameter
        </Button>
      </Group>
    </Stack>
  );
}
