import { Alert, Button, Center, Group, Loader, Modal, Stack, Text, Tooltip } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import type { Action } from '../api/action';
import { ApiError, inWords } from '../api/client';

/** "3 minutes", "40 seconds": how long to wait, rounded up. */
function wait(seconds: number): string {
  const [n, unit] = seconds < 60 ? [seconds, 'second'] : seconds < 3_600 ? [Math.ceil(seconds / 60), 'minute'] : [Math.ceil(seconds / 3_600), 'hour'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** A failure in words: the API's own `error` text; for a lockout, when asking again can work. */
export function problemText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error instanceof ApiError && error.status === 429 && error.retryAfter) {
    const at = new Date(Date.now() + error.retryAfter * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    const what = error.message.split(':')[0]!;
    return `${what.charAt(0).toUpperCase()}${what.slice(1)}. Try again in ${wait(error.retryAfter)}, at ${at}.`;
  }
  return inWords(error.message);
}

/** The one way a failure is shown: its words, where it happened; `title` says what did not happen. */
export function ErrorText({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  return (
    <Alert color="red" variant="light" role="alert" title={title}>
      {problemText(error)}
    </Alert>
  );
}

export function Loading({ label = 'Loading' }: { label?: string }) {
  return (
    <Center py="xl" aria-busy="true">
      <Group gap="sm">
        <Loader size="sm" />
        <Text c="dimmed">{label}…</Text>
      </Group>
    </Center>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return (
    <Text c="dimmed" ta="center" py="xl">
      {children}
    </Text>
  );
}

/**
 * An action the person's role may not take is shown disabled with the reason, never hidden
 * without a word and never left to fail.
 */
export function Guarded({ allowed, reason, children }: { allowed: boolean; reason: string; children: (disabled: boolean) => ReactNode }) {
  if (allowed) return <>{children(false)}</>;
  return (
    <Tooltip label={reason} withArrow multiline w={260}>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex lint/a11y/useAriaPropsSupportedByRole: the reason a control is disabled must be reachable by keyboard and read out */}
      <span tabIndex={0} aria-label={reason} style={{ display: 'inline-block' }}>
        {children(true)}
      </span>
    </Tooltip>
  );
}

/** The one confirm dialog: says what follows before a destructive or disruptive action runs. */
export function ConfirmButton(props: {
  label: string;
  title: string;
  consequence: ReactNode;
  confirmLabel?: string;
  color?: string;
  disabled?: boolean;
  /** Smaller in a table row. */
  compact?: boolean;
  action: Action<void, unknown>;
  children?: ReactNode;
}) {
  const [open, setOpen] = useState(false);
  const { action } = props;
  const confirm = async () => {
    if (await action.run()) setOpen(false);
  };
  return (
    <>
      <Button
        variant="light"
        color={props.color}
        disabled={props.disabled}
        size={props.compact ? 'compact-sm' : 'sm'}
        onClick={() => {
          action.reset();
          setOpen(true);
        }}
      >
        {props.label}
      </Button>
      <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened={open} onClose={() => setOpen(false)} title={props.title} centered>
        <Stack>
          <Text size="sm">{props.consequence}</Text>
          {props.children}
          <ErrorText error={action.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button color={props.color} loading={action.busy} onClick={confirm}>
              {props.confirmLabel ?? props.label}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}
