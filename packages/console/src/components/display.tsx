import { Badge, Button, Code, CopyButton, Group, Tooltip, Text } from '@mantine/core';
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

/** The one date formatter: the organisation's timezone, the exact instant on hover. */
export function DateTime({ value, withTime = true }: { value: string | null | undefined; withTime?: boolean }) {
  const timeZone = useSettings().data?.timezone ?? 'UTC';
  if (!value) return <Text span c="dimmed">—</Text>;
  return (
    <Tooltip label={value} withArrow>
      <time dateTime={value} tabIndex={0}>
        {format(timeZone, withTime).format(new Date(value))}
      </time>
    </Tooltip>
  );
}

/** Copyable text; `secret` adds the warning that it will not be shown again. */
export function CopyBox({ value, label }: { value: string; label: string }) {
  return (
    <Group gap="xs" wrap="nowrap" align="flex-start">
      <Code block tabIndex={0} aria-label={label} style={{ flex: 1, wordBreak: 'break-all', whiteSpace: 'pre-wrap', maxHeight: 160, overflow: 'auto' }}>
        {value}
      </Code>
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Button variant="light" size="xs" onClick={copy} aria-label={`Copy ${label}`}>
            {copied ? 'Copied' : 'Copy'}
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}
