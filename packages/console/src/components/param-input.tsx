import { NumberInput, Select, Switch, TagsInput, TextInput } from '@mantine/core';

export interface ProductParam {
  key: string;
  label: string;
  type: 'STRING' | 'INTEGER' | 'BOOLEAN' | 'DATE' | 'STRING_LIST' | 'ENUM';
  required: boolean;
  defaultValue: string | null;
  options: string[];
  help: string | null;
}
export type ParamValue = string | number | boolean | string[] | null;

/** A parameter's stored default text as the value its input edits (DESIGN.md 3). */
export function defaultOf(param: ProductParam): ParamValue {
  const text = param.defaultValue;
  if (text === null) return param.type === 'BOOLEAN' ? false : param.type === 'STRING_LIST' ? [] : null;
  switch (param.type) {
    case 'INTEGER':
      return Number(text);
    case 'BOOLEAN':
      return text === 'true';
    case 'STRING_LIST':
      return JSON.parse(text) as string[];
    default:
      return text;
  }
}

/** One input per product parameter, typed: STRING_LIST as tags, DATE as a date picker, ENUM as a select, BOOLEAN as a switch. */
export function ParamInput(props: { param: ProductParam; value: ParamValue; error?: string | undefined; onChange: (value: ParamValue) => void }) {
  const { param, value, error, onChange } = props;
  const common = { label: param.label, description: param.help ?? undefined, required: param.required, error };
  switch (param.type) {
    case 'INTEGER':
      return (
        <NumberInput
          {...common}
          allowDecimal={false}
          value={typeof value === 'number' ? value : ''}
          onChange={(v) => onChange(typeof v === 'number' ? v : null)}
        />
      );
    case 'BOOLEAN':
      return (
        <Switch
          label={param.label}
          description={param.help ?? undefined}
          error={error}
          checked={value === true}
          onChange={(e) => onChange(e.currentTarget.checked)}
        />
      );
    case 'DATE':
      return <TextInput {...common} type="date" value={typeof value === 'string' ? value : ''} onChange={(e) => onChange(e.currentTarget.value || null)} />;
    case 'STRING_LIST':
      return <TagsInput {...common} value={Array.isArray(value) ? value : []} onChange={onChange} />;
    case 'ENUM':
      return <Select {...common} data={param.options} value={typeof value === 'string' ? value : null} onChange={onChange} clearable={!param.required} />;
    default:
      return <TextInput {...common} value={typeof value === 'string' ? value : ''} onChange={(e) => onChange(e.currentTarget.value || null)} />;
  }
}

/** A required parameter left empty, per key: the issue and renew forms say so before sending. */
export function missingParams(params: ProductParam[], values: Record<string, ParamValue>): Record<string, string | null> {
  const empty = (v: ParamValue | undefined) => v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
  return Object.fromEntries(params.map((p) => [p.key, p.required && p.type !== 'BOOLEAN' && empty(values[p.key]) ? `${p.label} is required` : null]));
}

/** The field a 400 names (`body.params.seats ...`, `meters.exports.limit ...`, `validityMonths: ...`), to show the message beside it. */
export function fieldOf(message: string): string | null {
  const match = /^(?:body\.)?((?:params|meters)\.[A-Za-z][A-Za-z0-9_.-]*?|[A-Za-z]+)(?=[ :.]|$)/.exec(message);
  return match?.[1] ?? null;
}
