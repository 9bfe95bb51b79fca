import { Button, Group, Modal, Stack, Textarea, TextInput } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { api, unwrap, type Answer } from '../api/client';
import { key } from '../api/queries';
import { ErrorText } from './feedback';

export type Customer = Answer<'/customers/{id}', 'get'>;

/** Creates a customer (then opens their page) or edits one. */
export function CustomerForm({ customer, onClose }: { customer?: Customer; onClose: () => void }) {
  const { slug = '' } = useParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [name, setName] = useState(customer?.name ?? '');
  const [email, setEmail] = useState(customer?.email ?? '');
  const [notes, setNotes] = useState(customer?.notes ?? '');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const body = { name: name.trim(), email: email.trim() || null, notes: notes.trim() || null };
    try {
      const saved = customer
        ? await unwrap(api().PUT('/customers/{id}', { params: { path: { id: customer.id } }, body }))
        : await unwrap(api().POST('/customers', { body }));
      await queryClient.invalidateQueries({ queryKey: key('customers') });
      onClose();
      if (!customer) navigate(`/o/${slug}/customers/${saved.id}`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened onClose={onClose} title={customer ? `Edit ${customer.name}` : 'New customer'}>
      <form onSubmit={submit} aria-label={customer ? 'Edit customer' : 'New customer'}>
        <Stack>
          <TextInput label="Name" required maxLength={200} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
          <TextInput label="Email" type="email" maxLength={254} value={email} onChange={(e) => setEmail(e.currentTarget.value)} />
          <Textarea label="Notes" autosize minRows={2} maxLength={10000} value={notes} onChange={(e) => setNotes(e.currentTarget.value)} />
          <ErrorText error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={busy}>
              {customer ? 'Save changes' : 'Create customer'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
