import { Alert, Badge, Button, Code, CopyButton, Group, Stack, Tooltip, Text, VisuallyHidden } from '@mantine/core';
import { createContext, useContext, type ReactNode } from 'react';
import { roleName } from '../api/session';
import { useSettings } from '../api/settings';

const STATUS_COLOURS: Record<string, string> = { PENDING: 'blue', ACTIVE: 'green', GRACE: 'yellow', EXPIRED: 'gray', REVOKED: 'red' };
const HEALTH_COLOURS: Record<string, string> = { OK: 'green', DUE: 'yellow', OVERDUE: 'red', NEVER: 'gray', NOT_APPLICABLE: 'gray' };

export function StatusBadge({ status }: { status: string }) {
  return (
    <Badge color={STATUS_COLOURS[status] ?? 'gray'} variant="dot">
      {status}
    </Badge>
  );
}

/** A licence the service made for an application's trial (DESIGN.md 18). */
export function TrialBadge() {
  return (
    <Badge color="violet" variant="light" tt="none">
      Trial
    </Badge>
  );
}

/** How a licence's checks stand, in words (DESIGN.md 5's check health). */
const HEALTH_WORDS: Record<string, string> = {
  OK: 'Checking in',
  DUE: 'Check due',
  OVERDUE: 'Check overdue',
  NEVER: 'Never checked in',
  NOT_APPLICABLE: 'No checks (offline)',
};

export function HealthBadge({ health }: { health: string }) {
  return (
    <Badge color={HEALTH_COLOURS[health] ?? 'gray'} variant="dot" tt="none">
      {HEALTH_WORDS[health] ?? health}
    </Badge>
  );
}

const formats = new Map<string, Intl.DateTimeFormat>();
function format(timeZone: string, style: 'date' | 'time' | 'exact') {
  const id = `${timeZone}|${style}`;
  let f = formats.get(id);
  if (!f) {
    const options: Intl.DateTimeFormatOptions =
      style === 'exact' ? { dateStyle: 'full', timeStyle: 'long' } : { dateStyle: 'medium', ...(style === 'time' ? { timeStyle: 'short' } : {}) };
    f = new Intl.DateTimeFormat(undefined, { timeZone, ...options });
    formats.set(id, f);
  }
  return f;
}

/** The zone dates are shown in: the organisation's, or an override's. */
export function useTimeZone(): string {
  const override = useContext(TimeZoneOverride);
  const settings = useSettings(override === null);
  return override ?? settings.data?.timezone ?? 'UTC';
}

/** A zone that replaces the organisation's (the customer portal shows the customer's own). */
export const TimeZoneOverride = createContext<string | null>(null);

/** The one date formatter: the organisation's timezone, the exact instant on hover. */
export function DateTime({ value, withTime = true }: { value: string | null | undefined; withTime?: boolean }) {
  const timeZone = useTimeZone();
  if (!value)
    return (
      <Text span c="dimmed" inherit>
        —
      </Text>
    );
  const at = new Date(value);
  return (
    <Tooltip label={`${format(timeZone, 'exact').format(at)} (${timeZone})`} withArrow>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a tooltip must be reachable by keyboard */}
      <time dateTime={value} tabIndex={0} style={{ whiteSpace: 'nowrap' }}>
        {format(timeZone, withTime ? 'time' : 'date').format(at)}
      </time>
    </Tooltip>
  );
}

const INSTANT = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g;
const ROLE = /\b(?:ORG_ADMIN|ISSUER|VIEWER)\b/g;

/** What kind of thing happened, in words: `product.check_token_rotated` is "Product: check token rotated". */
export function actionWords(action: string): string {
  const [subject = '', ...rest] = action.split('.');
  const noun = subject.replace(/_/g, ' ');
  const verb = rest.join(' ').replace(/_/g, ' ');
  return `${noun.charAt(0).toUpperCase()}${noun.slice(1)}${verb ? `: ${verb}` : ''}`;
}

/** A recorded sentence as a person reads it: its instants as dates in the organisation's zone, roles by name. */
export function Sentence({ text }: { text: string }) {
  const timeZone = useTimeZone();
  const parts: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(INSTANT)) {
    parts.push(text.slice(last, match.index).replace(ROLE, roleName));
    // Plain text, not a focusable date: a sentence is often a link's words.
    parts.push(
      <time key={match.index} dateTime={match[0]}>
        {format(timeZone, 'time').format(new Date(match[0]))}
      </time>,
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last).replace(ROLE, roleName));
  return <>{parts}</>;
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
export function SecretOnce({
  value,
  label,
  kept = 'the service keeps only its hash',
  children,
}: {
  value: string;
  label: string;
  kept?: string;
  children?: ReactNode;
}) {
  return (
    <Alert color="yellow" variant="light" title={`Copy the ${label} now`}>
      <Stack gap="xs">
        <Text size="sm">
          It will not be shown again: {kept}. {children}
        </Text>
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

/** A count of days: "1 day", "7 days". */
export const days = (n: number) => `${n.toLocaleString()} ${n === 1 ? 'day' : 'days'}`;

/** Seconds in the words an operator thinks in: "3 days", "12 hours", "90 minutes". */
export function duration(seconds: number): string {
  const [n, unit] =
    seconds % 86_400 === 0
      ? [seconds / 86_400, 'day']
      : seconds % 3_600 === 0
        ? [seconds / 3_600, 'hour']
        : seconds % 60 === 0
          ? [seconds / 60, 'minute']
          : [seconds, 'second'];
  return `${n.toLocaleString()} ${unit}${n === 1 ? '' : 's'}`;
}

/** A size in bytes as people read it: "512 bytes", "1.4 MB", "2.1 GB" (powers of 1,000, as file managers show). */
export function bytes(n: number): string {
  if (n < 1000) return `${n.toLocaleString()} ${n === 1 ? 'byte' : 'bytes'}`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = n / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toLocaleString(undefined, { maximumFractionDigits: value < 10 ? 1 : 0 })} ${units[unit]}`;
}
