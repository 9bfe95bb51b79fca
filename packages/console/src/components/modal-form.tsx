import { Button, Group, Modal, Stack } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import { ErrorText } from './feedback';

/** A form in a modal whose submit runs `work`, showing the API's error where it happened. */
export function ModalForm(props: { title: string; submit: string; size?: string; onClose: () => void; work: () => Promise<unknown>; children: ReactNode }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await props.work();
      props.onClose();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened onClose={props.onClose} title={props.title} size={props.size ?? 'lg'}>
      <form onSubmit={submit} aria-label={props.title}>
        <Stack>
          {props.children}
          <ErrorText error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={props.onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={busy}>
              {props.submit}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
