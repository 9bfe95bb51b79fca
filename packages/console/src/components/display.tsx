import { Alert, Badge, Button, Code, CopyButton, Group, Stack, Tooltip, Text, VisuallyHidden } from '@mantine/core';
import { createContext, useContext, type ReactNode } from 'react';
import { useSettings } from '../api/queries';

const STATUS_COLOURS: Record<string, string> = { PENDING: 'blue', ACTIVE: 'green', GRACE: 'yellow', EXPIRED: 'gray', REVOKED: 'red' };
const HEALTH_COLOURS: Record<string, string> = { OK: 'green', DUE: 'yellow', OVERDUE: 'red', NEVER: 'gray', NOT_APPLICABLE: 'gray' };

export function StatusBadge({ status }: { status: string }) {
  return (
    <Badge color={STATUS_COLOURS[status] ?? 'gray'} variant="dot">
      {status}
    </Badge>
  );
}

export function HealthBadge({ health }: { health: string }) {
  return (
    <Badge color={HEALTH_COLOURS[health] ?? 'gray'} variant="dot" tt="none">
      {health === 'NOT_APPLICABLE' ? 'not applicable' : health.toLowerCase()}
    </Badge>
  );
}

const formats = new Map<string, Intl.DateTimeFormat>();
function format(timeZone: string, withTime: boolean) {
  const id = `${timeZone}|${withTime}`;
  let f = formats.get(id);
  if (!f) {
    f = new Intl.DateTimeFormat(undefined, { timeZone, dateStyle: 'medium', ...(withTime ? { timeStyle: 'short' } : {}) });
    formats.set(id, f);
  }
  return f;
}

/** A zone that replaces the organisation's (the customer portal shows the customer's own). */
export const TimeZoneOverride = createContext<string | null>(null);

/** The one date formatter: the organisation's timezone, the exact instant on hover. */
export function DateTime({ value, withTime = true }: { value: string | null | undefined; withTime?: boolean }) {
  const override = useContext(TimeZoneOverride);
  const settings = useSettings(override === null);
  const timeZone = override ?? settings.data?.timezone ?? 'UTC';
  if (!value) return <Text span c="dimmed" inherit>—</Text>;
  return (
    <Tooltip label={value} withArrow>
      <time dateTime={value} tabIndex={0} style={{ whiteSpace: 'nowrap' }}>
        {format(timeZone, withTime).format(new Date(value))}
      </time>
    </Tooltip>
  );
}

/** Copyable text. */
export function CopyBox({ value, label }: { value: string; label: string }) {
  return (
    <Group gap="xs" wrap="nowrap" align="flex-start">
      <Code block tabIndex={0} aria-label={label} style={{ flex: 1, wordBreak: 'break-all', whiteSpace: 'pre-wrap', maxHeight: 160, overflow: 'auto' }}>
        {value}
      </Code>
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Button variant="default" size="xs" onClick={copy}>
            {copied ? 'Copied' : 'Copy'}
            <VisuallyHidden> {label}</VisuallyHidden>
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}

/** A secret the service shows once (an API token, a check token): copy it now, it is not kept. */
export function SecretOnce({ value, label, children }: { value: string; label: string; children?: ReactNode }) {
  return (
    <Alert color="yellow" variant="light" title={`Copy the ${label} now`}>
      <Stack gap="xs">
        <Text size="sm">It will not be shown again: the service keeps only its hash. {children}</Text>
        <CopyBox value={value} label={label} />
      </Stack>
    </Alert>
  );
}

/** A labelled value in a record's summary card. */
export function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <div>{children}</div>
    </div>
  );
}

/** Saves text as a file (a licence string alone, with no trailing newline, as `/download` does). */
export function download(text: string, name: string, type = 'application/octet-stream') {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  link.click();
  URL.revokeObjectURL(link.href);
}

/** Seconds in the words an operator thinks in. */
export function duration(seconds: number): string {
  const units: Array<[number, string]> = [[86_400, 'day'], [3_600, 'hour'], [60, 'minute']];
  for (const [size, unit] of units) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? '' : 's'}`;
  }
  return `${seconds} seconds`;
}
