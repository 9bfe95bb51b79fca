import { Anchor, Button, Group, Stack, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useCustomers } from '../api/customers';
import { useCanWrite } from '../api/session';
import { CustomerForm } from '../components/customer-form';
import { DateTime } from '../components/display';
import { Guarded } from '../components/feedback';
import { RecordTable } from '../components/record-table';

export default function Customers() {
  const { slug = '' } = useParams();
  const write = useCanWrite();
  const [creating, setCreating] = useState(false);
  const [text, setText] = useState('');
  const [q] = useDebouncedValue(text.trim(), 250);
  const customers = useCustomers(q);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Customers</Title>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Button onClick={() => setCreating(true)} disabled={disabled}>
              New customer
            </Button>
          )}
        </Guarded>
      </Group>
      <TextInput label="Search customers" placeholder="Name or email" value={text} onChange={(e) => setText(e.currentTarget.value)} maw={420} />
      <RecordTable
        error={customers.error}
        label="Customers"
        rows={customers.data}
        rowKey={(c) => c.id}
        empty={q ? 'No customer matches.' : 'No customer yet: they are created when you issue a licence, or here.'}
        columns={[
          [
            'Name',
            (c) => (
              <Anchor component={Link} to={`/o/${slug}/customers/${c.id}`} fw={500}>
                {c.name}
              </Anchor>
            ),
          ],
          ['Email', (c) => c.email ?? '—'],
          ['Licences', (c) => c.licenseCount.toLocaleString()],
          ['Created', (c) => <DateTime value={c.createdAt} withTime={false} />],
        ]}
      />
      {creating && <CustomerForm onClose={() => setCreating(false)} />}
    </Stack>
  );
}
