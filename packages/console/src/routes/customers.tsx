import { Stack, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { key } from '../api/queries';
import { DateTime } from '../components/display';
import { RecordTable } from '../components/record-table';

export default function Customers() {
  const { slug = '' } = useParams();
  const [text, setText] = useState('');
  const [q] = useDebouncedValue(text.trim(), 250);
  const customers = useQuery({
    queryKey: key('customers', { q }),
    queryFn: () => unwrap(api().GET('/customers', { params: { query: q ? { q } : {} } })),
    placeholderData: keepPreviousData,
  });
  return (
    <Stack>
      <Title order={1}>Customers</Title>
      <TextInput label="Search customers" placeholder="Name or email" value={text} onChange={(e) => setText(e.currentTarget.value)} maw={420} />
      <RecordTable
        error={customers.error}
        label="Customers"
        rows={customers.data}
        rowKey={(c) => c.id}
        empty="No customer matches."
        columns={[
          ['Name', (c) => <Link to={`/o/${slug}/licences?q=${encodeURIComponent(c.email ?? c.name)}`}>{c.name}</Link>],
          ['Email', (c) => c.email ?? '—'],
          ['Licences', (c) => c.licenseCount.toLocaleString()],
          ['Created', (c) => <DateTime value={c.createdAt} withTime={false} />],
        ]}
      />
    </Stack>
  );
}
