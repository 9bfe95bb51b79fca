import { Alert, Button, Center, Group, Loader, Modal, Stack, Text, Tooltip } from '@mantine/core';
import { useState, type ReactNode } from 'react';

/** The one way an API failure is shown: the service's own `error` text, where it happened. */
export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <Alert color="red" variant="light" role="alert" title="The service said">
      {error instanceof Error ? error.message : String(error)}
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
  onConfirm: () => Promise<unknown>;
  children?: ReactNode;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await props.onConfirm();
      setOpen(false);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button variant="light" color={props.color} disabled={props.disabled} size={props.compact ? 'compact-sm' : 'sm'} onClick={() => setOpen(true)}>
        {props.label}
      </Button>
      <Modal closeButtonProps={{ "aria-label": "Close" }} opened={open} onClose={() => setOpen(false)} title={props.title} centered>
        <Stack>
          <Text size="sm">{props.consequence}</Text>
          {props.children}
          <ErrorText error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button color={props.color} loading={busy} onClick={confirm}>
              {props.confirmLabel ?? props.label}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}
