import { Button, Group, Modal, Stack } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import type { Action } from '../api/action';
import { ErrorText } from './feedback';

/**
 * What a form finds wrong before sending, field by field: each message shows beside its field
 * once the person has tried to submit, and nothing is sent while any remains.
 */
export function useProblems<F extends string>(problems: Partial<Record<F, string | false | null | undefined>>) {
  const [tried, setTried] = useState(false);
  return {
    /** The message for a field's `error`, once submitting was tried. */
    of: (field: F): string | undefined => {
      const problem = problems[field];
      return tried && typeof problem === 'string' ? problem : undefined;
    },
    /** Marks the form as tried: whether it may be sent. */
    check: () => {
      setTried(true);
      return !Object.values(problems).some(Boolean);
    },
    /** A form sent and emptied for the next one starts untried. */
    reset: () => setTried(false),
  };
}

/** Why a typed email address is not one (empty is for the field's own rule), or false. */
export const notEmail = (text: string) => text.trim() !== '' && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text.trim()) && 'An email address, such as it@example.com';

/**
 * Every dialog with a form: its fields, the refusal where it happened, Cancel and the submit
 * button. `onSubmit` sends; the dialog closes when it answers done (a truthy value), unless it
 * `stayOpen`s to show `done` instead of the form.
 */
export function ModalForm(props: {
  title: string;
  submit: string;
  size?: string;
  fullScreen?: boolean;
  opened?: boolean;
  onClose: () => void;
  action: Pick<Action<never, unknown>, 'busy' | 'error'>;
  /** What did not happen, over a refusal ("Not activated"). */
  failed?: string;
  onSubmit: () => Promise<unknown> | false;
  disabled?: boolean;
  /** What the dialog shows once done, instead of the form (a secret shown once); it then stays open. */
  done?: ReactNode;
  stayOpen?: boolean;
  children: ReactNode;
}) {
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if ((await props.onSubmit()) && !props.stayOpen) props.onClose();
  };
  return (
    <Modal
      closeButtonProps={{ 'aria-label': 'Close' }}
      opened={props.opened ?? true}
      onClose={props.onClose}
      title={props.title}
      size={props.size ?? 'lg'}
      fullScreen={props.fullScreen}
    >
      {props.done ?? (
        // The form's own checks speak beside each field, not the browser's bubbles.
        <form onSubmit={submit} aria-label={props.title} noValidate>
          <Stack>
            {props.children}
            <ErrorText error={props.action.error} title={props.failed} />
            <Group justify="flex-end">
              <Button variant="default" onClick={props.onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={props.action.busy} disabled={props.disabled}>
                {props.submit}
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
