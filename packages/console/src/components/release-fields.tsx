import { Badge, Fieldset, Select, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { ApiError, besideField, fieldOf } from '../api/client';
import type { Arch, Platform, Release } from '../api/releases';
import { ParamInput, type ParamValue, type ProductParam } from './param-input';

const STATUS: Record<Release['status'], [words: string, colour: string]> = {
  DRAFT: ['Draft', 'blue'],
  PUBLISHED: ['Published', 'green'],
  YANKED: ['Yanked', 'red'],
};

export function ReleaseStatusBadge({ status }: { status: Release['status'] }) {
  const [words, colour] = STATUS[status];
  return (
    <Badge color={colour} variant="dot" tt="none">
      {words}
    </Badge>
  );
}

export const CHANNELS: Array<{ value: Release['channel']; label: string }> = [
  { value: 'stable', label: 'Stable' },
  { value: 'rc', label: 'Release candidate' },
  { value: 'beta', label: 'Beta' },
  { value: 'alpha', label: 'Alpha' },
  { value: 'dev', label: 'Development' },
];
export const channelWords = (channel: string) => CHANNELS.find((c) => c.value === channel)?.label ?? channel;

export const PLATFORMS: Array<{ value: Platform; label: string }> = [
  { value: 'windows', label: 'Windows' },
  { value: 'darwin', label: 'macOS' },
  { value: 'linux', label: 'Linux' },
  { value: 'any', label: 'Any platform' },
];
export const ARCHES: Array<{ value: Arch; label: string }> = [
  { value: 'x86_64', label: 'x86-64' },
  { value: 'aarch64', label: 'ARM 64-bit' },
  { value: 'i686', label: 'x86 32-bit' },
  { value: 'armv7', label: 'ARMv7' },
  { value: 'riscv64', label: 'RISC-V 64-bit' },
  { value: 'universal', label: 'Universal (macOS)' },
  { value: 'any', label: 'Any architecture' },
];
/** What a file is for: "Windows, x86-64", "macOS, Universal (macOS)", "Any platform". */
export function targetWords(platform: string, arch: string): string {
  const words = PLATFORMS.find((p) => p.value === platform)?.label ?? platform;
  return arch === 'any' ? words : `${words}, ${ARCHES.find((a) => a.value === arch)?.label ?? arch}`;
}

export type Requires = Record<string, ParamValue>;

/** The `requires` to send: only the parameters given a value. */
const requiresOf = (values: Requires): Record<string, unknown> =>
  Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null && v !== '' && !(Array.isArray(v) && v.length === 0)));

/** What a release requires, in words: "Edition = pro; Modules contains export", or that any licence is enough. */
export function requiresText(requires: Record<string, unknown>, params: ProductParam[]): string {
  const entries = Object.entries(requires);
  if (entries.length === 0) return 'Any licence of the product';
  return entries
    .map(([key, value]) => {
      const param = params.find((p) => p.key === key);
      const label = param?.label ?? key;
      if (param?.type === 'STRING_LIST') return `${label} includes ${String(value)}`;
      if (param?.type === 'BOOLEAN') return `${label}: ${value ? 'yes' : 'no'}`;
      return `${label}: ${String(value)}`;
    })
    .join('; ');
}

/**
 * `Requires`: a row per parameter of the product; a row left empty requires nothing. A list
 * parameter takes one text the licence's list must include; a yes/no one, yes, no or either.
 */
function RequiresFields(props: {
  params: ProductParam[];
  values: Requires;
  errorOf: (key: string) => string | undefined;
  onChange: (values: Requires) => void;
}) {
  const { params, values, errorOf, onChange } = props;
  const set = (key: string, value: ParamValue) => onChange({ ...values, [key]: value });
  return (
    <Fieldset legend="Requires" variant="filled">
      {params.length === 0 ? (
        <Text size="sm" c="dimmed">
          The product has no parameters: every licence of it is offered this release.
        </Text>
      ) : (
        <Stack gap="xs">
          <Text size="sm" c="dimmed">
            Offered only to licences whose claims match every row filled in; an empty row requires nothing.
          </Text>
          {params.map((p) => {
            const value = values[p.key] ?? null;
            if (p.type === 'STRING_LIST')
              return (
                <TextInput
                  key={p.key}
                  label={p.label}
                  description="One entry the licence's list must include"
                  value={typeof value === 'string' ? value : ''}
                  onChange={(e) => set(p.key, e.currentTarget.value || null)}
                  error={errorOf(p.key)}
                />
              );
            if (p.type === 'BOOLEAN')
              return (
                <Select
                  key={p.key}
                  label={p.label}
                  data={[
                    { value: 'any', label: 'Either' },
                    { value: 'yes', label: 'Yes' },
                    { value: 'no', label: 'No' },
                  ]}
                  value={value === null ? 'any' : value ? 'yes' : 'no'}
                  onChange={(v) => set(p.key, v === 'yes' ? true : v === 'no' ? false : null)}
                  allowDeselect={false}
                  error={errorOf(p.key)}
                />
              );
            return <ParamInput key={p.key} param={{ ...p, required: false }} value={value} error={errorOf(p.key)} onChange={(v) => set(p.key, v)} />;
          })}
        </Stack>
      )}
    </Fieldset>
  );
}

/**
 * A refusal of a release's form, beside the field it names (`requires.edition` beside that row)
 * when the form has it, else below the form; `conflict` is the field a 409 is about.
 */
export function refusalOf(error: unknown, fields: readonly string[], conflict?: string) {
  const field = conflict && error instanceof ApiError && error.status === 409 ? conflict : fieldOf(error);
  const shown = field !== null && (fields.includes(field) || field.startsWith('requires.'));
  const text = shown && error instanceof Error ? besideField(error.message) : undefined;
  return { shown, of: (name: string) => (field === name ? text : undefined), ofRequires: (key: string) => (field === `requires.${key}` ? text : undefined) };
}

/** What a release says of itself, as its forms edit it. */
export interface ReleaseDetails {
  notes: string;
  requires: Requires;
  bundleVersion: string;
}
export const detailsBody = (d: ReleaseDetails) => ({ notes: d.notes, requires: requiresOf(d.requires), bundleVersion: d.bundleVersion.trim() || null });

/** `Notes`, `Requires` and `Bundle version`: New release's and Edit release's, editable in any state. */
export function ReleaseDetailFields(props: {
  params: ProductParam[];
  value: ReleaseDetails;
  onChange: (value: ReleaseDetails) => void;
  refusal: ReturnType<typeof refusalOf>;
}) {
  const { value, onChange, refusal } = props;
  return (
    <>
      <Textarea
        label="Notes"
        description="Markdown, shown to customers and in the updaters"
        autosize
        minRows={5}
        maxRows={16}
        value={value.notes}
        onChange={(e) => onChange({ ...value, notes: e.currentTarget.value })}
        error={refusal.of('notes')}
      />
      <RequiresFields params={props.params} values={value.requires} onChange={(requires) => onChange({ ...value, requires })} errorOf={refusal.ofRequires} />
      <TextInput
        label="Bundle version"
        description="Sparkle’s build number (digits and dots, such as 1203); empty: the version"
        value={value.bundleVersion}
        onChange={(e) => onChange({ ...value, bundleVersion: e.currentTarget.value })}
        error={refusal.of('bundleVersion')}
      />
    </>
  );
}
