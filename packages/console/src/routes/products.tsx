import { Badge, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { key } from '../api/queries';
import { DateTime } from '../components/display';
import { RecordTable } from '../components/record-table';

export default function Products() {
  const products = useQuery({ queryKey: key('products'), queryFn: () => unwrap(api().GET('/products')) });
  return (
    <Stack>
      <Title order={1}>Products</Title>
      <RecordTable
        error={products.error}
        label="Products"
        rows={products.data}
        rowKey={(p) => p.id}
        empty="No product yet."
        minWidth={820}
        columns={[
          ['Product', (p) => (<><Text fw={500}>{p.name}</Text><Text size="xs" c="dimmed">{p.productKey}</Text></>)],
          ['Algorithm', (p) => p.algorithmLabel],
          ['Type', (p) => p.licenceType],
          ['Key', (p) => <Badge color={p.keyState === 'OK' ? 'green' : 'red'} variant="dot">{p.keyState ?? '—'}</Badge>],
          ['Certificate expires', (p) => <DateTime value={p.certificateExpiresAt} withTime={false} />],
          ['Licences', (p) => p.licenseCount.toLocaleString()],
          ['Check token', (p) => (p.checkTokenSet ? 'set' : <Text span c="dimmed">not set</Text>)],
        ]}
      />
    </Stack>
  );
}
