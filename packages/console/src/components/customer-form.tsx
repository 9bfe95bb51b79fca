import { Textarea, TextInput } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { api, unwrap, type Answer } from '../api/client';
import { key } from '../api/queries';
import { ModalForm } from './modal-form';

export type Customer = Answer<'/customers/{id}', 'get'>;

/** Creates a customer (then opens their page) or edits one. */
export function CustomerForm({ customer, onClose }: { customer?: Customer; onClose: () => void }) {
  const { slug = '' } = useParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [name, setName] = useState(customer?.name ?? '');
  const [email, setEmail] = useState(customer?.email ?? '');
  const [notes, setNotes] = useState(customer?.notes ?? '');
  const work = async () => {
    const body = { name: name.trim(), email: email.trim() || null, notes: notes.trim() || null };
    const saved = customer
      ? await unwrap(api().PUT('/customers/{id}', { params: { path: { id: customer.id } }, body }))
      : await unwrap(api().POST('/customers', { body }));
    await queryClient.invalidateQueries({ queryKey: key('customers') });
    if (!customer) navigate(`/o/${slug}/customers/${saved.id}`);
  };
  return (
    <ModalForm title={customer ? `Edit ${customer.name}` : 'New customer'} submit={customer ? 'Save changes' : 'Create customer'} size="md" onClose={onClose} work={work}>
      <TextInput label="Name" required maxLength={200} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
      <TextInput label="Email" type="email" maxLength={254} value={email} onChange={(e) => setEmail(e.currentTarget.value)} />
      <Textarea label="Notes" autosize minRows={2} maxLength={10000} value={notes} onChange={(e) => setNotes(e.currentTarget.value)} />
    </ModalForm>
  );
}
