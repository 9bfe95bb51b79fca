import { Textarea, TextInput } from '@mantine/core';
import { useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { useSaveCustomer, type Customer } from '../api/customers';
import { ModalForm, notEmail, useProblems } from './modal-form';

/** Creates a customer (then opens their page) or edits one. */
export function CustomerForm({ customer, onClose }: { customer?: Customer; onClose: () => void }) {
  const { slug = '' } = useParams();
  const navigate = useNavigate();
  const save = useSaveCustomer(customer?.id);
  const [name, setName] = useState(customer?.name ?? '');
  const [email, setEmail] = useState(customer?.email ?? '');
  const [notes, setNotes] = useState(customer?.notes ?? '');
  const problems = useProblems({ name: !name.trim() && 'Enter the customer’s name', email: notEmail(email) });
  const submit = async () => {
    if (!problems.check()) return false;
    const saved = await save.run({ name: name.trim(), email: email.trim() || null, notes: notes.trim() || null });
    if (saved && !customer) navigate(`/o/${slug}/customers/${saved.value.id}`);
    return saved;
  };
  return (
    <ModalForm
      title={customer ? `Edit ${customer.name}` : 'New customer'}
      submit={customer ? 'Save changes' : 'Create customer'}
      size="md"
      onClose={onClose}
      action={save}
      onSubmit={submit}
    >
      <TextInput
        label="Name"
        required
        maxLength={200}
        value={name}
        onChange={(e) => setName(e.currentTarget.value)}
        error={problems.of('name')}
        data-autofocus
      />
      <TextInput label="Email" type="email" maxLength={254} value={email} onChange={(e) => setEmail(e.currentTarget.value)} error={problems.of('email')} />
      <Textarea label="Notes" autosize minRows={2} maxLength={10000} value={notes} onChange={(e) => setNotes(e.currentTarget.value)} />
    </ModalForm>
  );
}
